"""Corroboration counts distinct evidence, not runs: a dream run that finds nothing new changes
no memory, and a restatement counts once per set of memories it rests on."""

from __future__ import annotations

from pathlib import Path

import psycopg

from memory_pipeline.dream import precheck
from memory_pipeline.dream.feedback import Feedback
from memory_pipeline.dream.models import Candidate, CandidateDraft
from memory_pipeline.dream.store import record_corroborations
from memory_pipeline_tests.dream.helpers import edge, mem, run


def _memories(conn: psycopg.Connection) -> list[tuple[object, ...]]:
    return conn.execute("SELECT m::text FROM memories m ORDER BY id").fetchall()


def test_a_dream_run_that_finds_nothing_new_changes_no_memory(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    """The UPDATE of a segment a newer decision contradicts is proposed again by every run (the
    `contradicts` edge stays live); that is the evidence the synthesis was made from, not more."""
    segment = mem(
        conn,
        "New project: meterflow",
        "We run the nightly load from cron and write logs/ingest-*.log by hand.",
        type="segment",
        project="meterflow",
        days=0,
    )
    newer = mem(
        conn,
        "Use a systemd timer instead of cron",
        "We'll use a systemd timer instead of cron for the nightly load.",
        type="decision",
        project="meterflow",
        days=14,
    )
    edge(conn, newer, segment, "contradicts")
    first = run(conn, tmp_path)
    assert first.created == 1
    after_first = _memories(conn)

    second, third = run(conn, tmp_path), run(conn, tmp_path)

    assert (second.created, third.created) == (0, 0)
    assert _memories(conn) == after_first
    assert second.corroborated == third.corroborated == 0
    (meta,) = conn.execute(
        "SELECT metadata FROM memories WHERE source_type = 'dream_cycle'"
    ).fetchone()  # type: ignore[misc]
    assert "dream_corroborations" not in meta


def _restating(rests_on: list[str]) -> Candidate:
    draft = CandidateDraft(
        operation="CREATE",
        schema_operation="assimilation",
        type="synthesis",
        title="Advisory locks in two projects",
        content="Both projects take an advisory lock before the nightly job.",
        rests_on=rests_on,
    )
    return Candidate(draft, "cross_project_collision", "similar")


def _corroborate(conn: psycopg.Connection, rests_on: list[str]) -> int:
    report = precheck.PrecheckReport()
    assert precheck.candidates(conn, [_restating(rests_on)], Feedback(), report) == []
    return sum(len(keys) for keys in record_corroborations(conn, report).values())


def test_corroborations_count_distinct_evidence(conn: psycopg.Connection) -> None:
    a, b, c = (mem(conn, f"lock {i}", f"advisory lock in project {i}") for i in "abc")
    existing = mem(conn, "Advisory locks in two projects", "Both projects use advisory locks.")

    def stored() -> tuple[object, object]:
        row = conn.execute(
            "SELECT metadata -> 'dream_corroborations', metadata -> 'dream_corroborated_by'"
            " FROM memories WHERE id = %s",
            [existing],
        ).fetchone()
        assert row is not None
        return row[0], row[1]

    assert _corroborate(conn, [a, b]) == 1
    count, keys = stored()
    assert count == 1 and isinstance(keys, list) and len(keys) == 1
    # The same evidence again (in any order), in this run or the next: not counted again.
    assert _corroborate(conn, [b, a]) == 0
    assert _corroborate(conn, [a, b]) == 0
    assert stored() == (1, keys)
    # Other evidence corroborates once more.
    assert _corroborate(conn, [a, c]) == 1
    assert stored()[0] == 2
