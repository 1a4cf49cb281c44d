"""Which redaction rules the store was last healed with (sql/026 `redaction_state`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import psycopg

from memory_pipeline.capture.redact import RULES_VERSION


@dataclass(frozen=True)
class RedactionState:
    rules_version: str | None
    applied_at: datetime | None
    how: str | None
    last_rewrite_at: datetime | None
    derived_pending: bool


def read_state(conn: psycopg.Connection) -> RedactionState:
    row = conn.execute(
        "SELECT rules_version, applied_at, how, last_rewrite_at, derived_pending"
        " FROM redaction_state"
    ).fetchone()
    if row is None:  # the row was deleted by hand: as if never recorded
        return RedactionState(None, None, None, None, False)
    return RedactionState(*row)


def store_is_empty(conn: psycopg.Connection) -> bool:
    """Nothing captured or remembered yet: there is nothing old rules could have stored."""
    row = conn.execute(
        "SELECT NOT EXISTS (SELECT 1 FROM agent_turns) AND NOT EXISTS (SELECT 1 FROM memories)"
        " AND NOT EXISTS (SELECT 1 FROM captured_tasks)"
    ).fetchone()
    return bool(row and row[0])


def due(conn: psycopg.Connection) -> Literal["fresh", "heal"] | None:
    """What `memory-pipeline run` must do before its jobs: record the rules on a fresh home,
    heal a store whose rules changed (or whose last heal did not finish), or nothing."""
    state = read_state(conn)
    if state.rules_version == RULES_VERSION and not state.derived_pending:
        return None
    if state.rules_version is None and store_is_empty(conn):
        return "fresh"
    return "heal"


def record(conn: psycopg.Connection, how: Literal["fresh", "heal"]) -> None:
    """The current rules are now applied to the whole store (a heal that found the same
    rules recorded changes nothing: `applied_at` stays when they were first applied)."""
    conn.execute(
        "INSERT INTO redaction_state (rules_version, applied_at, how) VALUES (%s, now(), %s)"
        " ON CONFLICT (singleton) DO UPDATE SET rules_version = EXCLUDED.rules_version,"
        " applied_at = EXCLUDED.applied_at, how = EXCLUDED.how"
        " WHERE redaction_state.rules_version IS DISTINCT FROM EXCLUDED.rules_version"
        " OR redaction_state.how IS DISTINCT FROM EXCLUDED.how",
        [RULES_VERSION, how],
    )


def mark_rewritten(conn: psycopg.Connection, derived: bool) -> None:
    """A batch rewrote rows (in the caller's transaction): backups before now hold the old
    text, and with `derived` what is computed from that text must be recomputed."""
    conn.execute(
        "INSERT INTO redaction_state (last_rewrite_at, derived_pending) VALUES (now(), %s)"
        " ON CONFLICT (singleton) DO UPDATE SET last_rewrite_at = now(),"
        " derived_pending = redaction_state.derived_pending OR EXCLUDED.derived_pending",
        [derived],
    )


def clear_derived(conn: psycopg.Connection) -> None:
    conn.execute("UPDATE redaction_state SET derived_pending = false")
