"""The search pipeline end to end on a real database, as the read-only role."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta

import numpy as np
import psycopg
import pytest

from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.reinforcement.fold import fold_retrievals
from memory_pipeline_tests.support.memories import (
    NOW,
    add_memory,
    add_task,
    link,
)
from serving.context_pack import context
from serving.models import SearchFilters
from serving.search import QueryEmbedder, search

BGE = "ollama:bge-m3:1024"


@pytest.fixture(scope="module")
def embedder() -> QueryEmbedder:
    e = QueryEmbedder("http://127.0.0.1:9")  # never reached: the local space needs no server
    e.embed(LOCAL_SPACE, "warm up")
    return e


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    with connect(reader_url, autocommit=True) as conn:
        yield conn


def embed_all(conn: psycopg.Connection) -> None:
    """What the embedding asset does: passages, their full-text entries and vectors."""
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))


def ids(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(h.id) for h in response.results if not h.temporal_context]


def run(reader: psycopg.Connection, embedder: QueryEmbedder, query: str, **kw):  # type: ignore[no-untyped-def]
    kw.setdefault("temporal_context", False)
    return search(reader, query, embedder=embedder, now=NOW, **kw)


def test_bm25_finds_any_query_term(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    wanted = add_memory(conn, "Flaky migration test", "The CI job hit a deadlock in migrations.")
    add_memory(conn, "Garden", "Tomatoes need sun.")
    embed_all(conn)
    result = run(reader, embedder, "why was the migration deadlock happening", channels=("bm25",))
    assert ids(result) == [wanted]
    assert result.results[0].bm25_rank == 1 and result.results[0].vector_rank is None


def test_vector_channel_finds_a_paraphrase_without_shared_words(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    wanted = add_memory(conn, "Rate limits", "Throttle API callers to 100 requests per minute.")
    add_memory(conn, "Garden", "Tomatoes need plenty of sun and water.")
    add_memory(conn, "Backups", "The nightly dump is encrypted with AES-GCM.")
    embed_all(conn)
    result = run(reader, embedder, "how do we cap how often clients can hit the API")
    assert ids(result)[0] == wanted
    assert result.space == LOCAL_SPACE


def test_spaces_are_never_mixed(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    local = add_memory(conn, "Rate limits", "Throttle API callers to 100 requests per minute.")
    embed_all(conn)
    other = add_memory(
        conn, "Quotas", "Quota enforcement for API requests.", partition_day="2026-10-01"
    )
    # Its passages get vectors in bge-m3 only (the bge space stays incomplete, never served).
    embed_window(conn, Bge(), date(2026, 10, 1), date(2026, 10, 2))
    result = run(reader, embedder, "throttle", channels=("vector",))
    assert ids(result) == [local]  # the bge-only memory is invisible to the MiniLM space
    assert other not in ids(run(reader, embedder, "quota enforcement", channels=("vector",)))


class Bge:
    """A stand-in bge-m3 embedder (constant vectors): only the space and width matter here."""

    space, dims, window_tokens = BGE, 1024, 8192

    def count_tokens(self, texts):  # type: ignore[no-untyped-def]
        return [len(t) // 3 + 1 for t in texts]

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return np.ones((len(texts), 1024), dtype=np.float32) / 32


def test_prefix_stability(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    for i in range(15):
        add_memory(conn, f"Deploy note {i}", f"Deploy the service with step {i} of the runbook.")
    embed_all(conn)
    short = ids(run(reader, embedder, "deploy runbook step", limit=3))
    long = ids(run(reader, embedder, "deploy runbook step", limit=10))
    assert len(short) == 3 and long[:3] == short


def test_exact_duplicates_collapse(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    a = add_memory(conn, "Redis dropped", "We dropped Redis for rate limits.")
    add_memory(conn, "Redis dropped (copy)", "We dropped Redis for rate limits.", depth_score=0.1)
    embed_all(conn)
    result = run(reader, embedder, "dropped redis rate limits", channels=("bm25",))
    assert ids(result) == [a]


def test_soft_diversity_across_tasks(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    task, turns = add_task(conn)
    same = []
    for i in range(3):
        mid = add_memory(
            conn,
            f"Postgres tuning {i}",
            f"Postgres tuning {i}: work_mem and shared_buffers.",
            depth_score=0.9,
        )
        link(conn, mid, task, [turns[i]], first=i)
        same.append(mid)
    # As relevant as the third of `same` (a little less deep), but from another task.
    other = add_memory(
        conn,
        "Postgres tuning 9",
        "Postgres tuning 9: work_mem and shared_buffers.",
        depth_score=0.45,
    )
    weak = add_memory(
        conn, "Postgres vacuum", "Postgres autovacuum thresholds were too lazy.", depth_score=0.0
    )
    embed_all(conn)
    result = ids(
        run(reader, embedder, "postgres tuning work_mem shared_buffers", channels=("bm25",))
    )
    assert set(result[:2]) <= set(same)
    # The task's third result pays the diversity penalty but still beats a weak match.
    assert result[2:] == [other, next(m for m in same if m not in result[:2]), weak]


def test_temporal_neighbours_are_appended_and_marked(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    top = add_memory(conn, "Kernel upgrade", "Upgraded the homelab kernel to 6.12.")
    near = add_memory(
        conn, "Router", "Replaced the router fan.", created_at=NOW + timedelta(hours=5)
    )
    add_memory(conn, "Far", "Unrelated later work.", created_at=NOW + timedelta(days=3))
    embed_all(conn)
    result = run(reader, embedder, "kernel upgrade", channels=("bm25",), temporal_context=True)
    assert [str(h.id) for h in result.results] == [top, near]
    assert [h.temporal_context for h in result.results] == [False, True]


def test_filters(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    d = add_memory(
        conn,
        "Cache decision",
        "Cache the tariff table.",
        type="decision",
        project="billing",
        source_type="codex",
        tags=["perf"],
    )
    i = add_memory(
        conn,
        "Cache insight",
        "Cache misses came from tz.",
        type="insight",
        mem_class="procedural",
        project="homelab",
        source_type="claude_code",
        created_at=NOW - timedelta(days=40),
    )
    s = add_memory(conn, "Cache superseded", "Old cache plan.", status="superseded")
    a = add_memory(conn, "Cache archived", "Archived cache note.", status="archived")
    q = "cache"

    embed_all(conn)

    def found(**f: object) -> set[str]:
        return set(ids(run(reader, embedder, q, channels=("bm25",), filters=SearchFilters(**f))))

    assert found() == {d, i}  # superseded and archived are excluded by default
    assert found(types=["decision"]) == {d}
    assert found(mem_classes=["procedural"]) == {i}
    assert found(projects=["homelab"]) == {i}
    assert found(sources=["codex"]) == {d}
    assert found(tags=["perf"]) == {d}
    assert found(since=NOW - timedelta(days=1)) == {d}
    assert found(until=NOW - timedelta(days=1)) == {i}
    assert found(statuses=["superseded", "archived"]) == {s, a}
    hit = run(
        reader, embedder, q, channels=("bm25",), filters=SearchFilters(statuses=["superseded"])
    ).results[0]
    assert hit.components["superseded_penalty"] == -0.20


def test_results_carry_provenance_to_native_ids(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    task, turns = add_task(conn, native_id="019a-thread-native")
    mid = add_memory(conn, "Retry policy", "Use exponential backoff for the webhook retries.")
    link(conn, mid, task, turns[1:3], first=1)
    embed_all(conn)
    hit = run(reader, embedder, "webhook retries backoff", channels=("bm25",)).results[0]
    (chain,) = hit.provenance
    assert chain.native_task_id == "019a-thread-native" and chain.source == "codex"
    assert [(t.ordinal, t.native_turn_id, t.native_message_ids) for t in chain.turns] == [
        (1, "turn-1", ["msg-1"]),
        (2, "turn-2", ["msg-2"]),
    ]


def test_reinforcement_is_recorded_by_serving_and_folded_by_the_pipeline(
    conn, reader, embedder
) -> None:  # type: ignore[no-untyped-def]
    mid = add_memory(conn, "Backup key", "Losing the backup key loses the backups.")
    embed_all(conn)
    run(reader, embedder, "backup key", channels=("bm25",), record_surface="cli")
    assert conn.execute("SELECT access_count FROM memories WHERE id = %s", [mid]).fetchone() == (0,)
    assert fold_retrievals(conn) == (1, 1)
    count, last = conn.execute(
        "SELECT access_count, last_accessed_at FROM memories WHERE id = %s", [mid]
    ).fetchone()
    assert count == 1 and last is not None
    assert fold_retrievals(conn) == (0, 0)  # idempotent


def test_context_pack_respects_the_budget_and_never_packs_corrections(
    conn, reader, embedder
) -> None:  # type: ignore[no-untyped-def]
    correction = add_memory(
        conn,
        "Vacuum correction",
        "Agent did: ran VACUUM FULL on prod. User expected: plain VACUUM.",
        type="correction_episode",
        mem_class="episodic",
    )
    long = add_memory(conn, "Vacuum runbook", "Run VACUUM ANALYZE nightly. " * 200)
    short = add_memory(conn, "Vacuum insight", "Autovacuum was lagging behind the inserts.")
    embed_all(conn)
    everything = run(reader, embedder, "vacuum", channels=("bm25",))
    assert correction in ids(everything)  # searchable on request...
    pack = context(reader, "vacuum", 300, embedder=None)
    packed = [str(i.memory_id) for i in pack.items]
    assert correction not in packed  # ...but never packed as steering context
    assert set(packed) <= {long, short} and packed
    assert pack.tokens_used <= 300 and pack.truncated
    assert any(i.truncated for i in pack.items)
