"""The BM25 channel over the impact-ordered postings (sql/021): same ranking as the exhaustive
scoring it replaced, postings kept in step with passages, rebuilt only when needed."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from memory_pipeline import tuning
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline_tests.support.bm25 import bm25, cut_passages, reference
from memory_pipeline_tests.support.memories import add_memory


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    with connect(reader_url, autocommit=True) as conn:
        yield conn


def postings(conn: psycopg.Connection, memory_id: str) -> int:
    return conn.execute(
        "SELECT count(*) FROM passage_postings pp JOIN memory_passages p ON p.id = pp.passage_id"
        " WHERE p.memory_id = %s",
        [memory_id],
    ).fetchone()[0]  # type: ignore[index]


def test_ranking_is_the_exhaustive_bm25_ranking(conn, reader) -> None:  # type: ignore[no-untyped-def]
    """Term frequency, a title occurrence, rarity and length decide the order, as before."""
    title = add_memory(conn, "Vacuum tuning", "Autovacuum settings for the events table.")
    three = add_memory(conn, "Notes", "Vacuum ran. Vacuum again. Then vacuum the index.")
    one = add_memory(conn, "Notes two", "We ran vacuum once on the events table last week.")
    rare = add_memory(conn, "Kubelet", "The kubelet restarted after the events table filled.")
    add_memory(conn, "Garden", "Tomatoes need sun.")
    cut_passages(conn)
    refresh_bm25_statistics(conn)

    # Three occurrences in a short passage (tf 3) beat one in the title (tf 2, weight A), which
    # beats one in a longer passage: k1 = 1.2, b = 0.75 over distinct-lexeme lengths 4, 6, 9.
    assert bm25(reader, "vacuum") == [three, title, one]
    assert bm25(reader, "vacuum") == reference(reader, "vacuum")
    # The rare word outweighs the common one; both count.
    query = "kubelet vacuum events table"
    assert bm25(reader, query)[0] == rare
    assert bm25(reader, query) == reference(reader, query)
    assert bm25(reader, "vacuum", types=["segment"]) == []


def test_a_common_words_unread_tail_does_not_hide_a_rare_match(conn, reader, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With two postings read per lexeme, the passage holding the rare word is still found
    and scored over both words (exact rescoring), ahead of passages with the common word only."""
    monkeypatch.setattr(tuning, "BM25_POSTINGS_PER_LEXEME", 2)
    common = [
        add_memory(conn, f"Deploy {i}", "We deploy on Fridays. Deploy again.") for i in range(6)
    ]
    both = add_memory(conn, "Rollout", "The canary deploy used the zephyrine flag.")
    cut_passages(conn)
    refresh_bm25_statistics(conn)
    got = bm25(reader, "deploy zephyrine")
    assert got[0] == both
    assert set(got[1:]) <= set(common) and len(got) == 3


def test_postings_follow_passages_and_go_with_a_deleted_memory(conn, reader) -> None:  # type: ignore[no-untyped-def]
    kept = add_memory(conn, "Backups", "Nightly pg_dump encrypted with AES-GCM.")
    gone = add_memory(conn, "Secret plan", "The quartzfield migration happens on Monday.")
    cut_passages(conn)
    assert postings(conn, gone) > 0
    assert bm25(reader, "quartzfield") == [gone]  # searchable before any statistics refresh

    conn.execute(
        "UPDATE memories SET content = 'The obsidianlake migration.' WHERE id = %s", [gone]
    )
    cut_passages(conn)
    assert bm25(reader, "quartzfield") == []
    assert bm25(reader, "obsidianlake") == [gone]

    conn.execute("DELETE FROM memories WHERE id = %s", [gone])
    assert (
        conn.execute(
            "SELECT count(*) FROM passage_postings WHERE lexeme = 'obsidianlak'"
        ).fetchone()[0]
        == 0
    )  # type: ignore[index]
    assert postings(conn, kept) > 0


def test_refresh_rebuilds_postings_only_when_their_parameters_changed(conn) -> None:  # type: ignore[no-untyped-def]
    add_memory(conn, "Backups", "Nightly pg_dump encrypted with AES-GCM.")
    cut_passages(conn)
    refresh_bm25_statistics(conn)  # avgdl moved from 1 to the corpus mean: rebuilt
    rebuilt = conn.execute("SELECT rebuilt_at FROM passage_postings_params").fetchone()[0]  # type: ignore[index]
    assert rebuilt is not None
    before = conn.execute("SELECT lexeme, impact FROM passage_postings ORDER BY 1").fetchall()
    refresh_bm25_statistics(conn)
    assert conn.execute("SELECT rebuilt_at FROM passage_postings_params").fetchone()[0] == rebuilt  # type: ignore[index]
    assert (
        conn.execute("SELECT lexeme, impact FROM passage_postings ORDER BY 1").fetchall() == before
    )
