"""Writing Cursor stores the way Cursor writes them, for tests, fuzzing and the demo corpus.

`state.vscdb` is VS Code's key-value SQLite store; Cursor creates both tables in the global and
the workspace databases with exactly this DDL (michaeldhood/chatrxiv docs/cursor/
storage-reference.md, `sqlite_master` dump of a real store, Cursor 2.x, 2025-12) and keeps it in
WAL mode (Callum-Ward/cursaves docs, "SQLite Details"). Values are UTF-8 JSON in a BLOB column.

A fixture is a JSON file `{"ItemTable": {key: value}, "cursorDiskKV": {key: value}}`; a value
that is a JSON string is written as those bytes verbatim (so a broken record can be a fixture),
any other value as its compact JSON.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

DDL = (
    "CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
    "CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
)


def encode(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def write_vscdb(path: Path, tables: dict[str, dict[str, Any]], wal: bool = True) -> Path:
    """Create (or add to) a `state.vscdb` holding `tables`; WAL mode like Cursor's own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"PRAGMA journal_mode={'WAL' if wal else 'DELETE'}")
        for ddl in DDL:
            conn.execute(ddl)
        for table, rows in tables.items():
            conn.executemany(
                f"INSERT INTO {table} (key, value) VALUES (?, ?)",
                [(key, encode(value)) for key, value in rows.items()],
            )
        conn.commit()
    finally:
        conn.close()
    return path


def load_fixture(name: str) -> dict[str, dict[str, Any]]:
    path = Path(__file__).resolve().parent.parent / "capture" / "data" / "cursor" / name
    return json.loads(path.read_text(encoding="utf-8"))


def write_chat_meta(
    data_dir: Path, workspace_hash: str, chat_id: str, meta: dict[str, Any]
) -> Path:
    """`<data dir>/chats/<md5 of cwd>/<id>/store.db` as `cursor-agent` keeps it: tables `meta`
    (key '0' = hex-encoded JSON) and `blobs` (the message tree, not read by the connector)."""
    db = data_dir / "chats" / workspace_hash / chat_id / "store.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, data BLOB)")
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        hexed = json.dumps(meta, separators=(",", ":")).encode("utf-8").hex()
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('0', ?)", [hexed])
        conn.commit()
    finally:
        conn.close()
    return db


def put(db: Path, key: str, value: Any) -> None:
    """Insert `key` -> `value` (encoded as Cursor stores it) into the store's cursorDiskKV, as
    Cursor does while it runs (the tests' "Cursor wrote more")."""
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO cursorDiskKV (key, value) VALUES (?, ?)", [key, encode(value)])
    conn.commit()
    conn.close()


def get(db: Path, key: str) -> dict:
    """The JSON value of `key` in the store's cursorDiskKV (it must be there)."""
    conn = sqlite3.connect(db)
    row = conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", [key]).fetchone()
    conn.close()
    return json.loads(row[0])
