"""Back up a real database, restore it, verify it; tampering and wrong keys are caught."""

from __future__ import annotations

import json
import stat

import numpy as np
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from memory_pipeline import tuning
from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.crypto import (
    HEADER_BYTES,
    KEY_ENV_VAR,
    TAG_BYTES,
    BackupKeyError,
    WrongKeyError,
    generate_key_text,
    load_key,
    read_encrypted,
)
from memory_pipeline.backup.errors import RestoreError
from memory_pipeline.backup.exports import EXPORT_TABLES
from memory_pipeline.backup.layout import (
    DUMP_NAME,
    VERIFICATION_NAME,
    inspect_backup,
    list_backups,
)
from memory_pipeline.backup.manifest import MANIFEST_FILENAME, read_manifest
from memory_pipeline.backup.operations import run_backup
from memory_pipeline.backup.restore import restore_backup, verify_backup
from memory_pipeline.db.connection import connect
from memory_pipeline.tuning import BACKUP_CHUNK_SIZE
from memory_pipeline_tests.backup.conftest import (
    BGE,
    MINILM,
    Seeded,
    assert_no_plaintext,
    databases_like,
    dbname,
    flip_byte,
    snapshot,
)
from memory_pipeline_tests.conftest import create_database, drop_database


def test_round_trip_backup_wipe_restore_gives_identical_content(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    before = snapshot(db_url)
    run = run_backup(backup_config, db_url)
    backup = run.backup

    # Layout: one directory named by its UTC time, every file encrypted and private.
    assert backup.path.parent == backup_config.backup_dir
    assert sorted(p.name for p in backup.path.iterdir()) == sorted(
        [DUMP_NAME, MANIFEST_FILENAME, *(f"{t}.jsonl.enc" for t in EXPORT_TABLES)]
    )
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in backup.path.iterdir())
    assert_no_plaintext(backup_config.backup_dir)
    key_file = backup_config.key_file
    assert backup.key.created and stat.S_IMODE(key_file.stat().st_mode) == 0o600

    # Manifest: counts, schema version, spaces, and exports that hold the rows.
    key = load_key(key_file, create=False)
    manifest = read_manifest(backup.path / MANIFEST_FILENAME, key)
    tables = {t.name: t.rows for t in manifest.tables}
    assert tables["memories"] == 4  # three plus the archived segment memory of link()
    assert tables["memory_embeddings"] == 5
    assert {s.space: s.rows for s in manifest.embedding_spaces} == {MINILM: 3, BGE: 2}
    assert manifest.schema_version == max(m.version for m in manifest.migrations)
    assert {f.table: f.rows for f in manifest.files if f.kind == "jsonl"} == {
        "memories": 4,
        "memory_relationships": 2,
        "captured_tasks": 1,
        "agent_turns": 3,
        "dream_cycle_runs": 1,
        "dream_cycle_candidates": 1,
    }
    lines = read_encrypted(backup.path / "memories.jsonl.enc", key).decode().splitlines()
    exported = {row["id"]: row for row in map(json.loads, lines)}
    first = exported[seeded.memories[0]]
    assert first["tags"] == ["db", "vectors"]
    assert json.loads(first["metadata"]) == {"questions": ["which vector store?"], "n": 1.5}
    assert "search_vector" not in first
    assert exported[seeded.memories[2]]["title"] == 'Zürich "quoted" ✓'

    # Wipe: the database is gone.
    drop_database(admin_url, dbname(db_url))
    restored = restore_backup(backup_config, admin_url, backup.backup_id, dbname(db_url))
    assert restored.tables == len(manifest.tables)

    assert snapshot(db_url) == before
    with connect(db_url) as conn:
        for (memory_id, space), vector in seeded.vectors.items():
            row = conn.execute(
                "SELECT embedding FROM memory_embeddings WHERE memory_id = %s AND space = %s",
                [memory_id, space],
            ).fetchone()
            assert row is not None and np.array_equal(row[0].to_numpy(), vector)
        # Indexes, triggers and grants came back too.
        hnsw = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'memory_embeddings_%_hnsw'"
        ).fetchone()
        assert hnsw == (2,)
        reader = conn.execute("SELECT has_table_privilege('memory_reader', 'memories', 'SELECT')")
        assert reader.fetchone() == (True,)
    assert databases_like(admin_url, "%\\_restore\\_%") == []


