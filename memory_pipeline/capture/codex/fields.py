"""Typed reads of native Codex values: thread and turn ids, times, bounded JSON.

Every reader here is total: a value of the wrong type or out of range gives None (or a bounded
copy), never an exception, because one hostile field must not cost a whole session. Callers that
must record what they dropped check for "present but unusable" themselves.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.tuning import AGENT_PLAUSIBLE_YEARS, CAPTURE_JSON_MAX_DEPTH

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_UUID7_RE = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.I
)
_TOO_DEEP = "[nested too deep]"


def string(value: Any) -> str | None:
    """`value` if it is a string, else None (a wrong type reads as absent)."""
    return value if isinstance(value, str) else None


def integer(value: Any) -> int | None:
    """`value` if it is a JSON integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def uuid_from_name(path: Path) -> str | None:
    """The thread uuid in `rollout-<time>-<uuid>.jsonl` (the last uuid in the name)."""
    found = UUID_RE.findall(path.name)
    return found[-1].lower() if found else None


def uuid7_ms(value: Any) -> int | None:
    """Unix ms embedded in a UUIDv7 (thread and turn ids are v7 in 2026 builds)."""
    if not isinstance(value, str) or not _UUID7_RE.match(value):
        return None
    return int(value[0:8] + value[9:13], 16)


def uuid7_time(value: Any) -> datetime | None:
    return from_ms(uuid7_ms(value))


def _plausible(value: datetime) -> datetime | None:
    first, last = AGENT_PLAUSIBLE_YEARS
    return value if first <= value.year <= last else None


def parse_time(value: Any) -> datetime | None:
    """RFC 3339 string (Z or offset; naive means UTC) or unix seconds/ms number -> aware UTC.

    None for anything else, including times datetime cannot hold once converted to UTC
    (`0001-01-01T00:00:00+01:00`, `9999-12-31T23:59:59-14:00`, 10**20 ms) and times outside
    AGENT_PLAUSIBLE_YEARS, which no partition would ever hold.
    """
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            return _plausible(datetime.fromtimestamp(seconds, tz=UTC))
        if isinstance(value, str) and value.strip():
            parsed = datetime.fromisoformat(value.strip())
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return _plausible(parsed.astimezone(UTC))
    except (ValueError, OverflowError, OSError):
        return None
    return None


def from_ms(value: Any) -> datetime | None:
    """Unix milliseconds -> aware UTC (None for anything else or out of range)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return _plausible(datetime.fromtimestamp(value / 1000, tz=UTC))
    except (ValueError, OverflowError, OSError):
        return None


def ms(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def describe(value: Any) -> str:
    """A short, always-safe description of a native value for an issue's detail."""
    if isinstance(value, str):
        return repr(value[:40] + ("…" if len(value) > 40 else ""))
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**30 else "a very large integer"
    if isinstance(value, float):
        return repr(value)
    return f"a JSON {type(value).__name__}"


def bounded(value: Any, depth: int = CAPTURE_JSON_MAX_DEPTH) -> Any:
    """A copy of a JSON value with everything nested deeper than `depth` replaced by a marker.

    Evidence and provenance are kept verbatim, but a hostile meta can nest hundreds of levels
    that json.loads still accepts, past what pydantic's JSON encoder follows (a ParseResult must
    always serialise). The store bounds what it writes with the same depth.
    """
    if isinstance(value, dict):
        if depth <= 0:
            return _TOO_DEEP
        return {str(k): bounded(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth <= 0:
            return _TOO_DEEP
        return [bounded(v, depth - 1) for v in value]
    return value


def exception_detail(exc: BaseException) -> str:
    """`Type: message` of an exception, bounded, for a recorded issue (never raises itself)."""
    try:
        message = str(exc)
    except Exception:  # a message that cannot even be rendered (e.g. a hostile key's repr)
        message = ""
    if len(message) > 160:
        message = message[:160] + "…"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
