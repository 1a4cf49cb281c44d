"""Feedback: rejections of recent runs and user rejections reach the next Thinker, and the run
records what was injected."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.dream.feedback import gather
from memory_pipeline.dream.store import reject_memory
from memory_pipeline_tests.dream.helpers import reversed_decisions, run


def test_panel_and_user_rejections_are_injected_into_the_next_run(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older, _ = reversed_decisions(conn)
    assert gather(conn).items == []
    # An earlier run whose panel rejected a candidate (Skeptic and Epistemologist said why).
    run_id = conn.execute(
        "INSERT INTO dream_cycle_runs (run_type, status) VALUES ('scheduled', 'completed')"
        " RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "INSERT INTO dream_cycle_candidates (run_id, candidate_json, operation, final_verdict,"
        " evaluator_a_verdict, evaluator_a_reasoning, evaluator_b_verdict,"
        " evaluator_c_verdict, evaluator_c_reasoning, evaluator_d_verdict)"
        " VALUES (%s, %s, 'CREATE', 'REJECTED', 'reject', 'one memory is no pattern',"
        " 'accept', 'reject', 'the quote is not in the memory', 'accept')",
        [run_id, Jsonb({"draft": {"title": "Everything is a queue"}})],
    )
    assert gather(conn).items == [
        'The panel rejected "Everything is a queue": Skeptic: one memory is no pattern; '
        "Epistemologist: the quote is not in the memory"
    ]

    first = run(conn, tmp_path)
    assert first.superseded == 1
    reject_memory(conn, older, "Redis stays for the burst limiter")

    fb = gather(conn)
    assert fb.items[0] == (
        'The user rejected "Reversed in ledgerline: Rate limits move to Postgres": '
        "Redis stays for the burst limiter"
    )
    assert fb.items[1].startswith('The panel rejected "Everything is a queue"')
    second = run(conn, tmp_path)
    injected, recorded = conn.execute(
        "SELECT explorer_feedback_injected, feedback FROM dream_cycle_runs WHERE id = %s",
        [second.run_id],
    ).fetchone()  # type: ignore[misc]
    assert "Redis stays for the burst limiter" in injected
    assert recorded["items"] == fb.items
    assert recorded["user_rejected"] == sorted(fb.user_rejected)
    assert second.feedback_items == len(fb.items)
