"""Search under a narrowing filter: when few memories pass it, both channels rank those
memories' passages exactly instead of walking postings or the HNSW graph until enough survive
(issue 12: a one-project filter read tens of thousands of rows at 100K memories). A filter on
one type or source walks that value's own partial HNSW index, and every vector carries the
memory columns filters test (sql/023)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import numpy as np
import psycopg
import pytest
from psycopg import sql

from memory_pipeline import tuning
from memory_pipeline.bench.search import bm25_exhaustive
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline_tests.support.memories import add_memory
from serving.models import SearchFilters
from serving.search import bm25_channel, filtered_memories, vector_channel, vector_statement


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    with connect(reader_url, autocommit=True) as conn:
        yield conn


def index(conn: psycopg.Connection) -> None:
    """Passages, their postings and vectors, statistics, and planner statistics."""
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    refresh_bm25_statistics(conn)
    conn.execute("ANALYZE memories")


def test_a_narrow_filter_finds_a_match_behind_other_projects_best_postings(  # type: ignore[no-untyped-def]
    conn, reader, monkeypatch
) -> None:
    """Every best posting of "deploy" belongs to another project: walking postings read only
    those and found nothing for the filtered project; scoring its passages exactly finds its
    match, ranked as the exhaustive BM25 ranks it."""
    monkeypatch.setattr(tuning, "BM25_POSTINGS_PER_LEXEME", 1)  # 4 postings read under a filter
    for i in range(8):
        add_memory(conn, f"Deploy {i}", "Deploy. Deploy again. Deploy.", project="alpha")
    short = add_memory(conn, "Notes", "We deploy on Fridays.", project="beta")
    long = add_memory(
        conn,
        "Week",
        "On Monday the team met, reviewed the backlog, fixed two flaky tests and then"
        " decided to deploy the billing service after lunch.",
        project="beta",
    )
    add_memory(conn, "Garden", "Tomatoes need sun.", project="beta")
    index(conn)
    filters = SearchFilters(projects=["beta"])
    with reader.transaction():
        assert filtered_memories(reader, filters) is not None
        got = bm25_channel(reader, "deploy", filters).memories
        ref = bm25_exhaustive(reader, "deploy", filters).memories
    assert got == [short, long] == ref
    with reader.transaction():
        assert filtered_memories(reader, SearchFilters()) is None  # no filter: postings


def test_the_exact_vector_path_honours_every_filter_and_orders_by_cosine(conn, reader) -> None:  # type: ignore[no-untyped-def]
    texts = [
        "The nightly backup is encrypted with AES-GCM before upload.",
        "Backups are copied offsite every night over WireGuard.",
        "The router firmware updates itself on Sundays.",
        "Tomatoes need a lot of sun on the balcony.",
    ]
    beta = [add_memory(conn, f"B{i}", t, project="beta") for i, t in enumerate(texts)]
    add_memory(conn, "Secret", texts[0], project="beta", private=True)
    add_memory(conn, "Other", texts[0], project="alpha")
    index(conn)
    query = get_minilm().embed(["how are the backups protected"])[0]
    filters = SearchFilters(projects=["beta"])
    with reader.transaction():
        n = filtered_memories(reader, filters)
        assert n is not None
        exact = vector_channel(reader, LOCAL_SPACE, 384, query, filters, n).memories
    vectors = get_minilm().embed(texts)
    cosine = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    assert exact == [beta[i] for i in np.argsort(-cosine)]


def test_vectors_carry_their_memorys_filter_columns_and_follow_its_changes(conn) -> None:  # type: ignore[no-untyped-def]
    """The columns the vector channel filters on are copied from the memory when a vector is
    written and follow every later change of the memory; a writer cannot set them wrong."""
    mid = add_memory(conn, "Backups", "The nightly backup is encrypted.", project="beta")
    add_memory(conn, "Other", "Tomatoes need sun.", project="alpha", source_type="codex")
    index(conn)

    def columns() -> set[tuple[object, ...]]:
        return set(
            conn.execute(
                "SELECT e.memory_id::text, e.memory_type, e.memory_source_type,"
                " e.memory_project, e.memory_created_at FROM passage_embeddings e"
                " JOIN memory_passages p ON p.id = e.passage_id"
                " JOIN memories m ON m.id = p.memory_id"
                " WHERE (e.memory_id, e.memory_type, e.memory_source_type, e.memory_project,"
                "  e.memory_created_at) IS DISTINCT FROM"
                " (m.id, m.type, m.source_type, m.project, m.created_at)"
            ).fetchall()
        )

    assert conn.execute("SELECT count(*) FROM passage_embeddings").fetchone()[0] == 2
    assert columns() == set()
    conn.execute(
        "UPDATE memories SET project = 'gamma', type = 'decision', source_type = 'chat_import',"
        " created_at = created_at - interval '3 days' WHERE id = %s",
        [mid],
    )
    assert columns() == set()
    conn.execute(
        "UPDATE passage_embeddings SET memory_project = 'wrong', memory_type = 'segment'"
    )  # a careless writer
    assert columns() == set()
    row = conn.execute(
        "SELECT memory_project, memory_type FROM passage_embeddings WHERE memory_id = %s", [mid]
    ).fetchone()
    assert row == ("gamma", "decision")


def test_every_space_has_a_partial_index_per_value_tuning_lists(conn) -> None:  # type: ignore[no-untyped-def]
    """tuning.VECTOR_PARTIAL_INDEXES is what the code believes sql/023 built: each space has
    exactly one partial HNSW index per listed value, with the predicate the channel writes."""
    spaces = [r[0] for r in conn.execute("SELECT name FROM embedding_spaces ORDER BY name")]
    found = {
        r[0]
        for r in conn.execute(
            "SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
            " WHERE i.indrelid = 'passage_embeddings'::regclass AND a.amname = 'hnsw'"
        )
    }
    expected = {f"(space = '{space}'::text)" for space in spaces} | {
        f"((space = '{space}'::text) AND ({column} = '{value}'::text))"
        for space in spaces
        for column, values in tuning.VECTOR_PARTIAL_INDEXES.items()
        for value in values
    }
    assert found == expected


def _plan(reader: psycopg.Connection, filters: SearchFilters, query: np.ndarray) -> str:
    """The vector channel's plan for `filters`, with sorting and sequential scans priced out
    so that on a tiny table the planner still shows which index can serve the statement."""
    with reader.transaction():
        reader.execute("SET LOCAL enable_seqscan = off")
        reader.execute("SET LOCAL enable_sort = off")
        statement, params = vector_statement(reader, LOCAL_SPACE, 384, query, filters)
        rows = reader.execute(sql.SQL("EXPLAIN ") + statement, params).fetchall()
    return "\n".join(r[0] for r in rows)


def test_each_filter_walks_the_vector_index_meant_for_it(conn, reader) -> None:  # type: ignore[no-untyped-def]
    """One type or one source: that value's partial index. Several types, or a type without
    its own index: the space's whole index. A filter few memories pass: no HNSW index at all
    (an exact scan), unless it is only a partial index's own value."""
    for i in range(3):
        add_memory(conn, f"D{i}", f"Decision {i} about backups.", type="decision")
        add_memory(conn, f"S{i}", f"Segment {i} about backups.", type="segment")
    index(conn)
    query = get_minilm().embed(["backups"])[0]
    main = "passage_embeddings_minilm_384_hnsw"
    for filters, index_name in (
        (SearchFilters(), main),
        (SearchFilters(types=["decision"]), "passage_embeddings_minilm_384_type_decision_hnsw"),
        (SearchFilters(sources=["codex"]), "passage_embeddings_minilm_384_source_codex_hnsw"),
        (SearchFilters(types=["decision", "segment"]), None),  # few memories: exact
        (SearchFilters(projects=["beta"]), None),
        (SearchFilters(tags=["backups"]), None),
    ):
        plan = _plan(reader, filters, query)
        if index_name is None:
            assert "hnsw" not in plan, (filters, plan)
        else:
            assert f"Index Scan using {index_name} " in plan, (filters, plan)
    # Past the exact path's threshold, a filter without a partial index walks the whole index.
    tuning_exact = tuning.SEARCH_EXACT_FILTERED_MEMORIES
    try:
        tuning.SEARCH_EXACT_FILTERED_MEMORIES = 0
        plan = _plan(reader, SearchFilters(types=["decision", "segment"]), query)
        assert f"Index Scan using {main} " in plan, plan
        # A partial index's value with another narrowing filter still uses that index.
        plan = _plan(reader, SearchFilters(types=["decision"], projects=["beta"]), query)
        assert "type_decision_hnsw" in plan, plan
    finally:
        tuning.SEARCH_EXACT_FILTERED_MEMORIES = tuning_exact


