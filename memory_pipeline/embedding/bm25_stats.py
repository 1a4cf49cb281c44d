"""Recompute the corpus statistics BM25 ranking needs (sql/012, sql/013), and keep the
impact-ordered postings (sql/021) in step with them.

Search ranks passages, so the passage statistics are the ones it reads; the memory-level ones
are kept for whole-memory ranking by later stages. The postings are maintained by triggers as
passages change; their stored impacts depend on BM25's k1, b and title weight and on the mean
passage length, so they are rebuilt here when one of those changed (the mean length only when
it drifted by more than BM25_POSTINGS_AVGDL_DRIFT, as a growing corpus moves it a little every
day and a rebuild rewrites every posting).
"""

from __future__ import annotations

import psycopg

from memory_pipeline import tuning


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
        passages, lexemes, avgdl = conn.execute(
            "INSERT INTO passage_corpus_stats (documents, avg_lexemes)"
            " SELECT count(*), coalesce(avg(length(search_vector)), 0) FROM memory_passages"
            " RETURNING documents, (SELECT count(*) FROM passage_term_stats), avg_lexemes"
        ).fetchone()  # type: ignore[misc]
        refresh_postings(conn, float(avgdl))
    return int(memories), int(passages), int(lexemes)


def refresh_postings(conn: psycopg.Connection, avgdl: float) -> bool:
    """Rebuild every posting when the parameters its impacts were computed with are out of
    date (or passages have none); returns whether it rebuilt. Idempotent."""
    want = (
        tuning.BM25_K1,
        tuning.BM25_B,
        tuning.BM25_TITLE_TF,
        max(avgdl, 1.0),
    )  # search's floor of 1
    k1, b, title_tf, stored = conn.execute(
        "SELECT k1, b, title_tf, avgdl FROM passage_postings_params"
    ).fetchone()  # type: ignore[misc]
    missing = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM memory_passages)"
        " AND NOT EXISTS (SELECT 1 FROM passage_postings)"
    ).fetchone()[0]  # type: ignore[index]
    drift = abs(stored - want[3]) / want[3]
    if (k1, b, title_tf) == want[:3] and drift <= tuning.BM25_POSTINGS_AVGDL_DRIFT and not missing:
        return False
    conn.execute(
        "UPDATE passage_postings_params SET k1 = %s, b = %s, title_tf = %s, avgdl = %s,"
        " rebuilt_at = now()",
        list(want),
    )
    conn.execute("TRUNCATE passage_postings")
    conn.execute("SELECT passage_postings_of(ARRAY(SELECT id FROM memory_passages))")
    return True
