"""A proposal the panel decided is not voted again while nothing it rests on changed: two runs in
a row with nothing new add no candidate rows (a rejected or held proposal used to be voted, and
stored as a new `dream_cycle_candidates` row, on every run). A change to a memory it rests on
brings it back; a deferred proposal still comes back for its one more vote."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from memory_pipeline.dream.thinker_ollama import DreamOllama
from memory_pipeline_tests.dream.helpers import reversed_decisions, run
from memory_pipeline_tests.support.fake_ollama import DEFAULT_CHAT_MODEL, running_fake_ollama
from memory_pipeline_tests.support.table_hashes import (
    RUN_RECORD_TABLES,
    changed_tables,
    table_hashes,
)


def _supersede(older: str, newer: str) -> str:
    return json.dumps(
        {
            "candidates": [
                {
                    "operation": "SUPERSEDE",
                    "schema_operation": "accommodation",
                    "type": "synthesis",
                    "title": "Rate limits now live in Postgres",
                    "content": "Rate limit counters moved from Redis to Postgres because Redis "
                    "evicted them; the Redis decision no longer holds.",
                    "rests_on": [newer, older],
                    "target_memory_id": older,
                    "successor_id": newer,
                    "quotes": ["Redis evicted them"],
                }
            ]
        }
    )


def _votes(*verdicts: str) -> list[str]:
    return [json.dumps({"verdict": v, "reasoning": f"the panel says {v}"}) for v in verdicts]


def _candidate_rows(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM dream_cycle_candidates").fetchone()
    assert row
    return int(row[0])


def test_a_rejected_proposal_is_not_voted_again_until_what_it_rests_on_changes(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    older, newer = reversed_decisions(conn)
    with running_fake_ollama() as fake:
        client = DreamOllama(fake.host, DEFAULT_CHAT_MODEL, timeout_s=10, budget=50)
        fake.script_chat(_supersede(older, newer), *_votes("accept", "accept", "reject", "reject"))
        first = run(conn, tmp_path, ollama=client)
        assert (first.candidates, first.rejected) == (1, 1)
        assert fake.pending_chat() == 0

        # Nothing new: the Thinker proposes the same again, the panel is not asked (an
        # evaluator asked anyway gets HTTP 500 from the fake: a deferral, a new row).
        before = table_hashes(db_url, exclude=set(RUN_RECORD_TABLES))
        calls = len(fake.chat_requests)
        fake.script_chat(_supersede(older, newer))
        second = run(conn, tmp_path, ollama=client)
        assert changed_tables(before, table_hashes(db_url, exclude=set(RUN_RECORD_TABLES))) == {}
        assert second.candidates == 0
        assert len(fake.chat_requests) - calls == 1  # the Thinker only
        precheck = conn.execute(
            "SELECT precheck FROM dream_cycle_runs WHERE id = %s", [second.run_id]
        ).fetchone()[0]  # type: ignore[index]
        assert precheck["removed"]["candidate_rejected_unchanged"] == 1
        assert "candidate_rejected_unchanged 1" in second.digest

        # What it rests on changed: the panel votes on it again.
        conn.execute(
            "UPDATE memories SET content = content || ' Postgres keeps them durable.'"
            " WHERE id = %s",
            [newer],
        )
        fake.script_chat(_supersede(older, newer), *_votes("accept", "accept", "accept", "reject"))
        third = run(conn, tmp_path, ollama=client)
    assert (third.candidates, third.accepted, third.superseded) == (1, 1, 1)
    assert _candidate_rows(conn) == 2


def test_a_held_proposal_is_not_voted_again_while_it_waits_for_approval(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    reversed_decisions(conn)
    first = run(conn, tmp_path, hold_for_approval=True)
    assert (first.accepted, first.held) == (1, 1)

    before = table_hashes(db_url, exclude=set(RUN_RECORD_TABLES))
    second = run(conn, tmp_path, hold_for_approval=True)

    assert changed_tables(before, table_hashes(db_url, exclude=set(RUN_RECORD_TABLES))) == {}
    assert (second.candidates, second.held) == (0, 0)
    held = conn.execute("SELECT count(*) FROM dream_cycle_candidates WHERE approval = 'held'")
    assert held.fetchone() == (1,)


def test_a_deferred_proposal_still_gets_its_one_more_vote(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older, newer = reversed_decisions(conn)
    with running_fake_ollama() as fake:
        client = DreamOllama(fake.host, DEFAULT_CHAT_MODEL, timeout_s=10, budget=50)
        fake.script_chat(_supersede(older, newer), *_votes("accept", "accept", "defer", "reject"))
        first = run(conn, tmp_path, ollama=client)
        assert first.deferred == 1
        # The Thinker proposes it again and the deferral comes back: one vote, rejected for good.
        fake.script_chat(_supersede(older, newer), *_votes("accept", "accept", "reject", "reject"))
        second = run(conn, tmp_path, ollama=client)
        assert (second.candidates, second.rejected) == (1, 1)
        fake.script_chat(_supersede(older, newer))
        third = run(conn, tmp_path, ollama=client)
        assert third.candidates == 0
        assert fake.pending_chat() == 0
    assert _candidate_rows(conn) == 2
