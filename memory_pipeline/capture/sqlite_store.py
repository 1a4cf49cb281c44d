"""Opening an agent's SQLite store read-only while the agent keeps writing it (one place for all).

Kiro CLI's `data.sqlite3`, OpenCode's `opencode.db`, Cursor's `state.vscdb` and Codex's state
database are written by their agents while capture reads them, most in WAL mode. Every connector
opens them through `connect_ro`:

* a `file:` URI with `mode=ro` (`ro_uri`): never creates the file, never writes, never takes a
  write lock; a reader in WAL mode never blocks the agent's writer (nor it us);
* never `immutable=1` unless the caller asks (Cursor does, only for a store with no `-wal` that
  cannot otherwise be opened): with a `-wal` it would skip the WAL and read stale or torn pages;
* `isolation_level=None`: the caller issues `BEGIN` itself, so everything one parse reads is one
  read transaction, a consistent snapshot while the agent commits;
* `PRAGMA query_only` (unless the caller says not): a bug of ours cannot write either;
* a short busy timeout (the caller's tuning constant): a store locked longer is recorded as a
  momentary skip by the connector and read again on the next look.

`wal_state_paths(db)` is a store's version for change detection (`StateOutsideTranscripts`): the
database and its `-wal` (a commit in WAL mode changes only the `-wal` until a checkpoint).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote


def ro_uri(path: Path, *, immutable: bool = False) -> str:
    """The read-only `file:` URI of `path` as given (resolve or absolute it first)."""
    query = "mode=ro&immutable=1" if immutable else "mode=ro"
    return f"file:{quote(os.fsencode(path))}?{query}"


def connect_ro(
    path: Path,
    timeout: float,
    *,
    immutable: bool = False,
    query_only: bool = True,
    check_same_thread: bool = True,
) -> sqlite3.Connection:
    """A read-only connection to the SQLite database at `path` (see the module text); raises
    sqlite3.Error (or OSError/ValueError for a path that cannot be named) like sqlite3.connect."""
    conn = sqlite3.connect(
        ro_uri(path, immutable=immutable),
        uri=True,
        timeout=timeout,
        isolation_level=None,
        check_same_thread=check_same_thread,
    )
    if query_only:
        conn.execute("PRAGMA query_only = ON")
    return conn


def wal_state_paths(db: Path) -> list[Path]:
    """The files whose stat makes up a WAL store's version: the database and its `-wal`."""
    return [db, db.with_name(db.name + "-wal")]
