"""The user's confirmation that a skipped task is theirs (`memory-pipeline capture confirm`).

Ownership is decided from native evidence (the connectors' ownership modules). When that evidence
is missing - an older Claude Code build writes no `entrypoint`, a pruned `history.jsonl`, a
project copied from another machine - the task is `unknown` and skipped. A confirmation is user
evidence recorded in `ownership_confirmations`: on the next run the task's `unknown` verdict
becomes `user_owned` (reason `<source>:user-confirmed`, the native reason kept in the evidence).
Delegation evidence always wins: a `delegated` task stays skipped, confirmed or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from memory_pipeline.capture.models import OwnershipVerdict, ParsedTask
from memory_pipeline.errors import UserError


@dataclass
class Confirmation:
    source: str
    native_id: str
    ownership: str | None  # the skipped task's native verdict, None when never seen
    reason: str | None


def with_confirmation(conn: psycopg.Connection, task: ParsedTask) -> ParsedTask:
    """`task` with its `unknown` verdict turned `user_owned` when the user confirmed it."""
    if task.ownership.ownership != "unknown":
        return task  # user_owned already, or delegated: delegation evidence wins
    row = conn.execute(
        "SELECT confirmed_at FROM ownership_confirmations WHERE source = %s AND native_id = %s",
        [task.source, task.native_id],
    ).fetchone()
    if row is None:
        return task
    confirmed_at: datetime = row[0]
    verdict = OwnershipVerdict(
        ownership="user_owned",
        reason=f"{task.source}:user-confirmed",
        evidence={
            **task.ownership.evidence,
            "native_reason": task.ownership.reason,
            "user_confirmed_at": confirmed_at.isoformat(),
        },
    )
    return task.model_copy(update={"ownership": verdict})


def confirm(conn: psycopg.Connection, source: str, native_id: str) -> Confirmation:
    """Record the confirmation, and mark the task's files unread so the next run (or the
    transcript sensor) reads them again. Refused for a task skipped as delegated."""
    rows = conn.execute(
        "SELECT ownership, reason, path FROM capture_skips"
        " WHERE kind = 'task' AND source = %s AND native_id = %s",
        [source, native_id],
    ).fetchall()
    delegated = [r for r in rows if r[0] == "delegated"]
    if delegated:
        raise UserError(
            f"{source}:{native_id} was skipped as delegated ({delegated[0][1]}): delegation "
            "evidence wins over a confirmation; nothing recorded"
        )
    captured = conn.execute(
        "SELECT 1 FROM captured_tasks WHERE source = %s AND native_id = %s", [source, native_id]
    ).fetchone()
    if captured:
        raise UserError(f"{source}:{native_id} is already captured; nothing to confirm")
    if not rows:
        raise UserError(
            f"no skipped task {source}:{native_id}; `memory-pipeline capture skips` lists them"
        )
    with conn.transaction():
        conn.execute(
            "INSERT INTO ownership_confirmations (source, native_id) VALUES (%s, %s)"
            " ON CONFLICT DO NOTHING",
            [source, native_id],
        )
        conn.execute(
            "UPDATE source_files SET captured_size = NULL, captured_mtime_ns = NULL"
            " WHERE path = ANY(%s)",
            [[r[2] for r in rows]],
        )
    return Confirmation(source, native_id, rows[0][0], rows[0][1])


@dataclass
class SkippedTask:
    source: str
    native_id: str
    ownership: str | None
    reason: str
    path: str
    first_seen_at: datetime
    confirmed: bool


def skipped_tasks(conn: psycopg.Connection, include_all: bool = False) -> list[SkippedTask]:
    """Tasks skipped and not captured since: by default those skipped for ownership (unknown or
    delegated); `include_all` adds forgotten, excluded and failed ones."""
    rows = conn.execute(
        "SELECT s.source, s.native_id, s.ownership, s.reason, s.path, min(s.first_seen_at),"
        " bool_or(c.source IS NOT NULL)"
        " FROM capture_skips s"
        " LEFT JOIN ownership_confirmations c USING (source, native_id)"
        " WHERE s.kind = 'task' AND (%s OR s.ownership IN ('unknown', 'delegated'))"
        " AND NOT EXISTS (SELECT 1 FROM captured_tasks t"
        "                 WHERE t.source = s.source AND t.native_id = s.native_id)"
        " GROUP BY s.source, s.native_id, s.ownership, s.reason, s.path"
        " ORDER BY s.ownership DESC NULLS LAST, s.source, min(s.first_seen_at), s.native_id",
        [include_all],
    ).fetchall()
    return [SkippedTask(*r) for r in rows]
