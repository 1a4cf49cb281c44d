"""Recompute the corpus statistics BM25 ranking needs (sql/012_search_statistics.sql)."""

from __future__ import annotations

import psycopg


def refresh_bm25_statistics(conn: psycopg.Connection) -> tuple[int, int]:
    """Replace the statistics in one transaction; returns (memories, distinct lexemes)."""
    with conn.transaction():
        conn.execute("TRUNCATE search_term_stats, search_corpus_stats")
        conn.execute(
            "INSERT INTO search_term_stats (lexeme, ndoc)"
            " SELECT word, ndoc FROM ts_stat('SELECT search_vector FROM memories"
            " WHERE search_vector IS NOT NULL')"
        )
        row = conn.execute(
            "INSERT INTO search_corpus_stats (documents, avg_lexemes)"
            " SELECT count(*), coalesce(avg(length(search_vector)), 0) FROM memories"
            " RETURNING documents, (SELECT count(*) FROM search_term_stats)"
        ).fetchone()
    return int(row[0]), int(row[1])  # type: ignore[index]
