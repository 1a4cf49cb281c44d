"""The Ollama judge against the local fake Ollama server: batched pairs with the verdict schema,
and a valid, a malformed and a late answer. A failed batch stores nothing, leaves its memories
unscanned, and the next run asks again."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from uuid import uuid4

from memory_pipeline import tuning
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.entities.store import extract_window
from memory_pipeline.relationships.judge_ollama import OllamaJudge
from memory_pipeline.relationships.judges import judge_for
from memory_pipeline.relationships.models import Memory, Pair
from memory_pipeline.relationships.store import discover_window
from memory_pipeline_tests.relationships.test_discovery import (
    BACKUPS,
    END,
    POSTGRES,
    REDIS,
    START,
    decision,
)
from memory_pipeline_tests.support.fake_ollama import (
    DEFAULT_CHAT_MODEL,
    Delay,
    running_fake_ollama,
)

T0 = datetime(2026, 10, 1, tzinfo=UTC)


def memory(title: str, days: int) -> Memory:
    return Memory(
        uuid4(), "decision", title, f"{title}, because reasons.", None, T0 + timedelta(days)
    )


def pairs() -> list[Pair]:
    return [
        Pair(memory("Drop Redis for limits", 20), memory("Use Redis for limits", 0), 0.6),
        Pair(memory("Limits need the buckets table", 21), memory("Create buckets table", 1), 0.5),
        Pair(memory("Lunch at noon", 22), memory("Backups at night", 2), 0.4),
    ]


def verdicts(*items: dict) -> str:
    return json.dumps({"verdicts": list(items)})


def test_valid_answer_gives_typed_directed_edges_from_one_batched_call() -> None:
    ps = pairs()
    with running_fake_ollama() as fake:
        fake.script_chat(
            verdicts(
                {"pair": 0, "relation": "contradicts", "evidence": "Drop Redis", "confidence": 0.9},
                {
                    "pair": 1,
                    "relation": "requires",
                    "direction": "newer_to_older",
                    "evidence": "needs the table",
                    "confidence": 0.8,
                },
                {"pair": 2, "relation": "supports", "confidence": 0.2},  # too unsure: dropped
            )
        )
        result = OllamaJudge(fake.host, DEFAULT_CHAT_MODEL, 5).judge(ps)
        assert len(fake.chat_requests) == 1  # three pairs, one call
        body = fake.chat_requests[0].body
    assert body["format"]["properties"]["verdicts"]["type"] == "array"
    assert "=== pair 2 ===" in body["messages"][1]["content"]
    got = {(e.source_id, e.target_id, e.relation_type, e.evidence) for e in result.edges}
    assert got == {
        (ps[0].newer.id, ps[0].older.id, "contradicts", "Drop Redis"),
        (ps[1].newer.id, ps[1].older.id, "requires", "needs the table"),
    }
    assert all(e.backend == f"ollama:{DEFAULT_CHAT_MODEL}" for e in result.edges)
    assert result.failures == []


def test_batches_are_cut_at_the_configured_size(monkeypatch) -> None:
    monkeypatch.setattr(tuning, "JUDGE_OLLAMA_BATCH_PAIRS", 2)
    with running_fake_ollama() as fake:
        fake.script_chat(verdicts(), verdicts())
        result = OllamaJudge(fake.host, DEFAULT_CHAT_MODEL, 5).judge(pairs())
        assert len(fake.chat_requests) == 2
    assert result.edges == [] and result.failures == []


def test_malformed_and_late_answers_fail_their_batch_only() -> None:
    ps = pairs()
    with running_fake_ollama() as fake:
        fake.script_chat("{not json")
        malformed = OllamaJudge(fake.host, DEFAULT_CHAT_MODEL, 5).judge(ps)
        fake.script_chat(verdicts({"pair": 7, "relation": "supports"}))
        wrong_pair = OllamaJudge(fake.host, DEFAULT_CHAT_MODEL, 5).judge(ps)
        fake.script_chat(Delay(3, then=verdicts()))
        late = OllamaJudge(fake.host, DEFAULT_CHAT_MODEL, 0.5).judge(ps)
    assert malformed.edges == [] and "malformed JSON" in malformed.failures[0].reason
    assert "not asked about" in wrong_pair.failures[0].reason
    assert late.edges == [] and "no answer within 0.5s" in late.failures[0].reason
    assert malformed.failed_memories == {i for p in ps for i in (p.newer.id, p.older.id)}


def test_a_failed_judgement_is_retried_by_the_next_run(conn) -> None:
    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    embed_window(conn, get_minilm(), START, END)
    extract_window(conn, START, END)
    with running_fake_ollama() as fake:
        judge = judge_for(fake.host, DEFAULT_CHAT_MODEL, 5)
        assert isinstance(judge, OllamaJudge)
        fake.script_chat("{not json")
        first = discover_window(conn, judge, START, END)
        assert first.failures and "contradicts" not in first.added
        assert first.added["derived_from"] == 2  # structural edges need no judge
        fake.script_chat(
            verdicts({"pair": 0, "relation": "contradicts", "evidence": "we drop Redis"})
        )
        second = discover_window(conn, judge, START, END)
        assert second.scanned == 2 and second.added == {"contradicts": 1}
        third = discover_window(conn, judge, START, END)
        assert third.scanned == 0 and len(fake.chat_requests) == 2  # nothing asked again
    row = conn.execute(
        "SELECT source_id::text, target_id::text, backend FROM memory_relationships"
        " WHERE relation_type = 'contradicts'"
    ).fetchone()
    assert row == (new, old, f"ollama:{DEFAULT_CHAT_MODEL}")


def test_a_models_reversal_without_a_shared_subject_entity_is_not_stored(conn) -> None:
    """Whatever the model says, `contradicts` needs a newer decision and a subject entity both
    memories mention (issue 34): the photo-share backups and the rate limiter share none."""
    decision(conn, *BACKUPS, days_ago=30)
    decision(
        conn,
        "Drop the nightly photo-share job and rate limit the API instead",
        "Decision: we drop the nightly job for the photo share and rate limit the API "
        "per key instead, because the bucket filled up.",
        days_ago=2,
    )
    embed_window(conn, get_minilm(), START, END)
    extract_window(conn, START, END)
    with running_fake_ollama() as fake:
        judge = judge_for(fake.host, DEFAULT_CHAT_MODEL, 5)
        fake.script_chat(verdicts({"pair": 0, "relation": "contradicts", "evidence": "drop"}))
        report = discover_window(conn, judge, START, END)
        assert report.pairs_judged == 1 and len(fake.chat_requests) == 1
    assert "contradicts" not in report.added and not report.failures


def test_without_a_reachable_model_the_offline_rules_judge() -> None:
    assert judge_for("http://127.0.0.1:9", DEFAULT_CHAT_MODEL, 1).name == "offline-rules"
    assert judge_for("http://127.0.0.1:9", None, 1).name == "offline-rules"
