"""Reading Kiro CLI's (and Amazon Q Developer CLI's) `data.sqlite3` without locking the agent out.

Two table generations hold conversations (aws/amazon-q-developer-cli
`crates/chat-cli/src/database/sqlite_migrations/007_conversations_table.sql`, "Chat persistence
by directory", #1767, 2025-05-12; Kiro CLI's `conversations_v2` as documented by its readers):

* `conversations(key TEXT PRIMARY KEY, value TEXT)`: key = the directory the chat ran in, one
  conversation per directory (a new chat there replaces the row), value = ConversationState;
* `conversations_v2(key TEXT, conversation_id TEXT, value TEXT, created_at INTEGER,
  updated_at INTEGER, PRIMARY KEY (key, conversation_id))`: every conversation of a directory,
  times in unix ms (Kiro CLI, agent engine v1).

Only these two tables are read. `auth_kv` (SSO tokens) and `state` (telemetry ids, profile
ARN) are never queried.

The database is opened with a `file:...?mode=ro` URI (never `immutable=1`: the agent writes it
while we read, and its WAL file must be honoured), read in one read transaction (a consistent
snapshot while the agent keeps writing), with a short busy timeout. A reader in WAL mode never
blocks the writer; a store that is locked for longer than the timeout is recorded as
`store_busy` and read again on the next look. The database's version for change detection is
the database file plus its `-wal` file (a commit in WAL mode changes only the `-wal` until a
checkpoint).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.capture.codex.fields import exception_detail
from memory_pipeline.capture.kiro_cli.common import issue
from memory_pipeline.capture.models import ParseIssue
from memory_pipeline.capture.sqlite_store import connect_ro, wal_state_paths
from memory_pipeline.tuning import KIRO_DOCUMENT_MAX_BYTES, KIRO_SQLITE_TIMEOUT_S

DB_NAME = "data.sqlite3"
TABLES = ("conversations_v2", "conversations")


@dataclass
class Row:
    table: str
    key: str | None  # the directory the conversation ran in
    conversation_id: str | None  # conversations_v2 only
    value: str | bytes | None
    created_at: int | None  # ms, conversations_v2 only
    updated_at: int | None
    rowid: int


state_paths = wal_state_paths  # the database and its WAL


def connect(db: Path) -> sqlite3.Connection:
    return connect_ro(db.resolve(), KIRO_SQLITE_TIMEOUT_S)


def read_rows(db: Path) -> tuple[list[Row], list[ParseIssue]]:
    """Every conversation row of both tables, read in one snapshot (never raises)."""
    rows: list[Row] = []
    try:
        conn = connect(db)
    except (sqlite3.Error, OSError, ValueError) as exc:
        return [], [issue(db, "unreadable", exception_detail(exc))]
    try:
        conn.execute("BEGIN")
        names = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        }
        if not names & set(TABLES):
            return [], [issue(db, "not_a_transcript", "no conversations table")]
        for table in TABLES:
            if table in names:
                rows += list(_rows(conn, table))
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        reason = "store_busy" if "locked" in text or "busy" in text else "unreadable"
        return [], [issue(db, reason, exception_detail(exc))]
    except sqlite3.DatabaseError as exc:  # not a database, malformed pages
        return [], [issue(db, "unreadable", exception_detail(exc))]
    finally:
        conn.close()
    return rows, []


def _rows(conn: sqlite3.Connection, table: str) -> Iterator[Row]:
    columns = {r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()}
    if not {"key", "value"} <= columns:
        return
    wanted = ["key", "value"]
    wanted += [c for c in ("conversation_id", "created_at", "updated_at") if c in columns]
    # The value is read only when it is not oversized (length() does not load a TEXT twice).
    select = ", ".join(
        f"CASE WHEN length(value) <= {KIRO_DOCUMENT_MAX_BYTES} THEN value END, length(value)"
        if c == "value"
        else c
        for c in wanted
    )
    cursor = conn.execute(f"SELECT rowid, {select} FROM {table} ORDER BY rowid")
    for raw in cursor:
        got = dict(zip(["rowid", "key", "value", "value_length", *wanted[2:]], raw, strict=True))
        value = got["value"]
        if value is None and got["value_length"]:
            value = b""  # oversized: the caller records it
        yield Row(
            table=table,
            key=got["key"] if isinstance(got["key"], str) else None,
            conversation_id=_text(got.get("conversation_id")),
            value=value,
            created_at=_int(got.get("created_at")),
            updated_at=_int(got.get("updated_at")),
            rowid=int(got["rowid"]),
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def start_days(db: Path) -> list[int | None]:
    """Cheap peek for task_days: conversations_v2.created_at of each row (no JSON parse)."""
    try:
        conn = connect(db)
    except (sqlite3.Error, OSError, ValueError):
        return []
    try:
        names = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        }
        if "conversations_v2" not in names:
            return []
        columns = {r[1] for r in conn.execute("PRAGMA table_info(conversations_v2)").fetchall()}
        if "created_at" not in columns:
            return []
        return [_int(r[0]) for r in conn.execute("SELECT created_at FROM conversations_v2")]
    except sqlite3.Error:
        return []
    finally:
        conn.close()
