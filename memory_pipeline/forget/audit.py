"""The forget audit: when, what selector, how many rows per table; never the forgotten content."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import BaseModel

AUDIT_KEY_FILE = "forget-audit.key"


def audit_key(home: Path) -> bytes:
    """The home's secret for keyed hashes: a query in the audit is kept only as its HMAC, and
    so is a turn's source text in its tombstone (tombstones.source_turn_key):
    `MEMORY_HOME/forget-audit.key`, 32 random bytes, created 0600 on first use the way the
    backup key file is (backup/crypto.py), and refused if group or others can read it."""
    from memory_pipeline.backup.crypto import BackupKeyError, load_key
    from memory_pipeline.errors import UserError

    try:
        return load_key(home / AUDIT_KEY_FILE, environ={}).material
    except BackupKeyError as exc:
        raise UserError(str(exc).replace("backup key", "forget audit key")) from None


class AuditEntry(BaseModel):
    id: str
    forgotten_at: datetime
    selector: dict[str, Any]
    counts: dict[str, int]
    memories: int
    turns: int
    tasks: int


def open_entry(conn: psycopg.Connection, selector: dict[str, Any]) -> str:
    row = conn.execute(
        "INSERT INTO forget_audit (selector) VALUES (%s) RETURNING id", [Jsonb(selector)]
    ).fetchone()
    return str(row[0])  # type: ignore[index]


def close_entry(
    conn: psycopg.Connection,
    audit_id: str,
    counts: dict[str, int],
    memories: int,
    turns: int,
    tasks: int,
) -> None:
    conn.execute(
        "UPDATE forget_audit SET counts = %s, memories = %s, turns = %s, tasks = %s WHERE id = %s",
        [Jsonb(dict(sorted(counts.items()))), memories, turns, tasks, audit_id],
    )


def entries(conn: psycopg.Connection, limit: int = 100) -> list[AuditEntry]:
    rows = conn.execute(
        "SELECT id, forgotten_at, selector, counts, memories, turns, tasks FROM forget_audit"
        " ORDER BY forgotten_at DESC LIMIT %s",
        [limit],
    ).fetchall()
    return [
        AuditEntry(
            id=str(r[0]),
            forgotten_at=r[1],
            selector=r[2],
            counts=r[3],
            memories=r[4],
            turns=r[5],
            tasks=r[6],
        )
        for r in rows
    ]


def render(entry: AuditEntry) -> str:
    """One audit entry as lines for the terminal."""
    chosen = ", ".join(f"{k}={_short(v)}" for k, v in entry.selector.items())
    counts = ", ".join(f"{table} {n}" for table, n in entry.counts.items()) or "nothing"
    return (
        f"{entry.forgotten_at.astimezone():%Y-%m-%d %H:%M:%S %z}  {entry.id}\n"
        f"  selected: {chosen}\n"
        f"  forgot {entry.memories} memories, {entry.turns} turns, {entry.tasks} tasks\n"
        f"  rows: {counts}"
    )


def _short(value: Any) -> str:
    if isinstance(value, list):
        more = ", ..." if len(value) > 5 else ""
        return "[" + ", ".join(str(v) for v in value[:5]) + more + "]"
    return str(value)
