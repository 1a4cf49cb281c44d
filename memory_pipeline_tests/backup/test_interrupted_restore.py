"""A `backup restore` killed mid-way leaves its staging database `<target>_restore_<hex>` (a copy
of the backup's data): the next start finds it and drops it, saying so, and `db check` lists it
with the command that fixes it. A live restore's staging database, and a database of that
pattern we did not make, are never touched. A real restore process is SIGKILLed while its
staging database holds the restored data."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.operations import run_backup
from memory_pipeline.backup.restore import restore_backup
from memory_pipeline.backup.scratch import (
    SCRATCH_LOCK,
    abandoned_scratch_databases,
    staging_marker,
)
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.runs import clear_interrupted_work
from memory_pipeline.settings import Settings
from memory_pipeline_tests.backup.conftest import Seeded, databases_like, dbname, snapshot
from memory_pipeline_tests.backup.test_interrupted_verify import check_lines, kill_once_restoring

# A restore that stops for good once the backup is in its staging database, before it compares
# and replaces the target (so that it can be killed there): the real restore_backup in a process
# of its own, with the application's database as its connection, as `backup restore` has.
RESTORE = """
import json, sys, time
from pathlib import Path
from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.restore import restore_backup
args = json.loads(sys.argv[1])
config = BackupConfig(backup_dir=Path(args["dir"]), key_file=Path(args["key"]), keep_daily=7,
                      keep_weekly=4)
def progress(message):
    print(message, flush=True)
    if message.startswith("pg_restore:"):
        time.sleep(600)
restore_backup(config, args["dsn"], args["backup"], args["target"], progress=progress)
"""


def killed_restore(
    config: BackupConfig, db_url: str, backup: str, target: str, admin_url: str, tmp: Path
) -> str:
    args = json.dumps(
        {
            "dir": str(config.backup_dir),
            "key": str(config.key_file),
            "dsn": db_url,
            "backup": backup,
            "target": target,
        }
    )
    kill_once_restoring(
        RESTORE, args, tmp / "restore.log", "the restore to load its staging database"
    )
    (staging,) = databases_like(admin_url, f"{target}\\_restore\\_%")
    return staging


def _drop(admin_url: str, *names: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for name in names:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def test_a_killed_restore_is_reported_and_its_staging_database_dropped_at_the_next_start(
    backup_config: BackupConfig,
    seeded: Seeded,
    db_url: str,
    admin_url: str,
    tmp_path: Path,
    pg_server: EmbeddedServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("MEMORY_BACKUP_DIR", str(backup_config.backup_dir))
    monkeypatch.setenv("MEMORY_BACKUP_KEY_FILE", str(backup_config.key_file))
    backup = run_backup(backup_config, db_url).backup.backup_id
    target = f"{dbname(db_url)}_copy"
    try:
        staging = killed_restore(backup_config, db_url, backup, target, admin_url, tmp_path)
        count = "SELECT count(*) FROM memories"
        with psycopg.connect(pg_server.uri(staging)) as copy, psycopg.connect(db_url) as source:
            assert copy.execute(count).fetchone() == source.execute(count).fetchone()
        assert databases_like(admin_url, target) == []  # the target was never touched

        # The process is gone: `db check` says so, with what fixes it.
        lines = check_lines(db_url)
        (line,) = [ln for ln in lines if staging in ln]
        assert line.startswith("LEFTOVER") and "backup restore" in line, lines
        assert "memory-pipeline run" in line, lines
        assert abandoned_scratch_databases(db_url) == [staging]
        assert databases_like(admin_url, staging) == [staging]  # db check changes nothing

        # The next start (`memory-pipeline run`, `ui`) drops it and says so in one line.
        said: list[str] = []
        assert clear_interrupted_work(Settings.from_env(), db_url, said.append) == said
        assert len(said) == 1 and staging in said[0] and "dropped" in said[0], said
        assert "restore" in said[0]
        assert databases_like(admin_url, "%\\_restore\\_%") == []
        assert not [ln for ln in check_lines(db_url) if ln.startswith("LEFTOVER")]

        # And the restore, run again, works.
        restore_backup(backup_config, db_url, backup, target)
        assert snapshot(pg_server.uri(target)) == snapshot(db_url)
    finally:
        _drop(admin_url, target, *databases_like(admin_url, f"{target}\\_restore\\_%"))


def test_the_next_restore_drops_a_dead_ones_staging_but_never_a_live_or_foreign_one(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    backup = run_backup(backup_config, db_url).backup.backup_id
    ours = dbname(db_url)
    dead, live = f"{ours}_x_restore_deadbeef", f"{ours}_y_restore_0badf00d"
    foreign = f"{ours}_z_restore_12345678"  # the same pattern, not made by a restore of ours
    target = f"{ours}_copy"
    with psycopg.connect(db_url, autocommit=True) as other:
        for name in (dead, live, foreign):
            other.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        for name in (dead, live):
            other.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                    sql.Identifier(name), sql.Literal(staging_marker(ours))
                )
            )
        # A restore in progress elsewhere: its session holds its staging database's lock.
        other.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [SCRATCH_LOCK, live])
        try:
            said: list[str] = []
            restore_backup(backup_config, db_url, backup, target, progress=said.append)
            assert any(dead in s and "dropped" in s for s in said), said
            assert sorted(databases_like(admin_url, f"{ours}\\_%\\_restore\\_%")) == sorted(
                [live, foreign]
            )
            assert abandoned_scratch_databases(db_url) == []
            # The restored database keeps no trace of having been a staging database.
            comment = other.execute(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
                [target],
            ).fetchone()
            assert comment == (None,)
        finally:
            _drop(admin_url, live, dead, foreign, target)


def test_restoring_over_the_database_it_connects_to(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    """Rolling back the live database (`--to memory --force`): the restore's own session in it
    ends when it is replaced, and the restore still finishes cleanly."""
    backup = run_backup(backup_config, db_url).backup.backup_id
    before = snapshot(db_url)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("DELETE FROM retrieval_events")
    restore_backup(backup_config, db_url, backup, dbname(db_url), force=True)
    assert snapshot(db_url) == before
    assert databases_like(admin_url, "%\\_restore\\_%") == []
