"""Fold retrieval events (written by read-only serving) into memories' access statistics, and
prune folded events past their retention so the table does not grow without bound.

One statement marks every unfolded event folded and adds it to its memory's `access_count`
and `last_accessed_at`, so a re-run finds nothing to fold and an interrupted run folds nothing.
Pruning deletes only events that are folded (their count already lives in the memory) and older
than `RETRIEVAL_EVENTS_RETENTION_DAYS`; an event serving inserts while this runs stays unfolded
and is never deleted.
"""

from __future__ import annotations

import psycopg

from memory_pipeline.tuning import RETRIEVAL_EVENTS_RETENTION_DAYS


def fold_retrievals(conn: psycopg.Connection) -> tuple[int, int]:
    """Returns (events folded, memories updated)."""
    with conn.transaction():
        row = conn.execute(
            "WITH folded AS ("
            "  UPDATE retrieval_events SET folded_at = now() WHERE folded_at IS NULL"
            "  RETURNING memory_id, created_at"
            "), per_memory AS ("
            "  SELECT memory_id, count(*) AS n, max(created_at) AS last_at"
            "  FROM folded GROUP BY memory_id"
            "), updated AS ("
            "  UPDATE memories m SET access_count = m.access_count + p.n,"
            "  last_accessed_at = greatest(m.last_accessed_at, p.last_at)"
            "  FROM per_memory p WHERE m.id = p.memory_id RETURNING m.id"
            ") SELECT (SELECT coalesce(sum(n), 0) FROM per_memory), (SELECT count(*) FROM updated)"
        ).fetchone()
    return int(row[0]), int(row[1])  # type: ignore[index]


def prune_retrievals(
    conn: psycopg.Connection, retention_days: int = RETRIEVAL_EVENTS_RETENTION_DAYS
) -> int:
    """Delete folded events created more than `retention_days` ago; returns how many."""
    with conn.transaction():
        cur = conn.execute(
            "DELETE FROM retrieval_events WHERE folded_at IS NOT NULL"
            " AND created_at < now() - make_interval(days => %s)",
            [retention_days],
        )
    return cur.rowcount
