"""Recompute the corpus statistics BM25 ranking needs (sql/012, sql/013).

Search ranks passages, so the passage statistics are the ones it reads; the memory-level ones
are kept for whole-memory ranking by later stages.
"""

from __future__ import annotations

import psycopg


def refresh_bm25_statistics(conn: psycopg.Connection) -> tuple[int, int, int]:
    """Replace the statistics in one transaction; returns (memories, passages, distinct
    lexemes over passages)."""
    with conn.transaction():
        conn.execute(
            "TRUNCATE search_term_stats, search_corpus_stats,"
            " passage_term_stats, passage_corpus_stats"
        )
        conn.execute(
            "INSERT INTO search_term_stats (lexeme, ndoc)"
            " SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM memories"
            " WHERE search_vector IS NOT NULL')"
        )
        memories = conn.execute(
            "INSERT INTO search_corpus_stats (documents, avg_lexemes)"
            " SELECT count(*), coalesce(avg(length(search_vector)), 0) FROM memories"
            " RETURNING documents"
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO passage_term_stats (lexeme, ndoc)"
            " SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM memory_passages')"
        )
        passages, lexemes = conn.execute(
            "INSERT INTO passage_corpus_stats (documents, avg_lexemes)"
            " SELECT count(*), coalesce(avg(length(search_vector)), 0) FROM memory_passages"
            " RETURNING documents, (SELECT count(*) FROM passage_term_stats)"
        ).fetchone()  # type: ignore[misc]
    return int(memories), int(passages), int(lexemes)
