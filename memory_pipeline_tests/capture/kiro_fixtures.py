"""Build Kiro CLI stores the way the agent writes them, from the fixtures in data/kiro_cli/.

The SQLite database is created with the agent's own migrations (store/schema_*.sql) and the
conversation values inserted with the agent's own statement (`INSERT OR REPLACE`, as
`Database::set_json_entry` does); Kiro CLI's store runs in WAL mode (its data directory holds
`data.sqlite3-wal` and `-shm` next to the database), Amazon Q's in the default rollback journal.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

DATA = Path(__file__).parent / "data" / "kiro_cli"
STORE = DATA / "store"
KIRO_HOME = DATA / "kiro_home"


def value(name: str) -> dict:
    return json.loads((STORE / name).read_text())


def create_store(
    db: Path, generation: str = "kiro_cli", wal: bool | None = None
) -> sqlite3.Connection:
    """An empty store of `generation` ("amazon_q" or "kiro_cli"); the connection stays open."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    if wal if wal is not None else generation == "kiro_cli":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript((STORE / "schema_amazon_q.sql").read_text())
    if generation == "kiro_cli":
        conn.executescript((STORE / "schema_kiro_cli.sql").read_text())
    return conn


def put(conn: sqlite3.Connection, row: dict, conv: dict | None = None) -> None:
    text = json.dumps(conv if conv is not None else value(row["value"]))
    if row["table"] == "conversations":
        conn.execute(
            "INSERT OR REPLACE INTO conversations (key, value) VALUES (?, ?)", (row["key"], text)
        )
    else:
        conn.execute(
            "INSERT OR REPLACE INTO conversations_v2 (key, conversation_id, value, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?)",
            (
                row["key"],
                json.loads(text)["conversation_id"],
                text,
                row["created_at"],
                row["updated_at"],
            ),
        )


def build_store(db: Path, generation: str = "kiro_cli") -> Path:
    rows = json.loads((STORE / "rows.json").read_text())[generation]
    conn = create_store(db, generation)
    for row in rows:
        put(conn, row)
    conn.close()
    return db


def kiro_home(target: Path) -> Path:
    """A copy of the fixture ~/.kiro (sessions/cli + .cli_bash_history)."""
    shutil.copytree(KIRO_HOME, target)
    return target
