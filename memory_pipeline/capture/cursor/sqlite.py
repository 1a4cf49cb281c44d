"""Reading Cursor's `state.vscdb` without locking Cursor out (FORMAT.md §1).

`state.vscdb` is a VS Code key-value store in SQLite: tables `ItemTable` and `cursorDiskKV`, each
`(key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)`, values UTF-8 JSON. Cursor keeps it open and
writes in WAL mode (`state.vscdb-wal`, `state.vscdb-shm` beside it), so:

* it is opened read-only through a URI (`file:...?mode=ro`): we never write, never take a write
  lock, and a WAL reader never blocks Cursor's writer (nor the writer us);
* `immutable=1` is used only when no `-wal` exists and the read-only open fails (a directory we
  cannot write, so no `-shm` can be made): with a `-wal` it would skip the WAL and read stale or
  torn pages;
* everything one parse reads is read inside one read transaction: a WAL snapshot, so a write by
  Cursor while we read is not seen half (the next look sees the new version: `state_paths`);
* a database that is busy (a rollback-journal store whose writer holds its lock past the
  timeout) is `changed_while_reading`, a moment, read again on the next look.

A store's version for change detection is the database file and its `-wal` together: Cursor's
writes land in the `-wal` and reach the main file only at a checkpoint.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_pipeline.capture.sqlite_store import connect_ro
from memory_pipeline.tuning import CURSOR_SQLITE_TIMEOUT_S

ITEM_TABLE = "ItemTable"
DISK_KV = "cursorDiskKV"
_TABLES = (ITEM_TABLE, DISK_KV)


class StoreUnavailable(Exception):
    """The database could not be read now (busy, vanished, not a database)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def state_paths(path: Path) -> list[Path]:
    """The paths whose stat makes up the store's version: the database and its `-wal` when it
    holds anything. An empty `-wal` is left out: a read-only reader of a WAL database may create
    one (with its `-shm`) when none exists, and reading must not be a change."""
    wal = path.with_name(path.name + "-wal")
    try:
        holds = wal.stat().st_size > 0
    except OSError:
        holds = False
    return [path, wal] if holds else [path]


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection (see the module text); StoreUnavailable when there is none."""
    wal = path.with_name(path.name + "-wal")
    attempts = [False] if wal.exists() else [False, True]
    last: Exception | None = None
    for immutable in attempts:
        try:
            conn = connect_ro(
                path.absolute(),
                CURSOR_SQLITE_TIMEOUT_S,
                immutable=immutable,
                query_only=False,
                check_same_thread=False,
            )
            conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
            return conn
        except sqlite3.Error as exc:
            last = exc
    raise _unavailable(last)


def _unavailable(exc: BaseException | None) -> StoreUnavailable:
    text = " ".join(str(exc).split()) if exc else "cannot open"
    if "locked" in text or "busy" in text:
        return StoreUnavailable("changed_while_reading", f"database busy: {text}"[:500])
    if "not a database" in text or "malformed" in text:
        return StoreUnavailable("not_a_database", text[:500])
    return StoreUnavailable("unreadable", text[:500])


class Snapshot:
    """One read transaction over a store: every query sees the same committed state."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.tables = {
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if row[0] in _TABLES
        }

    def prefix(self, table: str, prefix: str) -> Iterator[tuple[str, bytes | str | None]]:
        """(key, raw value) of every key starting with `prefix`, in key order (index range)."""
        if table not in self.tables:
            return
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        cur = self._conn.execute(
            f"SELECT key, value FROM {table} WHERE key >= ? AND key < ? ORDER BY key",
            [prefix, upper],
        )
        for key, value in cur:
            if isinstance(key, str):
                yield key, value

    def keys(self, table: str, prefix: str) -> Iterator[str]:
        if table not in self.tables:
            return
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        cur = self._conn.execute(
            f"SELECT key FROM {table} WHERE key >= ? AND key < ? ORDER BY key",
            [prefix, upper],
        )
        for (key,) in cur:
            if isinstance(key, str):
                yield key

    def get(self, table: str, key: str) -> bytes | str | None:
        if table not in self.tables:
            return None
        row = self._conn.execute(
            f"SELECT value FROM {table} WHERE key = ?",
            [key],
        ).fetchone()
        return row[0] if row else None


@contextmanager
def snapshot(path: Path) -> Iterator[Snapshot]:
    """A read transaction over `path`; StoreUnavailable when it cannot be read now."""
    conn = connect(path)
    try:
        try:
            conn.execute("BEGIN")
            snap = Snapshot(conn)
        except sqlite3.Error as exc:
            raise _unavailable(exc) from None
        try:
            yield snap
        except sqlite3.Error as exc:
            raise _unavailable(exc) from None
        finally:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error:
                pass
    finally:
        conn.close()


class BadValue(Exception):
    """A value that is not a JSON object: its reason code and a one-line detail."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def decode(raw: bytes | str | None) -> dict[str, Any]:
    """A stored value as a JSON object, or BadValue (`invalid_json`, `too_deep`, `not_an_object`,
    `binary`, `empty_value`)."""
    if raw is None:
        raise BadValue("empty_value", "the value is NULL")
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadValue("binary", f"not UTF-8 at byte {exc.start}") from None
    elif isinstance(raw, str):
        text = raw
    else:
        raise BadValue("not_an_object", f"a {type(raw).__name__} value")
    if not text.strip() or text.strip() == "null":
        raise BadValue("empty_value", "an empty value")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadValue("invalid_json", f"{exc.msg} at {exc.pos}") from None
    except RecursionError:
        raise BadValue("too_deep", "nested too deep") from None
    except ValueError as exc:  # a 4,301-digit number
        raise BadValue("invalid_json", str(exc)[:200]) from None
    if not isinstance(data, dict):
        raise BadValue("not_an_object", f"a JSON {type(data).__name__}")
    return data