def test_verify_passes_records_it_and_drops_the_scratch_database(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    run = run_backup(backup_config, db_url)
    report = verify_backup(backup_config, db_url)
    assert report.passed, report.problems
    assert report.backup_id == run.backup.backup_id
    assert report.tables > 15 and report.rows > 20
    assert databases_like(admin_url, "%\\_verify\\_%") == []
    key = load_key(backup_config.key_file, create=False)
    info = inspect_backup(run.backup.path, key)
    assert info.status == "verified" and info.good
    assert (run.backup.path / VERIFICATION_NAME).read_bytes().startswith(b"MPBACKUP")


def test_verify_skips_rebuilding_the_vector_indexes_that_restore_rebuilds(
    backup_config: BackupConfig, seeded: Seeded, db_url: str
) -> None:
    # Rebuilding HNSW was most of verify's time at 100K memories (issue 12); the data is what
    # verify compares, and a real restore still rebuilds them (the round-trip test above).
    run_backup(backup_config, db_url)
    messages: list[str] = []
    report = verify_backup(backup_config, db_url, progress=messages.append)
    assert report.passed, report.problems
    partial = {  # sql/023: per space, one per filter value with its own graph
        f"passage_embeddings_{space}_{kind}_{value}_hnsw"
        for space in ("minilm_384", "bge_m3_1024")
        for kind, column in (("type", "memory_type"), ("source", "memory_source_type"))
        for value in tuning.VECTOR_PARTIAL_INDEXES[column]
    }
    assert set(report.skipped_indexes) == {
        "memory_embeddings_minilm_384_hnsw",
        "memory_embeddings_bge_m3_1024_hnsw",
        "passage_embeddings_minilm_384_hnsw",
        "passage_embeddings_bge_m3_1024_hnsw",
        *partial,
    }
    assert any(f"{4 + len(partial)} vector indexes" in m for m in messages), messages


def test_restore_refuses_a_non_empty_database_without_force(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    before = snapshot(db_url)
    run = run_backup(backup_config, db_url)
    with connect(db_url, autocommit=True) as conn:
        conn.execute("DELETE FROM memory_relationships")
        conn.execute(
            "INSERT INTO express_feedback (verb, target_kind, target) VALUES"
            " ('mute', 'topic', 'added after the backup')"
        )
    changed = snapshot(db_url)

    with pytest.raises(RestoreError, match=r"is not empty \(table \w+ has rows\); pass --force"):
        restore_backup(backup_config, admin_url, run.backup.backup_id, dbname(db_url))
    assert snapshot(db_url) == changed  # untouched

    restore_backup(backup_config, admin_url, run.backup.backup_id, dbname(db_url), force=True)
    assert snapshot(db_url) == before

    # An existing but empty database is not "overwriting" anything: no --force needed.
    empty = "backup_test_empty_target"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(empty)))
    try:
        restore_backup(backup_config, admin_url, run.backup.path, empty)
        with connect(make_conninfo(db_url, dbname=empty)) as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (4,)
    finally:
        drop_database(admin_url, empty)
    assert databases_like(admin_url, "%\\_restore\\_%") == []


def test_restore_into_an_empty_migrated_schema_needs_no_force(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str, template_db: str
) -> None:
    # What a fresh machine holds once `memory-pipeline ui` or `run` started there: the schema,
    # migrated, with no data. The README sends the user to restore into exactly that.
    before = snapshot(db_url)
    run = run_backup(backup_config, db_url)
    fresh = create_database(admin_url, template=template_db)
    try:
        restore_backup(backup_config, admin_url, run.backup.backup_id, fresh)
        assert snapshot(make_conninfo(db_url, dbname=fresh)) == before
    finally:
        drop_database(admin_url, fresh)
    # A migrated schema with a table that is not ours is someone's database: refused.
    other = create_database(admin_url, template=template_db)
    try:
        with psycopg.connect(make_conninfo(db_url, dbname=other), autocommit=True) as conn:
            conn.execute("CREATE TABLE notes (body text)")
        with pytest.raises(RestoreError, match=r"table public\.notes is not part of"):
            restore_backup(backup_config, admin_url, run.backup.backup_id, other)
    finally:
        drop_database(admin_url, other)


