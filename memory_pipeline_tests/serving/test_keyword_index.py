"""The BM25 channel on the keyword index (tantivy; issue 12): PostgreSQL's ranking, kept in
step with passages by the pipeline, never used when it is not current."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline import tuning
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding import keyword_index as K
from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.support.bm25 import bm25, cut_passages, reference
from memory_pipeline_tests.support.memories import NOW, add_memory
from serving import keyword_index


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    keyword_index.use_home(tmp_path)
    yield tmp_path
    keyword_index.use_home(None)


def refresh(conn: psycopg.Connection, home: Path) -> K.KeywordIndexReport:
    refresh_bm25_statistics(conn)
    return K.refresh_keyword_index(conn, home)


def on_index(reader: psycopg.Connection, query: str = "anything") -> bool:
    with reader.transaction():
        return keyword_index.open_view(reader, query) is not None


def test_tantivys_bm25_constants_are_ours() -> None:
    """tantivy's BM25 has k1 1.2 and b 0.75 built in; ours live in tuning. If they
    ever differ the index must not be used (open_view checks the same pair)."""
    assert (tuning.BM25_K1, tuning.BM25_B) == K.TANTIVY_BM25
    assert K.title_tf() == tuning.BM25_TITLE_TF


def test_index_is_not_used_when_the_bm25_constants_differ(conn, reader, home, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    add_memory(conn, "Vacuum", "Vacuum the events table.")
    cut_passages(conn)
    refresh(conn, home)
    assert on_index(reader)
    monkeypatch.setattr(tuning, "BM25_K1", 1.5)
    assert not on_index(reader)


def test_ranking_equals_the_postgresql_channel(conn, reader, home) -> None:  # type: ignore[no-untyped-def]
    """Term frequency, a title occurrence, rarity and length decide, as in PostgreSQL."""
    title = add_memory(conn, "Vacuum tuning", "Autovacuum settings for the events table.")
    three = add_memory(conn, "Notes", "Vacuum ran. Vacuum again. Then vacuum the index.")
    one = add_memory(conn, "Notes two", "We ran vacuum once on the events table last week.")
    rare = add_memory(conn, "Kubelet", "The kubelet restarted after the events table filled.")
    add_memory(conn, "Garden", "Tomatoes need sun.")
    cut_passages(conn)
    report = refresh(conn, home)
    assert report.rebuilt and report.documents == 5
    assert on_index(reader, "vacuum")
    assert bm25(reader, "vacuum") == [three, title, one] == reference(reader, "vacuum")
    query = "kubelet vacuum events table"
    assert bm25(reader, query)[0] == rare
    assert bm25(reader, query) == reference(reader, query)
    assert bm25(reader, "the") == []  # a stop word has no lexeme


def test_filters_apply_on_the_index_path(conn, reader, home, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every filter holds: the narrowing ones inside the index, all of them in PostgreSQL
    (the index is read deeper while too few memories pass the status filter)."""
    monkeypatch.setattr(tuning, "BM25_RESCORE_PASSAGES", 2)
    insights = [
        add_memory(conn, f"Deploy {i}", "Deploy deploy on Fridays.", project="atlas", tags=["ops"])
        for i in range(5)
    ]
    decision = add_memory(
        conn,
        "Canary",
        "We deploy through a canary.",
        type="decision",
        source_type="chat_import",
        created_at=NOW - timedelta(days=3),
    )
    superseded = add_memory(conn, "Deploy old", "Deploy deploy by hand.", status="superseded")
    cut_passages(conn)
    refresh(conn, home)
    assert on_index(reader, "deploy")
    assert bm25(reader, "deploy", types=["decision"]) == [decision]
    assert bm25(reader, "deploy", sources=["chat_import"]) == [decision]
    assert set(bm25(reader, "deploy", projects=["atlas"])) == set(insights)
    assert set(bm25(reader, "deploy", tags=["ops", "x"])) == set(insights)
    day = timedelta(days=1)
    assert bm25(reader, "deploy", since=NOW - 4 * day, until=NOW - 2 * day) == [decision]
    assert bm25(reader, "deploy", since=NOW - 3 * day, until=NOW - 3 * day) == []  # until: <
    assert decision not in bm25(reader, "deploy", since=NOW - 2 * day)
    got = bm25(reader, "deploy")
    assert superseded not in got and set(got) == {*insights, decision}
    assert bm25(reader, "deploy") == reference(reader, "deploy")
    assert bm25(reader, "deploy", projects=["atlas"]) == reference(
        reader, "deploy", projects=["atlas"]
    )


