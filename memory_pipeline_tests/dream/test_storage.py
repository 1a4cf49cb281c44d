"""Storage is atomic per run, and the approval hold stores nothing until `dream approve`."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memory_pipeline.dream.store import approve, held_candidates
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline_tests.dream.helpers import reversed_decisions, run


class FailingEmbedder:
    """The embedding server dies mid-run (after the run's memories were written)."""

    def __init__(self) -> None:
        inner = get_minilm()
        self.space, self.dims = inner.space, inner.dims
        self.window_tokens = inner.window_tokens
        self.count_tokens = inner.count_tokens

    def embed(self, texts: list[str]) -> list[object]:
        raise ConnectionError("embedding server went away")


def _count(conn: psycopg.Connection, sql: str) -> int:
    return conn.execute(sql).fetchone()[0]  # type: ignore[index]


def test_a_failure_mid_run_stores_nothing_of_its_candidates(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older, _ = reversed_decisions(conn)
    with pytest.raises(ConnectionError):
        run(conn, tmp_path, embedder=FailingEmbedder())  # type: ignore[arg-type]
    assert _count(conn, "SELECT count(*) FROM memories WHERE source_type = 'dream_cycle'") == 0
    assert _count(conn, "SELECT count(*) FROM dream_cycle_candidates") == 0
    assert (
        _count(
            conn, "SELECT count(*) FROM memory_relationships WHERE relation_type = 'superseded_by'"
        )
        == 0
    )
    status = conn.execute("SELECT status FROM memories WHERE id = %s", [older]).fetchone()
    assert status == ("active",)
    run_row = conn.execute("SELECT status, error FROM dream_cycle_runs").fetchall()
    assert len(run_row) == 1 and run_row[0][0] == "failed"
    assert "embedding server went away" in run_row[0][1]

    # The next run does the whole work again.
    report = run(conn, tmp_path)
    assert report.superseded == 1


def test_approval_hold_stores_only_what_the_user_approves(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older, _ = reversed_decisions(conn)
    report = run(conn, tmp_path, hold_for_approval=True)
    assert report.accepted >= 1 and report.held == report.accepted and report.created == 0
    assert _count(conn, "SELECT count(*) FROM memories WHERE source_type = 'dream_cycle'") == 0
    assert conn.execute("SELECT status FROM memories WHERE id = %s", [older]).fetchone() == (
        "active",
    )
    held = held_candidates(conn)
    assert len(held) == report.held and "Held for approval" in report.digest

    stored = approve(conn, [held[0][0][:8]], get_minilm())
    assert len(stored) == 1
    assert conn.execute("SELECT status FROM memories WHERE id = %s", [older]).fetchone() == (
        "superseded",
    )
    assert (
        _count(
            conn,
            "SELECT count(*) FROM memory_embeddings e JOIN memories m ON m.id = e.memory_id"
            " WHERE m.source_type = 'dream_cycle'",
        )
        == 1
    )
    assert len(held_candidates(conn)) == len(held) - 1


def test_a_run_over_an_empty_database_records_an_empty_run(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    report = run(conn, tmp_path, run_type="post_learn")
    assert (report.slices, report.candidates, report.created) == (0, 0, 0)
    assert conn.execute(
        "SELECT run_type, status, candidates_generated FROM dream_cycle_runs"
    ).fetchall() == [("post_learn", "completed", 0)]
    assert "- none" in Path(report.digest_path or "").read_text()


def test_a_second_cycle_while_one_runs_is_refused_and_records_nothing(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    from memory_pipeline.dream.cycle import CYCLE_LOCK
    from memory_pipeline.errors import UserError

    reversed_decisions(conn)
    with psycopg.connect(db_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (CYCLE_LOCK,))  # a cycle in progress
        with pytest.raises(UserError, match="another dream cycle is running"):
            run(conn, tmp_path)
        assert _count(conn, "SELECT count(*) FROM dream_cycle_runs") == 0
        # released before the connection closes: a closed session's backend can hold its locks
        # for a moment after the client has gone
        other.execute("SELECT pg_advisory_unlock(%s)", (CYCLE_LOCK,))
    report = run(conn, tmp_path)  # once it finished, the next one runs
    assert report.superseded == 1
