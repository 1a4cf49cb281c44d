"""Each Explorer strategy on hand-made data: what it finds, and what it leaves out."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memory_pipeline import tuning
from memory_pipeline.dream.explorer import context, explore
from memory_pipeline.dream.explorer import strategies as st
from memory_pipeline_tests.dream.helpers import edge, mem, unit


def _sets(slices: list) -> list[set[str]]:  # type: ignore[type-arg]
    return [set(s.memory_ids) for s in slices]


def test_temporal_juxtaposition(conn: psycopg.Connection) -> None:
    a = mem(conn, "a", "logslice note", project="logslice", days=0)
    b = mem(conn, "b", "meterflow note", project="meterflow", days=0.2)
    mem(conn, "c", "alone in its window", project="homelab", days=5)
    mem(conn, "d", "same project only", project="homelab", days=5.1)
    found = st.temporal_juxtaposition(conn, context(conn))
    assert _sets(found) == [{a, b}]
    assert "logslice, meterflow" in found[0].reason


def test_cross_project_collision(conn: psycopg.Connection) -> None:
    a = mem(conn, "a", "x", project="p1", vector=unit(1, 0))
    b = mem(conn, "b", "x", project="p2", vector=unit(0.9, 0.43589))
    mem(conn, "c", "same project as a", project="p1", vector=unit(1, -0.3))
    mem(conn, "d", "dissimilar", project="p3", vector=unit(0, 0, 1))
    found = st.cross_project_collision(conn, context(conn))
    assert _sets(found) == [{a, b}]  # c pairs with b too, but each memory pairs once, best first
    assert abs(found[0].score - 0.9) < 0.01


def test_orphan_archaeology(conn: psycopg.Connection) -> None:
    orphan = mem(conn, "old orphan", "x", days=0, vector=unit(1, 0))
    linked = mem(conn, "linked", "x", days=1, vector=unit(1, 0.1))
    other = mem(conn, "other", "x", days=2, vector=unit(0.9, 0.2))
    edge(conn, linked, other, "supports")
    found = st.orphan_archaeology(conn, context(conn))
    assert [s.memory_ids[0] for s in found] == [orphan]
    assert set(found[0].memory_ids[1:]) == {linked, other}


def test_contradiction_hunt(conn: psycopg.Connection) -> None:
    old = mem(conn, "cron", "use cron", type="decision", days=0)
    new = mem(conn, "timer", "use a systemd timer", type="decision", days=10)
    gone = mem(conn, "expired", "x", type="decision", days=11)
    edge(conn, new, old, "contradicts")
    edge(conn, gone, old, "contradicts")
    conn.execute("UPDATE memory_relationships SET expired_at = now() WHERE source_id = %s", [gone])
    found = st.contradiction_hunt(conn, context(conn))
    assert [s.memory_ids for s in found] == [(new, old)]


@pytest.mark.parametrize("duplicate_sorts_first", [True, False])
def test_contradiction_hunt_order_depends_on_the_memories_not_on_their_ids(
    conn: psycopg.Connection, duplicate_sorts_first: bool
) -> None:
    """Two decisions of one moment reverse the same old one, and the relationships asset wrote
    both edges in one transaction (one created_at). The dream cycle supersedes with whichever
    slice comes first, so the order must not fall to the random ids: the distilled original
    comes before its near-duplicate restatement, on every home alike (it fell to the ids, and
    fresh demo homes of one commit measured Recall@10 0.975 or 0.9694)."""
    low, high = "00000000-0000-4000-8000-000000000000", "ffffffff-ffff-4fff-bfff-ffffffffffff"
    first, last = (high, low) if duplicate_sorts_first else (low, high)
    old = mem(conn, "Redis limiter", "use redis for the rate limiter", type="decision")
    original = mem(
        conn, "Token bucket", "token bucket in postgres", type="decision", days=9, id=first
    )
    restated = mem(
        conn,
        "What we agreed",
        "drop redis, keep a token bucket in postgres",
        type="decision",
        days=9,
        duplicate_of=original,
        id=last,
    )
    with conn.transaction():  # as the relationships asset writes them: one now()
        edge(conn, original, old, "contradicts")
        edge(conn, restated, old, "contradicts")
    found = st.contradiction_hunt(conn, context(conn))
    assert [s.memory_ids for s in found] == [(original, old), (restated, old)]


def test_decision_revisit(conn: psycopg.Connection) -> None:
    decision = mem(conn, "d", "use mmap", type="decision", project="logslice", vector=unit(1, 0))
    later = mem(conn, "l", "SIGBUS with mmap", project="logslice", days=20, vector=unit(1, 0.3))
    mem(conn, "o", "other project", project="homelab", days=21, vector=unit(1, 0.3))
    young = mem(
        conn,
        "y",
        "young decision",
        type="decision",
        project="logslice",
        days=19,
        vector=unit(1, 0.31),
    )
    found = st.decision_revisit(conn, context(conn))
    assert [s.memory_ids[0] for s in found] == [decision]
    assert set(found[0].memory_ids[1:]) == {later, young}


def test_recurring_question(conn: psycopg.Connection) -> None:
    q = {"questions": ["how do I rotate wireguard keys"]}
    a = mem(conn, "a", "x", metadata=q, vector=unit(1, 0))
    b = mem(conn, "b", "x", metadata=q, vector=unit(0.95, 0.3122), days=3)
    mem(conn, "c", "no question", vector=unit(1, 0.01))
    found = st.recurring_question(conn, context(conn))
    assert _sets(found) == [{a, b}]


def test_correction_pattern(conn: psycopg.Connection) -> None:
    ids = [
        mem(conn, f"c{i}", f"correction {i}", type="correction_episode", vector=unit(1, 0.1 * i))
        for i in range(3)
    ]
    mem(conn, "other", "unrelated correction", type="correction_episode", vector=unit(0, 0, 1))
    mem(conn, "not a correction", "x", vector=unit(1, 0))
    found = st.correction_pattern(conn, context(conn))
    assert _sets(found) == [set(ids)]
    assert len(ids) == tuning.DREAM_CORRECTION_MIN_EPISODES


def test_stale_priority(conn: psycopg.Connection) -> None:
    stale = mem(conn, "s", "x", type="priority", project="homelab", days=0)
    retrieved = mem(conn, "r", "x", type="decision", project="homelab", days=0)
    conn.execute(
        "UPDATE memories SET last_accessed_at = created_at + interval '40 days' WHERE id = %s",
        [retrieved],
    )
    mem(conn, "recent", "x", type="decision", project="homelab", days=45)
    found = st.stale_priority(conn, context(conn))
    assert [s.memory_ids for s in found] == [(stale,)]


def test_bridge_between_clusters(conn: psycopg.Connection) -> None:
    bridge = mem(conn, "bridge", "x", project="ledgerline")
    p1 = mem(conn, "m1", "x", project="meterflow")
    p2 = mem(conn, "h1", "x", project="homelab")
    lonely = mem(conn, "lonely", "x", project="logslice")
    edge(conn, bridge, p1, "related_to")
    edge(conn, p2, bridge, "supports")
    edge(conn, lonely, mem(conn, "l2", "x", project="logslice"), "related_to")
    found = st.bridge_between_clusters(conn, context(conn))
    assert [s.memory_ids[0] for s in found] == [bridge]
    assert set(found[0].memory_ids[1:]) == {p1, p2}


def test_reinforced_vs_forgotten(conn: psycopg.Connection) -> None:
    hot = mem(conn, "hot", "x", vector=unit(1, 0), access_count=7)
    cold = mem(conn, "cold", "x", vector=unit(1, 0.2))
    mem(conn, "far", "x", vector=unit(0, 1))
    found = st.reinforced_vs_forgotten(conn, context(conn))
    assert [s.memory_ids for s in found] == [(hot, cold)]


def test_superseded_echo(conn: psycopg.Connection) -> None:
    old = mem(conn, "old", "x", status="superseded", vector=unit(1, 0))
    successor = mem(conn, "new", "x", days=5, vector=unit(0, 1))
    echo = mem(conn, "echo", "x", days=6, vector=unit(1, 0.2))
    edge(conn, old, successor, "superseded_by")
    found = st.superseded_echo(conn, context(conn))
    assert [s.memory_ids for s in found] == [(old, successor, echo)]


def test_explore_bounds_and_leaves_out_segments_and_dream_memories(
    conn: psycopg.Connection,
) -> None:
    for i in range(12):
        mem(conn, f"a{i}", "x", project="p1", days=i)
        mem(conn, f"b{i}", "x", project="p2", days=i + 0.1)
    seg = mem(conn, "segment", "x", type="segment", project="p3", days=0.05)
    dream = mem(
        conn,
        "dream",
        "x",
        source_type="dream_cycle",
        project="p4",
        days=0.06,
        metadata=Jsonb({"dream_cycle": True}).obj,
    )
    slices, counts = explore(conn, limit=7)
    assert len(slices) == 7
    assert counts["temporal_juxtaposition"] == tuning.DREAM_SLICES_PER_STRATEGY
    assert all(len(s.memory_ids) <= tuning.DREAM_SLICE_MAX_MEMORIES for s in slices)
    assert not any({seg, dream} & set(s.memory_ids) for s in slices)