def test_a_memory_whose_filtered_attributes_change_leaves_the_index_until_refreshed(
    conn, reader, home
) -> None:  # type: ignore[no-untyped-def]
    memory = add_memory(conn, "Canary", "We deploy through a canary.", project="atlas")
    cut_passages(conn)
    refresh(conn, home)
    conn.execute("UPDATE memories SET project = 'borealis' WHERE id = %s", [memory])
    assert not on_index(reader)  # its passage was renumbered: pending
    assert bm25(reader, "deploy", projects=["borealis"]) == [memory]
    report = K.refresh_keyword_index(conn, home)
    assert (report.added, report.removed, report.rebuilt) == (1, 1, False)
    assert on_index(reader)
    assert bm25(reader, "deploy", projects=["borealis"]) == [memory]
    assert bm25(reader, "deploy", projects=["atlas"]) == []
    conn.execute("UPDATE memories SET access_count = access_count + 1 WHERE id = %s", [memory])
    assert on_index(reader)  # other columns leave the index current


def test_missing_or_behind_index_falls_back_to_postgresql(conn, reader, home) -> None:  # type: ignore[no-untyped-def]
    first = add_memory(conn, "Backups", "Nightly pg_dump of the quartzfield database.")
    cut_passages(conn)
    assert not on_index(reader)  # never built
    assert bm25(reader, "quartzfield") == [first]
    refresh(conn, home)
    assert on_index(reader)
    later = add_memory(conn, "Restore", "Restore drill for quartzfield every month.")
    cut_passages(conn)  # committed, not yet indexed: found through PostgreSQL
    assert not on_index(reader)
    assert set(bm25(reader, "quartzfield")) == {first, later}
    refresh(conn, home)
    assert on_index(reader)
    assert set(bm25(reader, "quartzfield")) == {first, later}


def test_incremental_refresh_adds_changes_and_removes(conn, reader, home) -> None:  # type: ignore[no-untyped-def]
    kept = add_memory(conn, "Backups", "Nightly pg_dump encrypted with AES-GCM.")
    changed = add_memory(conn, "Plan", "The quartzfield migration happens on Monday.")
    gone = add_memory(conn, "Secret", "The amberwolf project is cancelled.")
    cut_passages(conn)
    refresh(conn, home)
    conn.execute(
        "UPDATE memories SET content = 'The obsidianlake migration.' WHERE id = %s", [changed]
    )
    conn.execute("DELETE FROM memories WHERE id = %s", [gone])
    cut_passages(conn)
    report = refresh(conn, home)
    assert not report.rebuilt and report.added == 1 and report.removed == 2
    assert report.documents == 2
    assert on_index(reader)
    assert bm25(reader, "quartzfield") == []
    assert bm25(reader, "obsidianlake") == [changed]
    assert bm25(reader, "amberwolf") == []
    assert bm25(reader, "pg_dump") == [kept]
    # A rerun with nothing new changes nothing, not even the generation.
    generation = conn.execute("SELECT generation FROM search_index_identity").fetchone()
    again = K.refresh_keyword_index(conn, home)
    assert (again.added, again.removed, again.rebuilt, again.reason) == (0, 0, False, "unchanged")
    assert conn.execute("SELECT generation FROM search_index_identity").fetchone() == generation


def test_an_index_of_another_database_is_not_used(conn, reader, home) -> None:  # type: ignore[no-untyped-def]
    add_memory(conn, "Backups", "Nightly pg_dump of the quartzfield database.")
    cut_passages(conn)
    refresh(conn, home)
    assert on_index(reader)
    conn.execute("UPDATE search_index_identity SET token = gen_random_uuid()")
    assert not on_index(reader)
    conn.execute("UPDATE search_index_identity SET generation = generation + 1")
    report = K.refresh_keyword_index(conn, home)  # its own directory: built anew
    assert report.rebuilt and on_index(reader)


