"""Rewriting a stored value keeps its shape: JSON stays the same document with only string
values changed, and a value with nothing to rewrite comes back as the very same object (so
nothing is written, and a second heal writes nothing)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.heal.values import rewrite_json, rewrite_serialized

SECRET = "hunter2SECRET"


def mask(text: str) -> str:
    return text.replace(SECRET, "[X]")


words = st.sampled_from(["plain", "note", SECRET, f"key={SECRET}", "", "ünï", "[X]"])
texts = st.lists(words, max_size=3).map(" ".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


def shape(value: Any) -> Any:
    """The document with every string replaced by a marker: what a rewrite must keep."""
    if isinstance(value, str):
        return "<str>"
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return value


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


@settings(deadline=None)
@given(json_values)
def test_json_keeps_keys_and_structure_and_rewrites_every_string_value(value: Any) -> None:
    new = rewrite_json(value, mask)
    assert shape(new) == shape(value)
    assert all(SECRET not in s for s in strings(new))
    if not any(SECRET in s for s in strings(value)):
        assert new is value  # nothing to rewrite: the same object, nothing written
    assert rewrite_json(new, mask) is new  # a second pass changes nothing


@settings(deadline=None)
@given(json_values)
def test_serialized_json_stays_valid_json_of_the_same_shape(value: Any) -> None:
    text = json.dumps(value)
    new = rewrite_serialized(text, mask)
    assert shape(json.loads(new)) == shape(value)
    assert SECRET not in "".join(strings(json.loads(new)))
    if new == text:
        assert not any(SECRET in s for s in strings(value))


def test_kept_keys_are_left_alone_and_text_that_is_not_json_is_rewritten_whole() -> None:
    doc = {"__class__": SECRET, "run_id": SECRET, "text": SECRET}
    assert rewrite_json(doc, mask, keep={"__class__", "run_id"}) == {
        "__class__": SECRET,
        "run_id": SECRET,
        "text": "[X]",
    }
    assert rewrite_serialized(f"{{not json {SECRET}", mask) == "{not json [X]"
