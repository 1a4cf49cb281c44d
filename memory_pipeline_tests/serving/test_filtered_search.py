"""Search under a narrowing filter: when few memories pass it, both channels rank those
memories' passages exactly instead of walking postings or the HNSW graph until enough survive
(issue 12: a one-project filter read tens of thousands of rows at 100K memories)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import numpy as np
import psycopg
import pytest

from memory_pipeline.bench.search import bm25_exhaustive
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline_tests.support.memories import add_memory
from serving import rerank_weights as W
from serving.models import SearchFilters
from serving.search import bm25_channel, filtered_memories, vector_channel


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
    monkeypatch.setattr(W, "BM25_POSTINGS_PER_LEXEME", 1)  # 4 postings read under a filter
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