def test_a_database_restored_over_its_index_gets_a_rebuilt_index(conn, reader, home) -> None:  # type: ignore[no-untyped-def]
    """A backup restored in place brings back an older passage and the generation of its day;
    the index on disk is newer, with the same document count. It must be rebuilt, not patched
    (patching would serve the newer words for the older passage)."""
    mid = add_memory(conn, "Backups", "Nightly pg_dump of the quartzfield database.")
    cut_passages(conn)
    refresh(conn, home)
    (older,) = conn.execute("SELECT generation FROM search_index_identity").fetchone()  # type: ignore[misc]
    conn.execute(
        "UPDATE memories SET content = 'Hourly WAL archiving of zirconvale.' WHERE id = %s", [mid]
    )
    cut_passages(conn)
    refresh(conn, home)
    assert bm25(reader, "zirconvale") == [mid]
    # The restore: the old row and the old generation, nothing pending (the trigger-free way a
    # pg_restore writes rows).
    conn.execute("SET session_replication_role = replica")
    conn.execute(
        "UPDATE memory_passages SET search_vector = to_tsvector('english', 'quartzfield')"
        " WHERE memory_id = %s",
        [mid],
    )
    conn.execute("SET session_replication_role = DEFAULT")
    conn.execute("UPDATE search_index_identity SET generation = %s", [older])
    assert not on_index(reader)  # never the newer words for the restored passage
    report = K.refresh_keyword_index(conn, home)
    assert report.rebuilt and on_index(reader)
    assert bm25(reader, "quartzfield") == [mid] and bm25(reader, "zirconvale") == []


def test_a_count_mismatch_rebuilds(conn, reader, home) -> None:  # type: ignore[no-untyped-def]
    add_memory(conn, "Backups", "Nightly pg_dump of the quartzfield database.")
    add_memory(conn, "Restore", "Restore drill every month.")
    cut_passages(conn)
    refresh(conn, home)
    conn.execute("TRUNCATE memories CASCADE")  # no delete triggers: nothing says what went
    report = K.refresh_keyword_index(conn, home)
    assert report.rebuilt and report.reason.startswith("count mismatch") and report.documents == 0
    assert on_index(reader) and bm25(reader, "quartzfield") == []


def test_two_refreshes_at_once_leave_a_valid_index(conn, db_url, reader, home) -> None:  # type: ignore[no-untyped-def]
    ids = [add_memory(conn, f"Note {i}", f"Zephyrine note number {i}.") for i in range(20)]
    cut_passages(conn)
    refresh_bm25_statistics(conn)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with connect(db_url, autocommit=True) as c:
                K.refresh_keyword_index(c, home)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert on_index(reader, "zephyrine")
    assert set(bm25(reader, "zephyrine")) == set(ids)
    builds = [p for p in next(home.glob("keyword-index/*")).iterdir() if p.is_dir()]
    assert len(builds) == 1