def test_every_vector_walk_returns_what_the_filter_allows_nearest_first(  # type: ignore[no-untyped-def]
    conn, reader, monkeypatch
) -> None:
    """The partial index, the exact scan from the vectors' own columns and the exact scan from
    memories all return the passing memories in cosine order, and none that fails a memory
    condition the vectors do not carry (private, superseded, a duplicate)."""
    texts = [
        "The nightly backup is encrypted with AES-GCM before upload.",
        "Backups are copied offsite every night over WireGuard.",
        "The router firmware updates itself on Sundays.",
        "Tomatoes need a lot of sun on the balcony.",
    ]
    kept = [
        add_memory(conn, f"D{i}", t, type="decision", project="beta", tags=["ops"])
        for i, t in enumerate(texts)
    ]
    add_memory(conn, "Secret", texts[0], type="decision", project="beta", private=True)
    add_memory(conn, "Old", texts[0], type="decision", project="beta", status="superseded")
    add_memory(conn, "Copy", texts[1], type="decision", project="beta", duplicate_of=kept[1])
    add_memory(conn, "Insight", texts[0], type="insight", project="beta", tags=["ops"])
    add_memory(conn, "Elsewhere", texts[0], type="decision", project="alpha")
    index(conn)
    query = get_minilm().embed(["how are the backups protected"])[0]
    vectors = get_minilm().embed(texts)
    cosine = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    expected = [kept[i] for i in np.argsort(-cosine)]
    for filters, exact_limit in (
        (SearchFilters(types=["decision"], projects=["beta"]), 0),  # partial index
        (SearchFilters(types=["decision"], projects=["beta"]), 6000),  # exact, vectors first
        (SearchFilters(types=["decision"], tags=["ops"]), 6000),  # exact, vectors first
        (SearchFilters(types=["decision"], tags=["ops"]), 0),  # partial index
    ):
        monkeypatch.setattr(tuning, "SEARCH_EXACT_FILTERED_MEMORIES", exact_limit)
        with reader.transaction():
            got = vector_channel(reader, LOCAL_SPACE, 384, query, filters).memories
        assert got == expected, (filters, exact_limit)
    monkeypatch.setattr(tuning, "SEARCH_EXACT_FILTERED_MEMORIES", 6000)
    with reader.transaction():  # only a memory column narrows: from memories to vectors
        got = vector_channel(reader, LOCAL_SPACE, 384, query, SearchFilters(tags=["ops"]))
    assert kept[0] in got.memories and len(got.memories) == 5
