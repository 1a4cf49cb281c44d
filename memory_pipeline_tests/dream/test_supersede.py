"""SUPERSEDE end to end (offline): a reversed decision is retired, searchable at once, and
`dream reject` undoes it and feeds the reason back into the next run."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memory_pipeline.dream.store import reject_memory
from memory_pipeline.errors import UserError
from memory_pipeline_tests.dream.helpers import reversed_decisions, run


def _status(conn: psycopg.Connection, mid: str) -> str:
    return conn.execute("SELECT status FROM memories WHERE id = %s", [mid]).fetchone()[0]  # type: ignore[index]


def _live(conn: psycopg.Connection, source: str, target: str, kind: str) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM memory_relationships WHERE source_id = %s AND target_id = %s"
            " AND relation_type = %s AND expired_at IS NULL",
            [source, target, kind],
        ).fetchone()
    )


def test_reversed_decision_is_superseded_and_reject_restores_it(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older, newer = reversed_decisions(conn)
    report = run(conn, tmp_path)

    assert report.superseded == 1 and report.accepted >= 1
    assert _status(conn, older) == "superseded"
    assert _live(conn, older, newer, "superseded_by")
    dream = conn.execute(
        "SELECT id::text, tags, metadata, source_type FROM memories"
        " WHERE source_type = 'dream_cycle'"
    ).fetchall()
    assert len(dream) == 1
    dream_id, tags, metadata, _ = dream[0]
    assert "dream-cycle" in tags
    assert metadata["dream_cycle"] is True and metadata["dream_run_id"] == report.run_id
    assert _live(conn, dream_id, older, "derived_from") and _live(
        conn, dream_id, newer, "derived_from"
    )
    # Embedded and cut into passages in the same run: searchable now.
    assert (
        conn.execute(
            "SELECT count(*) FROM memory_embeddings WHERE memory_id = %s", [dream_id]
        ).fetchone()[0]
        == 1
    )  # type: ignore[index]
    assert (
        conn.execute(
            "SELECT count(*) FROM memory_passages p"
            " JOIN passage_embeddings e ON e.passage_id = p.id WHERE p.memory_id = %s",
            [dream_id],
        ).fetchone()[0]
        >= 1
    )  # type: ignore[index]
    # The digest says before and after, on disk and in the run row.
    digest = Path(report.digest_path or "").read_text()
    assert "Superseded memories" in digest and older in digest and newer in digest
    row = conn.execute(
        "SELECT run_type, status, candidates_accepted, memories_superseded, digest"
        " FROM dream_cycle_runs WHERE id = %s",
        [report.run_id],
    ).fetchone()
    assert row[:4] == ("user_triggered", "completed", report.accepted, 1)  # type: ignore[index]
    assert row[4] == digest  # type: ignore[index]

    # Undo through the memory it superseded (either id works).
    done = reject_memory(conn, older, "we went back to Redis after all")
    assert done["restored"] == [older]
    assert _status(conn, older) == "active"
    assert _status(conn, dream_id) == "user_rejected"
    assert not _live(conn, older, newer, "superseded_by")
    assert not _live(conn, dream_id, older, "derived_from")
    rejected_at, reason = conn.execute(
        "SELECT user_rejected_at, user_rejection_reason FROM dream_cycle_candidates"
        " WHERE created_memory_id = %s",
        [dream_id],
    ).fetchone()  # type: ignore[misc]
    assert rejected_at is not None and reason == "we went back to Redis after all"
    with pytest.raises(UserError, match="already rejected"):
        reject_memory(conn, dream_id, "again")

    # The next run is told, and does not supersede it again.
    again = run(conn, tmp_path)
    assert again.superseded == 0 and _status(conn, older) == "active"
    injected, precheck = conn.execute(
        "SELECT explorer_feedback_injected, precheck FROM dream_cycle_runs WHERE id = %s",
        [again.run_id],
    ).fetchone()  # type: ignore[misc]
    assert "we went back to Redis after all" in injected
    assert precheck["removed"]["candidate_rejected_by_user"] == 1


def test_reject_refuses_a_memory_the_cycle_did_not_touch(conn: psycopg.Connection) -> None:
    older, _ = reversed_decisions(conn)
    with pytest.raises(UserError, match="not made or superseded by the dream cycle"):
        reject_memory(conn, older, "no")


def test_a_reversed_choice_inside_a_segment_updates_it_never_supersedes_it(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    from memory_pipeline_tests.dream.helpers import edge, mem

    segment = mem(
        conn, "New project: meterflow", "Nightly load with cron at 02:30.", type="segment"
    )
    timer = mem(
        conn,
        "Use a systemd timer instead of cron",
        "We'll use a systemd timer instead of cron so a missed run happens at the next boot.",
        type="decision",
        days=17,
    )
    edge(conn, timer, segment, "contradicts")
    report = run(conn, tmp_path)
    assert (report.accepted, report.superseded) == (1, 0)
    assert _status(conn, segment) == "active"
    (dream_id,) = conn.execute(
        "SELECT id::text FROM memories WHERE source_type = 'dream_cycle'"
    ).fetchone()  # type: ignore[misc]
    assert _live(conn, dream_id, segment, "extends")

    # When a decision distilled from that segment is contradicted too, its SUPERSEDE says it.
    choice = mem(conn, "Use cron", "We'll run the nightly load from cron.", type="decision")
    edge(conn, choice, segment, "derived_from")
    edge(conn, timer, choice, "contradicts")
    again = run(conn, tmp_path)
    assert again.superseded == 1 and _status(conn, choice) == "superseded"
    assert conn.execute(
        "SELECT count(*) FROM memories WHERE source_type = 'dream_cycle' AND status = 'active'"
    ).fetchone() == (2,)


def test_a_dream_memory_leads_back_to_the_turns_it_rests_on(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    from memory_pipeline_tests.support.memories import add_task, link

    older, newer = reversed_decisions(conn)
    task_old, turns_old = add_task(conn, "thread-old", turns=2)
    task_new, turns_new = add_task(conn, "thread-new", turns=3)
    link(conn, older, task_old, turns_old[:1])
    link(conn, newer, task_new, turns_new[1:])
    run(conn, tmp_path)
    rows = conn.execute(
        "SELECT p.turn_id::text, p.task_id::text FROM memory_provenance p"
        " JOIN memories m ON m.id = p.memory_id WHERE m.source_type = 'dream_cycle'"
    ).fetchall()
    assert sorted(rows) == sorted(
        [(turns_old[0], task_old), (turns_new[1], task_new), (turns_new[2], task_new)]
    )
