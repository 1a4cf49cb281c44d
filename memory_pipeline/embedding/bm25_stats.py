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
from psycopg import sql

from memory_pipeline import tuning


def refresh_bm25_statistics(conn: psycopg.Connection) -> tuple[int, int, int]:
    """Bring the statistics up to date in one transaction; returns (memories, passages,
    distinct lexemes over passages).

    Only what differs is written: a lexeme whose count changed, one that appeared or vanished,
    a corpus row whose size or mean length moved. With nothing new, no row is touched (a second
    run changes nothing, `refreshed_at` included).
    """
    with conn.transaction():
        _sync_terms(
            conn,
            "search_term_stats",
            "SELECT search_vector FROM memories WHERE search_vector IS NOT NULL",
        )
        memories = _sync_corpus(conn, "search_corpus_stats", "memories")
        _sync_terms(conn, "passage_term_stats", "SELECT search_vector FROM memory_passages")
        passages = _sync_corpus(conn, "passage_corpus_stats", "memory_passages")
        lexemes, avgdl = conn.execute(
            "SELECT (SELECT count(*) FROM passage_term_stats), avg_lexemes"
            " FROM passage_corpus_stats"
        ).fetchone()  # type: ignore[misc]
        refresh_postings(conn, float(avgdl))
    return int(memories), int(passages), int(lexemes)


def _sync_terms(conn: psycopg.Connection, table: str, documents: str) -> None:
    """Make `table` (lexeme, ndoc) equal ts_stat over `documents`, writing only differences."""
    conn.execute("DROP TABLE IF EXISTS pg_temp.bm25_fresh_terms")
    conn.execute(
        sql.SQL(
            "CREATE TEMP TABLE bm25_fresh_terms ON COMMIT DROP AS"
            " SELECT word AS lexeme, ndoc FROM ts_stat({})"
        ).format(sql.Literal(documents))
    )
    conn.execute("ANALYZE pg_temp.bm25_fresh_terms")
    conn.execute(
        f"DELETE FROM {table} s WHERE NOT EXISTS"
        " (SELECT 1 FROM pg_temp.bm25_fresh_terms f WHERE f.lexeme = s.lexeme)"
    )
    conn.execute(
        f"INSERT INTO {table} AS s (lexeme, ndoc) SELECT lexeme, ndoc FROM pg_temp.bm25_fresh_terms"
        " ON CONFLICT (lexeme) DO UPDATE SET ndoc = EXCLUDED.ndoc WHERE s.ndoc <> EXCLUDED.ndoc"
    )
    conn.execute("DROP TABLE pg_temp.bm25_fresh_terms")


def _sync_corpus(conn: psycopg.Connection, table: str, documents: str) -> int:
    """The corpus row (documents, mean distinct lexemes), rewritten only when it changed."""
    conn.execute(
        f"INSERT INTO {table} AS s (singleton, documents, avg_lexemes)"
        f" SELECT true, count(*), coalesce(avg(length(search_vector)), 0) FROM {documents}"
        " ON CONFLICT (singleton) DO UPDATE SET documents = EXCLUDED.documents,"
        " avg_lexemes = EXCLUDED.avg_lexemes, refreshed_at = now()"
        " WHERE (s.documents, s.avg_lexemes) IS DISTINCT FROM"
        " (EXCLUDED.documents, EXCLUDED.avg_lexemes)"
    )
    return int(conn.execute(f"SELECT documents FROM {table}").fetchone()[0])  # type: ignore[index]


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
