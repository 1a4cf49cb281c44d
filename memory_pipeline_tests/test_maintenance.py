"""Hourly maintenance: retrieval events are folded into access counts, then old ones pruned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import psycopg

from memory_pipeline.reinforcement.definitions import memory_reinforcement
from memory_pipeline.reinforcement.fold import prune_retrievals
from memory_pipeline.resources import DatabaseResource
from memory_pipeline.tuning import RETRIEVAL_EVENTS_RETENTION_DAYS
from memory_pipeline_tests.support.memories import add_memory

OLD = timedelta(days=RETRIEVAL_EVENTS_RETENTION_DAYS + 5)
RECENT = timedelta(days=2)


def add_event(
    conn: psycopg.Connection, memory_id: str, age: timedelta, folded: bool, rank: int
) -> None:
    created = datetime.now(UTC) - age
    conn.execute(
        "INSERT INTO retrieval_events (memory_id, surface, rank, created_at, folded_at)"
        " VALUES (%s, 'cli', %s, %s, %s)",
        [memory_id, rank, created, created + timedelta(minutes=30) if folded else None],
    )


def ranks(conn: psycopg.Connection) -> list[tuple[int, bool]]:
    rows = conn.execute(
        "SELECT rank, folded_at IS NOT NULL FROM retrieval_events ORDER BY rank"
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def maintain(db_url: str) -> dict[str, object]:
    result = dg.materialize([memory_reinforcement], resources={"db": DatabaseResource(url=db_url)})
    assert result.success
    (mat,) = result.asset_materializations_for_node("memory_reinforcement")
    return {k: v.value for k, v in mat.metadata.items()}


def test_maintenance_folds_then_prunes_old_folded_events(db_url, conn) -> None:  # type: ignore[no-untyped-def]
    memory = add_memory(conn, "Use LRU eviction", "The cache uses LRU because access is recent.")
    add_event(conn, memory, OLD, folded=True, rank=1)  # counted long ago: pruned
    add_event(conn, memory, RECENT, folded=True, rank=2)  # counted, within retention: kept
    add_event(conn, memory, OLD, folded=False, rank=3)  # counted now, then pruned
    add_event(conn, memory, RECENT, folded=False, rank=4)  # counted now, kept
    meta = maintain(db_url)
    assert meta["events_folded"] == 2 and meta["memories_reinforced"] == 1
    assert meta["events_pruned"] == 2
    assert meta["retention_days"] == RETRIEVAL_EVENTS_RETENTION_DAYS
    assert ranks(conn) == [(2, True), (4, True)]
    # Nothing pruned is lost: the two events folded by this run are in the memory's count.
    assert conn.execute("SELECT access_count FROM memories").fetchone() == (2,)
    again = maintain(db_url)
    assert again["events_folded"] == 0 and again["events_pruned"] == 0
    assert ranks(conn) == [(2, True), (4, True)]


def test_pruning_never_deletes_an_unfolded_event(conn) -> None:  # type: ignore[no-untyped-def]
    memory = add_memory(conn, "Pin dagster-postgres", "dagster 1.13.27 needs 0.29.27.")
    # Inserted by serving while maintenance runs, or left by a fold that failed: however old,
    # it is not counted yet.
    add_event(conn, memory, OLD * 3, folded=False, rank=1)
    add_event(conn, memory, OLD, folded=True, rank=2)
    assert prune_retrievals(conn) == 1
    assert ranks(conn) == [(1, False)]