def test_tampered_dump_is_caught_by_the_authentication_tag(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    run = run_backup(backup_config, db_url)
    flip_byte(run.backup.path / DUMP_NAME)

    report = verify_backup(backup_config, db_url)
    assert not report.passed
    assert "database.pgdump.enc: chunk 0 failed authentication" in report.problems[0]
    key = load_key(backup_config.key_file, create=False)
    assert inspect_backup(run.backup.path, key).status == "verify failed"

    target = "backup_test_tampered"
    with pytest.raises(RestoreError, match="failed authentication"):
        restore_backup(backup_config, admin_url, run.backup.backup_id, target)
    assert databases_like(admin_url, target) == []
    assert databases_like(admin_url, "%\\_restore\\_%") == []
    assert databases_like(admin_url, "%\\_verify\\_%") == []


def test_tampered_export_and_manifest_are_caught(
    backup_config: BackupConfig, seeded: Seeded, db_url: str
) -> None:
    run = run_backup(backup_config, db_url)
    flip_byte(run.backup.path / "agent_turns.jsonl.enc")
    report = verify_backup(backup_config, db_url)
    assert not report.passed
    assert any("agent_turns.jsonl.enc: chunk 0 failed authentication" in p for p in report.problems)

    flip_byte(run.backup.path / MANIFEST_FILENAME, offset=HEADER_BYTES + 5)
    report = verify_backup(backup_config, db_url)
    assert not report.passed and "manifest.json.enc" in report.problems[0]


def test_tampering_late_in_a_large_dump_commits_nothing(
    backup_config: BackupConfig, db_url: str, admin_url: str
) -> None:
    # Random vectors do not compress: a dump of several chunks, so pg_restore has already been
    # fed the first chunks when the damaged one fails.
    rng = np.random.default_rng(1)
    with connect(db_url, autocommit=True) as conn, conn.transaction():
        ids = [
            r[0]
            for r in conn.execute(
                "INSERT INTO memories (type, title, content, partition_day)"
                " SELECT 'insight', 'm' || i, 'c', '2026-01-01' FROM generate_series(1, 900) i"
                " RETURNING id"
            )
        ]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
                " VALUES (%s, %s, %s, 'x')",
                [(i, BGE, rng.standard_normal(1024).astype(np.float32)) for i in ids],
            )
    run = run_backup(backup_config, db_url)
    dump = run.backup.path / DUMP_NAME
    chunks = (dump.stat().st_size - HEADER_BYTES) // (BACKUP_CHUNK_SIZE + TAG_BYTES)
    assert chunks >= 3
    flip_byte(dump, HEADER_BYTES + 2 * (BACKUP_CHUNK_SIZE + TAG_BYTES) + 10)  # chunk 2

    target = "backup_test_late_damage"
    with pytest.raises(RestoreError, match="chunk 2 failed authentication"):
        restore_backup(backup_config, admin_url, run.backup.backup_id, target)
    assert databases_like(admin_url, target) == []
    assert databases_like(admin_url, "%\\_restore\\_%") == []


def test_wrong_key_is_a_clear_error_and_brands_nothing(
    backup_config: BackupConfig,
    seeded: Seeded,
    db_url: str,
    admin_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = run_backup(backup_config, db_url)
    monkeypatch.setenv(KEY_ENV_VAR, generate_key_text())
    wrong = "wrong backup key or the file was modified"
    with pytest.raises(RestoreError, match=wrong):
        verify_backup(backup_config, db_url)
    with pytest.raises(RestoreError, match=wrong):
        restore_backup(backup_config, admin_url, run.backup.backup_id, "backup_test_wrong_key")
    with pytest.raises(WrongKeyError, match=wrong):
        list_backups(backup_config.backup_dir, load_key(backup_config.key_file, create=False))
    assert not (run.backup.path / VERIFICATION_NAME).exists()
    assert databases_like(admin_url, "backup\\_test\\_wrong\\_key%") == []

    # No key at all: restore says where a key is looked for, and does not invent one.
    monkeypatch.delenv(KEY_ENV_VAR)
    backup_config.key_file.unlink()
    with pytest.raises(BackupKeyError, match=KEY_ENV_VAR):
        verify_backup(backup_config, db_url)
    assert not backup_config.key_file.exists()
