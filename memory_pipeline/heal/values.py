"""Rewriting one stored value with a `rewrite: Callable[[str], str]`: a string, a JSON
document's string values (keys and structure kept, so it stays the same kind of document), an
array's elements. Each returns the value unchanged (the same object) when nothing in it changed,
so a caller writes only what changed and a second pass writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

Rewrite = Callable[[str], str]


def rewrite_json(value: Any, rewrite: Rewrite, keep: Collection[str] = ()) -> Any:
    """A parsed JSON value with `rewrite` applied to every string value (not to keys, nor to
    the values of keys in `keep`, at any depth)."""
    if isinstance(value, str):
        new_text = rewrite(value)
        return value if new_text == value else new_text
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        changed = False
        for k, v in value.items():
            new = v if k in keep else rewrite_json(v, rewrite, keep)
            changed = changed or new is not v
            out[k] = new
        return out if changed else value
    if isinstance(value, list):
        items = [rewrite_json(v, rewrite, keep) for v in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


def rewrite_text(value: str | None, rewrite: Rewrite) -> str | None:
    if value is None:
        return None
    new = rewrite(value)
    return value if new == value else new


def rewrite_array(value: list[str | None] | None, rewrite: Rewrite) -> list[str | None] | None:
    if not value:
        return value
    items = [rewrite_text(v, rewrite) for v in value]
    if any(new is not old for new, old in zip(items, value, strict=True)):
        return items
    return value


def rewrite_serialized(text: str, rewrite: Rewrite, keep: Collection[str] = ()) -> str:
    """A text column that may hold serialized JSON (Dagster's records do): its string values
    rewritten and serialized again; any other text rewritten as a whole. Unchanged: `text`."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        else:
            new = rewrite_json(parsed, rewrite, keep)
            return text if new is parsed else json.dumps(new)
    new_text = rewrite(text)
    return text if new_text == text else new_text
