"""The migration runner against a real PostgreSQL + pgvector server."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.db.migrate import SQL_DIR, MigrationError, discover, migrate, pending

EXPECTED_TABLES = {
    "schema_migrations",
    "memories",
    "memory_relationships",
    "entities",
    "entity_edges",
    "memory_entities",
    "dream_cycle_runs",
    "dream_cycle_candidates",
    "express_feedback",
    "captured_tasks",
    "agent_turns",
    "capture_skips",
    "source_files",
    "topic_segments",
    "memory_provenance",
    "semantic_cursors",
    "semantic_pass_runs",
    "embedding_spaces",
    "memory_embeddings",
    "retrieval_events",
}


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return {r[0] for r in rows}


def test_empty_database_migrates_to_the_full_schema(empty_db_url: str) -> None:
    applied = migrate(empty_db_url)
    assert applied == [m.filename for m in discover()]
    assert tables(empty_db_url) >= EXPECTED_TABLES
    with psycopg.connect(empty_db_url) as conn:
        versions = conn.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
        assert [v[0] for v in versions] == [m.version for m in discover()]
        ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert ext.fetchone() is not None


def test_second_run_is_a_no_op(empty_db_url: str) -> None:
    migrate(empty_db_url)
    with psycopg.connect(empty_db_url) as conn:
        before = conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall()
    assert migrate(empty_db_url) == []
    assert pending(empty_db_url) == []
    with psycopg.connect(empty_db_url) as conn:
        after = conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall()
    assert after == before


def copy_sql(tmp_path: Path) -> Path:
    target = tmp_path / "sql"
    shutil.copytree(SQL_DIR, target)
    return target


def test_an_edited_applied_migration_is_refused(empty_db_url: str, tmp_path: Path) -> None:
    sql_dir = copy_sql(tmp_path)
    migrate(empty_db_url, sql_dir)
    edited = sql_dir / "006_express_feedback.sql"
    edited.write_text(edited.read_text() + "\n-- a harmless looking edit\n")
    # A new pending file must not run either: the refusal comes before anything is applied.
    (sql_dir / "099_new_table.sql").write_text("CREATE TABLE should_not_exist (id int);")
    with pytest.raises(MigrationError, match=r"006_express_feedback\.sql was edited"):
        migrate(empty_db_url, sql_dir)
    assert "should_not_exist" not in tables(empty_db_url)


def test_a_failing_migration_rolls_back_alone(empty_db_url: str, tmp_path: Path) -> None:
    sql_dir = copy_sql(tmp_path)
    (sql_dir / "098_good.sql").write_text("CREATE TABLE good_one (id int);")
    (sql_dir / "099_bad.sql").write_text("CREATE TABLE half_done (id int);\nSELECT 1/0;")
    with pytest.raises(psycopg.errors.DivisionByZero):
        migrate(empty_db_url, sql_dir)
    names = tables(empty_db_url)
    assert "good_one" in names and "half_done" not in names
    assert pending(empty_db_url, sql_dir) == ["099_bad.sql"]


def test_two_runners_at_once_end_with_one_schema(empty_db_url: str) -> None:
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def runner() -> None:
        try:
            results.append(migrate(empty_db_url))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    all_files = [m.filename for m in discover()]
    # One runner applied everything; the other waited on the lock and found nothing to do.
    assert sorted(results, key=len) == [[], all_files]
    with psycopg.connect(empty_db_url) as conn:
        count = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert count == (len(all_files),)