def test_an_exception_mid_refresh_leaves_the_previous_index(
    conn, reader, home, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    first = add_memory(conn, "Backups", "Nightly pg_dump of the quartzfield database.")
    cut_passages(conn)
    refresh(conn, home)
    add_memory(conn, "Restore", "Restore drill for quartzfield every month.")
    cut_passages(conn)

    def boom(*args: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(K, "_document", boom)
    for attempt in (K.refresh_keyword_index, K.rebuild_keyword_index):
        with pytest.raises(KeyboardInterrupt):
            attempt(conn, home)
        # Still pending: serving answers through PostgreSQL, with both memories ...
        assert not on_index(reader) and len(bm25(reader, "quartzfield")) == 2
        # ... and the previous index is intact and current for what it held.
        conn.execute("DELETE FROM memories WHERE title = 'Restore'")
        conn.execute("DELETE FROM passage_index_removals")  # as if never added
        conn.execute("DELETE FROM passage_index_pending")
        assert on_index(reader) and bm25(reader, "quartzfield") == [first]
        add_memory(conn, "Restore", "Restore drill for quartzfield every month.")
        cut_passages(conn)
    monkeypatch.undo()
    keyword_index.use_home(home)
    assert K.refresh_keyword_index(conn, home).added == 1
    assert on_index(reader) and len(bm25(reader, "quartzfield")) == 2


def test_forget_rebuilds_so_forgotten_words_leave_the_disk(conn, reader, home, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORY_HOME", str(home))
    kept = add_memory(conn, "Backups", "Nightly pg_dump of the database.")
    gone = add_memory(conn, "Secret", "The amberwolf project is cancelled.")
    cut_passages(conn)
    refresh(conn, home)
    forget(conn, Selector(memory_ids=[gone]))
    assert (
        on_index(reader) and bm25(reader, "amberwolf") == [] and bm25(reader, "pg_dump") == [kept]
    )
    build = conn.execute("SELECT token::text, current_database(), build FROM search_index_identity")
    token, database, name = build.fetchone()  # type: ignore[misc]
    index = tantivy.Index.open(str(K.identity_dir(home, token, database) / name))
    assert index.searcher().doc_freq(K.BODY, "amberwolf") == 0


_WORDS = ["alpha", "bravo", "charli", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=st.lists(
        st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12), min_size=2, max_size=12
    ),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3),
)
def test_top_memories_match_exhaustive_bm25(conn, reader, home, docs, query) -> None:  # type: ignore[no-untyped-def]
    """Random passages: tantivy's own scores (no passage rescored in PostgreSQL) rank as
    PostgreSQL's exhaustive BM25 does.

    Compared by score, not by id: two memories whose PostgreSQL scores differ by less than
    1e-5 relative may come in either order (tantivy scores in 32-bit floats). Lengths here stay
    within the 40 tokens tantivy stores exactly (fieldnorm quantisation starts above that), no
    word repeats more than twice, so the length padding is exact, and each example is a full
    rebuild, so no deleted document is left in tantivy's document frequencies."""
    conn.execute("DELETE FROM memories")
    for i, words in enumerate(docs):
        text = " ".join(w for w in dict.fromkeys(words) for _ in range(min(2, words.count(w))))
        add_memory(conn, f"t{i}", text)
    cut_passages(conn)
    refresh_bm25_statistics(conn)
    K.rebuild_keyword_index(conn, home)
    q = " ".join(query)
    assert on_index(reader, q)
    exact, tuning.BM25_INDEX_EXACT_PASSAGES = tuning.BM25_INDEX_EXACT_PASSAGES, 0
    try:
        got = bm25(reader, q)
    finally:
        tuning.BM25_INDEX_EXACT_PASSAGES = exact
    ref = reference(reader, q)
    scores = exact_scores(reader, q)
    assert len(got) == len(ref)
    for a, b in zip(got, ref, strict=True):
        assert scores[a] == pytest.approx(scores[b], rel=1e-5)


def exact_scores(reader: psycopg.Connection, query: str) -> dict[str, float]:
    """Each memory's best passage score, as bm25_exhaustive computes it."""
    rows = reader.execute(
        "WITH q AS (SELECT l.lexeme, ln(1 + (c.documents - t.ndoc + 0.5) / (t.ndoc + 0.5)) AS idf"
        " FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS l(lexeme)"
        " JOIN passage_term_stats t ON t.lexeme = l.lexeme CROSS JOIN passage_corpus_stats c)"
        " SELECT p.memory_id::text, max(s) FROM (SELECT p.id, p.memory_id, sum(q.idf * tf * %s"
        "  / (tf + %s * (1 - %s + %s * length(p.search_vector) / c.avg_lexemes))) AS s"
        "  FROM memory_passages p CROSS JOIN passage_corpus_stats c"
        "  CROSS JOIN LATERAL unnest(p.search_vector) AS u JOIN q ON q.lexeme = u.lexeme"
        "  CROSS JOIN LATERAL (SELECT sum(CASE w WHEN 'A' THEN %s ELSE 1 END) AS tf"
        "   FROM unnest(u.weights) AS w) t GROUP BY p.id, p.memory_id) p GROUP BY 1",
        [
            query,
            tuning.BM25_K1 + 1,
            tuning.BM25_K1,
            tuning.BM25_B,
            tuning.BM25_B,
            tuning.BM25_TITLE_TF,
        ],
    ).fetchall()
    return {r[0]: float(r[1]) for r in rows}


def test_a_failed_refresh_in_a_pipeline_step_is_reported_and_search_falls_back(
    conn, reader, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The index is derived: a step whose passages are committed does not fail because the
    index could not be written (here its directory is a file); the metadata says so, and
    search still finds the passage through PostgreSQL."""
    blocked = tmp_path / "home"
    blocked.mkdir()
    (blocked / "keyword-index").write_text("not a directory")
    monkeypatch.setenv("MEMORY_HOME", str(blocked))
    keyword_index.use_home(blocked)
    try:
        mid = add_memory(conn, "Vacuum", "Vacuum the events table nightly.")
        cut_passages(conn)
        refresh_bm25_statistics(conn)
        logged: list[str] = []
        log = logging.getLogger("test_keyword_index")
        monkeypatch.setattr(log, "warning", lambda msg, *a: logged.append(msg % a))
        metadata = K.refresh_for_asset(conn, log)
        assert str(metadata["keyword_index_reason"]).startswith("failed: ")
        assert logged and "search uses PostgreSQL" in logged[0]
        assert not on_index(reader)
        assert bm25(reader, "vacuum events") == [mid]
    finally:
        keyword_index.use_home(None)
