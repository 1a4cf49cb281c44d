"""BM25 corpus statistics: right after every step that adds passages, and not rewritten when
nothing changed (a second run with nothing new changes no row)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline_tests.dream.helpers import reversed_decisions, run
from memory_pipeline_tests.support.bm25 import cut_passages
from memory_pipeline_tests.support.memories import add_memory
from memory_pipeline_tests.support.table_hashes import table_hashes

STATS = (
    "search_term_stats",
    "search_corpus_stats",
    "passage_term_stats",
    "passage_corpus_stats",
    "passage_postings",
    "passage_postings_params",
)


def stats(url: str) -> dict[str, str]:
    every = table_hashes(url)
    return {t: every[t] for t in STATS}


def test_a_refresh_with_nothing_new_rewrites_no_row(conn: psycopg.Connection, db_url: str) -> None:
    add_memory(conn, "Vacuum tuning", "Autovacuum settings for the events table.")
    add_memory(conn, "Kubelet", "The kubelet restarted after the events table filled.")
    cut_passages(conn)
    refresh_bm25_statistics(conn)
    before = stats(db_url)
    memories, passages, _ = refresh_bm25_statistics(conn)
    assert (memories, passages) == (2, 2)
    assert stats(db_url) == before


def test_a_refresh_writes_only_what_changed(conn: psycopg.Connection, db_url: str) -> None:
    add_memory(conn, "Vacuum tuning", "Autovacuum settings for the events table.")
    cut_passages(conn)
    refresh_bm25_statistics(conn)
    add_memory(conn, "Kubelet", "The kubelet restarted after the events table filled.")
    cut_passages(conn)
    refresh_bm25_statistics(conn)
    rows = dict(conn.execute("SELECT lexeme, ndoc FROM passage_term_stats").fetchall())
    assert rows["kubelet"] == 1 and rows["tabl"] == 2 and "autovacuum" in rows
    assert conn.execute("SELECT documents FROM passage_corpus_stats").fetchone() == (2,)
    conn.execute("DELETE FROM memories WHERE title = 'Kubelet'")
    refresh_bm25_statistics(conn)
    rows = dict(conn.execute("SELECT lexeme, ndoc FROM passage_term_stats").fetchall())
    assert "kubelet" not in rows and rows["tabl"] == 1
    assert conn.execute("SELECT documents FROM search_corpus_stats").fetchone() == (1,)


def test_the_dream_cycle_leaves_the_statistics_current(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    """The dream cycle stores memories after the statistics were refreshed (`run` refreshes them
    in its maintenance job, before the dream job): it brings them up to date itself, so they are
    right after the first run instead of after the second."""
    reversed_decisions(conn)
    cut_passages(conn)
    refresh_bm25_statistics(conn)
    report = run(conn, tmp_path)
    assert report.created == 1
    after_dream = stats(db_url)
    refresh_bm25_statistics(conn)
    assert stats(db_url) == after_dream
    (documents,) = conn.execute("SELECT documents FROM search_corpus_stats").fetchone()  # type: ignore[misc]
    assert documents == 3
