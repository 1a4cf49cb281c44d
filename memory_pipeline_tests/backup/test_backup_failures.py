"""A backup that fails halfway leaves nothing behind; pg_dump problems are explained."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.backup import create
from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.create import create_backup
from memory_pipeline.backup.errors import BackupError
from memory_pipeline.backup.exports import export_table
from memory_pipeline.backup.layout import LOCK_NAME, TMP_PREFIX
from memory_pipeline.backup.pgtools import check_server_version, pg_tools
from memory_pipeline.backup.restore import verify_backup
from memory_pipeline.db.connection import connect
from memory_pipeline.errors import UserError
from memory_pipeline_tests.backup.conftest import Seeded, assert_no_plaintext


def _fake_pg_tools(directory: Path, version: str, dump_body: str) -> Path:
    """A pg_dump (and the pg_restore beside it) that are small shell scripts."""
    directory.mkdir(parents=True, exist_ok=True)
    pg_dump = directory / "pg_dump"
    pg_dump.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "pg_dump (PostgreSQL) {version}"; exit 0; fi\n'
        f"{dump_body}\n"
    )
    pg_restore = directory / "pg_restore"
    pg_restore.write_text("#!/bin/sh\nexit 1\n")
    for script in (pg_dump, pg_restore):
        script.chmod(0o755)
    return pg_dump


@pytest.fixture
def plaintext_dirs() -> Iterator[None]:
    """Fails the test if a plaintext workspace appears (or stays) in the temp directory."""

    def workspaces() -> set[str]:
        return {p.name for p in Path(tempfile.gettempdir()).glob("memory-backup-plain-*")}

    before = workspaces()
    yield
    assert workspaces() == before


def _assert_nothing_left(config: BackupConfig) -> None:
    entries = sorted(p.name for p in config.backup_dir.iterdir())
    assert entries == [LOCK_NAME], entries  # no backup, no temp directory, no .tmp file
    assert_no_plaintext(config.backup_dir)


def test_pg_dump_failing_midway_leaves_no_partial_backup(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, tmp_path: Path, plaintext_dirs: None
) -> None:
    # 3 MB of "dump" (several encrypted chunks already on disk), then pg_dump dies.
    body = (
        "head -c 3000000 /dev/zero | tr '\\0' 'P'\n"
        "echo 'pg_dump: error: query failed: server closed the connection' >&2\nexit 1"
    )
    config = backup_config.model_copy(
        update={"pg_dump": _fake_pg_tools(tmp_path / "bin", "18.6", body)}
    )
    with pytest.raises(BackupError, match="pg_dump failed \\(exit status 1\\): pg_dump: error"):
        create_backup(config, db_url)
    _assert_nothing_left(config)


def test_a_failing_export_leaves_no_partial_backup(
    backup_config: BackupConfig,
    seeded: Seeded,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    plaintext_dirs: None,
) -> None:
    def failing_export(conn, table, sink, **kwargs):  # type: ignore[no-untyped-def]
        if table == "agent_turns":  # the dump and three exports are already written
            sink.write(b'{"half": "a line')
            raise OSError("No space left on device")
        return export_table(conn, table, sink, **kwargs)

    monkeypatch.setattr(create, "export_table", failing_export)
    with pytest.raises(OSError, match="No space left"):
        create_backup(backup_config, db_url)
    _assert_nothing_left(backup_config)


def test_an_interrupt_midway_leaves_no_partial_backup(
    backup_config: BackupConfig,
    seeded: Seeded,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    plaintext_dirs: None,
) -> None:
    def interrupted(conn, table, sink, **kwargs):  # type: ignore[no-untyped-def]
        export_table(conn, table, sink, **kwargs)
        raise KeyboardInterrupt  # Ctrl-C, or Dagster terminating the run

    monkeypatch.setattr(create, "export_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        create_backup(backup_config, db_url)
    _assert_nothing_left(backup_config)


def test_a_temp_directory_left_by_a_killed_run_is_removed_by_the_next(
    backup_config: BackupConfig, db_url: str
) -> None:
    stale = backup_config.backup_dir / f"{TMP_PREFIX}2026-01-01T000000Z-deadbeef"
    stale.mkdir(parents=True)
    (stale / "database.pgdump.enc.tmp").write_bytes(b"MPBACKUP partial")
    made = create_backup(backup_config, db_url)
    assert made.removed_temp_dirs == (stale.name,)
    assert sorted(p.name for p in backup_config.backup_dir.iterdir()) == [
        LOCK_NAME,
        made.backup_id,
    ]


def test_missing_custom_pg_dump_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"MEMORY_PG_DUMP=.* is not an executable file"):
        pg_tools(tmp_path / "nowhere" / "pg_dump")
    lonely = tmp_path / "bin" / "pg_dump"
    lonely.parent.mkdir()
    lonely.write_text("#!/bin/sh\n")
    lonely.chmod(0o755)
    with pytest.raises(UserError, match="no executable pg_restore next to MEMORY_PG_DUMP"):
        pg_tools(lonely)


def test_a_server_newer_than_pg_dump_is_refused_before_anything_is_written(
    backup_config: BackupConfig, db_url: str, tmp_path: Path
) -> None:
    with psycopg.connect(db_url) as conn:
        server = conn.info.server_version
    old = _fake_pg_tools(tmp_path / "bin", "16.4", "exit 0")
    tools = pg_tools(old)
    assert tools.major == 16 and tools.version == "16.4"
    message = f"server is version {server // 10000} but {old} is version 16"
    with pytest.raises(UserError, match=re.escape(message)):
        check_server_version(tools, server)
    with pytest.raises(UserError, match="set MEMORY_PG_DUMP to a pg_dump"):
        create_backup(backup_config.model_copy(update={"pg_dump": old}), db_url)
    assert sorted(p.name for p in backup_config.backup_dir.iterdir()) == [LOCK_NAME]
    # The bundled pg_dump matches the embedded server.
    bundled = pg_tools(None)
    check_server_version(bundled, server)
    assert bundled.major == server // 10000


def test_the_backup_reads_one_snapshot(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A write that lands while the backup runs (after pg_dump, before the exports) is in
    # neither the dump nor the exports nor the checksums, so the backup still verifies.
    def write_meanwhile(conn, table, sink, **kwargs):  # type: ignore[no-untyped-def]
        if table == "memories":
            with connect(db_url, autocommit=True) as other:
                other.execute(
                    "INSERT INTO memories (type, title, content, partition_day)"
                    " VALUES ('insight', 'late', 'written during the backup', '2026-01-01')"
                )
        return export_table(conn, table, sink, **kwargs)

    monkeypatch.setattr(create, "export_table", write_meanwhile)
    made = create_backup(backup_config, db_url)
    assert made.manifest.file("memories.jsonl.enc").rows == 4
    assert {t.name: t.rows for t in made.manifest.tables}["memories"] == 4
    assert verify_backup(backup_config, db_url).passed
