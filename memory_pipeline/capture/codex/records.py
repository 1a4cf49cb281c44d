"""Raw rollout lines before normalising: the guarded read, session metas, the start rule.

`task_days()` (called by the sensor and `memory-pipeline run` before any job) and `parse()` both
read through `iter_records` and decide a thread's start with `ThreadStart`, so they always agree
and neither can be stopped by one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import UUID_RE, parse_time
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl


def iter_records(path: Path, read: JsonlRead) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_jsonl`, except that an exception escaping the reader ends the file as a recorded
    `unreadable_rest` issue instead of failing the run; every record before it is used.

    The shared reader turns bad lines into issues itself; this is the guard for what it does not
    catch (a decoder error it does not expect), so the connector never depends on it.
    """
    last = 0
    try:
        for line, obj in iter_jsonl(path, read):
            last = line
            yield line, obj
    except Exception as exc:
        at = max([last, *(i.line for i in read.issues if i.line is not None)]) + 1
        read.issue(
            "unreadable_rest",
            f"{type(exc).__name__} while reading; line {at} and the rest of the file skipped",
            at,
        )


def meta_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The session meta of a line: an envelope `session_meta` payload, or the legacy first line
    `{id, timestamp, instructions[, git, cwd, originator, cli_version]}` (notes §1.1)."""
    if obj.get("type") == "session_meta":
        payload = obj.get("payload")
        return payload if isinstance(payload, dict) else None
    if "type" not in obj and "record_type" not in obj and "id" in obj and "timestamp" in obj:
        return obj
    return None


def meta_id(meta: dict[str, Any]) -> str | None:
    """A meta's thread id, lower-cased; an id that is not a non-empty string reads as absent."""
    value = meta.get("id")
    return value.lower() if isinstance(value, str) and value else None


def start_time_of_line(obj: dict[str, Any], thread_id: str | None) -> datetime | None:
    """The task start this line determines, if any.

    Rule (the first line that yields a time decides): the thread's own session meta gives its
    `timestamp` (session start); a copied parent meta of a fork gives only its line timestamp
    (the copy time, not the parent's start); any other line gives its line timestamp.
    """
    meta = meta_of(obj)
    line_ts = parse_time(obj.get("timestamp")) if meta is not obj else None
    if meta is not None:
        own_id = meta_id(meta)
        if thread_id is None or own_id is None or own_id == thread_id:
            return parse_time(meta.get("timestamp")) or line_ts
    return line_ts


class ThreadStart:
    """The thread's id and start time as lines go by (the one rule for task_days and parse).

    The id is the file name's uuid; a rollout named without one takes the first meta's id when
    it is a uuid, as every Codex thread id is (anything else would become a task identity).
    """

    def __init__(self, thread_id: str | None) -> None:
        self.thread_id = thread_id
        self.started_at: datetime | None = None

    def observe(self, obj: dict[str, Any]) -> None:
        if self.started_at is None:
            self.started_at = start_time_of_line(obj, self.thread_id)
        if self.thread_id is None:
            meta = meta_of(obj)
            found = meta_id(meta) if meta is not None else None
            if found is not None and UUID_RE.fullmatch(found):
                self.thread_id = found
