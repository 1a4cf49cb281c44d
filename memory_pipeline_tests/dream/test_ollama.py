"""The Ollama backend against the local fake server: one Thinker call per slice, one call per
evaluator per candidate, JSON schemas, scripted verdicts, and the per-run call budget."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.dream.thinker_ollama import DreamOllama
from memory_pipeline_tests.dream.helpers import reversed_decisions, run
from memory_pipeline_tests.support.fake_ollama import DEFAULT_CHAT_MODEL, running_fake_ollama


def _thinker_answer(older: str, newer: str) -> str:
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
                    "edges": [{"source": "new", "target": newer, "relation_type": "derived_from"}],
                    "quotes": ["Redis evicted them"],
                }
            ]
        }
    )


def _verdict(v: str, why: str) -> str:
    return json.dumps({"verdict": v, "reasoning": why})


def test_ollama_thinker_and_panel_with_scripted_verdicts(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older, newer = reversed_decisions(conn)
    earlier = conn.execute(
        "INSERT INTO dream_cycle_runs (run_type) VALUES ('scheduled') RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "INSERT INTO dream_cycle_candidates (run_id, candidate_json, final_verdict,"
        " evaluator_a_verdict, evaluator_a_reasoning) VALUES (%s, %s, 'REJECTED', 'reject',"
        " 'speculation without evidence')",
        [earlier, Jsonb({"draft": {"title": "Queues everywhere"}})],
    )
    with running_fake_ollama() as fake:
        fake.script_chat(
            _thinker_answer(older, newer),
            _verdict("accept", "the newer decision states the reversal"),
            _verdict("accept", "rate limits matter to ledgerline"),
            _verdict("accept", "quoted verbatim"),
            _verdict("reject", "the edge list is thin"),
        )
        client = DreamOllama(fake.host, DEFAULT_CHAT_MODEL, timeout_s=10, budget=50)
        report = run(conn, tmp_path, ollama=client)
        requests = fake.chat_requests

    assert report.backend == f"ollama:{DEFAULT_CHAT_MODEL}"
    assert len(requests) == 5 and report.calls == 5 and report.tokens > 0
    thinker, *evaluators = (r.body for r in requests)
    assert "candidates" in thinker["format"]["properties"]
    assert all(set(e["format"]["properties"]) == {"verdict", "reasoning"} for e in evaluators)
    prompt = thinker["messages"][1]["content"]
    assert older in prompt and newer in prompt and "contradiction_hunt" in prompt
    assert "speculation without evidence" in prompt  # feedback injected
    assert [e["messages"][0]["content"].split(":")[0] for e in evaluators] == [
        "You are the Skeptic",
        "You are the User Advocate",
        "You are the Epistemologist",
        "You are the Methodologist",
    ]
    assert (report.accepted, report.superseded) == (1, 1)
    row = conn.execute(
        "SELECT final_verdict, evaluator_d_verdict, evaluator_d_reasoning"
        " FROM dream_cycle_candidates WHERE run_id = %s",
        [report.run_id],
    ).fetchone()
    assert row == ("ACCEPTED", "reject", "the edge list is thin")
    assert conn.execute("SELECT status FROM memories WHERE id = %s", [older]).fetchone() == (
        "superseded",
    )
    run_row = conn.execute(
        "SELECT backend, llm_calls, llm_tokens FROM dream_cycle_runs WHERE id = %s",
        [report.run_id],
    ).fetchone()
    assert run_row == (report.backend, 5, report.tokens)


def test_the_call_budget_bounds_a_run(conn: psycopg.Connection, tmp_path: Path) -> None:
    older, newer = reversed_decisions(conn)
    with running_fake_ollama() as fake:
        fake.script_chat(_thinker_answer(older, newer), _verdict("accept", "fine"))
        client = DreamOllama(fake.host, DEFAULT_CHAT_MODEL, timeout_s=10, budget=2)
        report = run(conn, tmp_path, ollama=client)
        assert len(fake.chat_requests) == 2
    # One accept and three evaluators without a call left: deferred, nothing stored.
    assert (report.calls, report.deferred, report.created) == (2, 1, 0)
    reasoning = conn.execute(
        "SELECT evaluator_b_reasoning FROM dream_cycle_candidates WHERE run_id = %s",
        [report.run_id],
    ).fetchone()[0]  # type: ignore[index]
    assert "budget" in reasoning


def test_a_failing_model_call_yields_no_candidate(conn: psycopg.Connection, tmp_path: Path) -> None:
    reversed_decisions(conn)
    with running_fake_ollama() as fake:
        fake.script_chat("this is not JSON")
        client = DreamOllama(fake.host, DEFAULT_CHAT_MODEL, timeout_s=10, budget=10)
        report = run(conn, tmp_path, ollama=client)
    assert (report.calls, report.candidates, report.created) == (1, 0, 0)
    assert report.errors and "contradiction_hunt" in report.errors[0]
