"""A thread's name: the state DB, the session index, the rollout's own rename events.

Order (notes §1.1 session_index, §1.6 thread_name_updated, §1.8 state DB): `threads.name` >
`session_index.jsonl` (last valid entry) > legacy `threads.title` > `thread_name_updated`. Both
outside files are optional and read defensively: a broken one costs the title, never the task.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memory_pipeline.capture.codex.fields import exception_detail, from_ms, parse_time
from memory_pipeline.capture.codex.records import iter_records
from memory_pipeline.capture.codex.text import is_prompt_copy
from memory_pipeline.capture.jsonl import JsonlRead
from memory_pipeline.capture.models import ParseIssue, TaskTitle
from memory_pipeline.capture.sqlite_store import connect_ro

STATE_DB = "state_5.sqlite"
SESSION_INDEX = "session_index.jsonl"


@dataclass(frozen=True)
class IndexEntry:
    name: str | None
    updated_at: datetime | None


class SessionIndex:
    """`session_index.jsonl` of one CODEX_HOME, append-only, re-read only when its stat changes."""

    def __init__(self, codex_home: Path) -> None:
        self.path = codex_home / SESSION_INDEX
        self._cache: tuple[tuple[int, int, int], dict[str, IndexEntry]] | None = None

    def mtime_ns(self) -> int | None:
        try:
            return self.path.stat().st_mtime_ns
        except OSError:
            return None

    def entries(self) -> dict[str, IndexEntry]:
        """Last valid entry per thread id wins."""
        try:
            st = self.path.stat()
        except OSError:
            return {}
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        entries: dict[str, IndexEntry] = {}
        # Malformed lines are skipped without a ParseIssue: they belong to the index, not to the
        # rollout being parsed, and would be repeated for every thread.
        for _line, obj in iter_records(self.path, JsonlRead(self.path)):
            thread = obj.get("id")
            name = obj.get("thread_name", "<missing>")
            if not isinstance(thread, str) or not (name is None or isinstance(name, str)):
                continue
            # A null/empty name is a valid "cleared" entry: later entries win either way.
            entries[thread] = IndexEntry(
                name=(name or "").strip() or None, updated_at=parse_time(obj.get("updated_at"))
            )
        self._cache = (key, entries)
        return entries


def resolve_title(
    codex_home: Path,
    index: SessionIndex,
    thread_id: str,
    name_event: tuple[str | None, datetime | None] | None,
    first_prompt: str | None,
) -> tuple[TaskTitle | None, list[ParseIssue]]:
    """threads.name > session_index (last valid entry) > threads.title > thread_name_updated.

    Legacy `threads.title` is skipped when it is only Codex's copy of the first prompt (§1.8:
    "title is taken from the first user_message unless a name was set"): deriving a title from
    the first prompt is the store's job, the connector reports native names only.
    """
    row, issues = read_state_row(codex_home / STATE_DB, thread_id)
    if row is not None and row.name:
        return TaskTitle(
            text=row.name, source="codex:threads.name", observed_at=row.updated_at
        ), issues
    entry = index.entries().get(thread_id)
    if entry is not None and entry.name:
        return TaskTitle(
            text=entry.name, source="codex:session_index", observed_at=entry.updated_at
        ), issues
    if (
        row is not None
        and row.title
        and not is_prompt_copy(row.title, [row.first_user_message, first_prompt])
    ):
        return TaskTitle(
            text=row.title, source="codex:threads.title", observed_at=row.updated_at
        ), issues
    if name_event is not None and name_event[0]:
        name, observed = name_event
        title = TaskTitle(text=name, source="codex:thread_name_updated", observed_at=observed)
        return title, issues
    return None, issues


# --- state DB (notes §1.8): read-only, optional, schema varies by version -----------------------


@dataclass(frozen=True)
class StateRow:
    name: str | None
    title: str | None
    first_user_message: str | None
    updated_at: datetime | None


def read_state_row(db: Path, thread_id: str) -> tuple[StateRow | None, list[ParseIssue]]:
    if not db.is_file():
        return None, []
    try:
        conn = connect_ro(db.resolve(), 1.0)
    except (sqlite3.Error, OSError, ValueError) as exc:
        return None, [_db_issue(db, exc)]
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(threads)")}
        if "id" not in columns:
            return None, []  # no threads table (or not this schema): nothing to read
        wanted = [
            c
            for c in ("name", "title", "first_user_message", "updated_at", "updated_at_ms")
            if c in columns
        ]
        if not wanted:
            return None, []
        quoted = ", ".join(f'"{c}"' for c in wanted)
        row = conn.execute(f"SELECT {quoted} FROM threads WHERE id = ?", (thread_id,)).fetchone()
        if row is None:
            return None, []
        values = dict(zip(wanted, row, strict=True))
    except (sqlite3.Error, ValueError, OverflowError) as exc:  # ValueError: undecodable text
        return None, [_db_issue(db, exc)]
    finally:
        conn.close()

    def text(key: str) -> str | None:
        value = values.get(key)
        return value.strip() or None if isinstance(value, str) else None

    updated = from_ms(values.get("updated_at_ms")) or parse_time(values.get("updated_at"))
    return StateRow(
        name=text("name"),
        title=text("title"),
        first_user_message=text("first_user_message"),
        updated_at=updated,
    ), []


def _db_issue(db: Path, exc: BaseException) -> ParseIssue:
    return ParseIssue(path=str(db), reason="state_db_unreadable", detail=exception_detail(exc))
