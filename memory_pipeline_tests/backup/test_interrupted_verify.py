"""A backup verification killed mid-way leaves its scratch database (a full copy of the data):
the next start finds it and drops it, saying so, and `db check` lists it with the command that
fixes it. One that a live verification is using is never touched. A real verification process
is SIGKILLed while its scratch database exists."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.operations import run_backup
from memory_pipeline.backup.restore import verify_backup
from memory_pipeline.backup.scratch import SCRATCH_LOCK, abandoned_scratch_databases
from memory_pipeline.db.check import evaluate, gather
from memory_pipeline.db.connection import resolve_urls
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.runs import clear_interrupted_work
from memory_pipeline.settings import Settings
from memory_pipeline_tests.backup.conftest import Seeded, databases_like
from memory_pipeline_tests.support.pipeline_home import wait_until

# A verification that stops for good once the backup is restored into its scratch database,
# before it compares (so that it can be killed there): the real verify_backup in a process of
# its own.
VERIFY = """
import json, sys, time
from pathlib import Path
from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.restore import verify_backup
args = json.loads(sys.argv[1])
config = BackupConfig(backup_dir=Path(args["dir"]), key_file=Path(args["key"]), keep_daily=7,
                      keep_weekly=4)
def progress(message):
    print(message, flush=True)
    if message.startswith("pg_restore:"):
        time.sleep(600)
verify_backup(config, args["dsn"], progress=progress)
"""


def kill_once_restoring(code: str, args: str, log_path: Path, what: str) -> None:
    """Run `code` in a process of its own and SIGKILL it once pg_restore has begun."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(lambda: "pg_restore:" in log_path.read_text(), 120, what)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def killed_verification(config: BackupConfig, db_url: str, admin_url: str, tmp: Path) -> str:
    args = json.dumps({"dir": str(config.backup_dir), "key": str(config.key_file), "dsn": db_url})
    kill_once_restoring(
        VERIFY, args, tmp / "verify.log", "the verification to restore into its scratch database"
    )
    (scratch,) = databases_like(admin_url, "%\\_verify\\_%")
    return scratch


def check_lines(db_url: str) -> list[str]:
    urls = resolve_urls(Settings.from_env(), start=False)
    assert urls.app == db_url
    return [c.line() for c in evaluate(gather(urls), urls, ["backup"])]


def test_a_killed_verification_is_reported_and_dropped_at_the_next_start(
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
    run_backup(backup_config, db_url)
    scratch = killed_verification(backup_config, db_url, admin_url, tmp_path)
    with psycopg.connect(pg_server.uri(scratch)) as copy:
        assert copy.execute("SELECT count(*) FROM memories").fetchone() == (4,)  # real data

    # The process is gone: `db check` says so, with what fixes it.
    lines = check_lines(db_url)
    (line,) = [ln for ln in lines if scratch in ln]
    assert line.startswith("LEFTOVER") and "memory-pipeline backup verify" in line, lines
    assert abandoned_scratch_databases(db_url) == [scratch]
    assert databases_like(admin_url, scratch) == [scratch]  # db check changes nothing

    # The next start (`memory-pipeline run`, `ui`) drops it and says so in one line.
    said: list[str] = []
    assert clear_interrupted_work(Settings.from_env(), db_url, said.append) == said
    assert len(said) == 1 and scratch in said[0] and "dropped" in said[0]
    assert databases_like(admin_url, "%\\_verify\\_%") == []
    assert not [ln for ln in check_lines(db_url) if ln.startswith("LEFTOVER")]


def test_the_next_verification_drops_a_dead_ones_database_but_never_a_live_ones(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    run_backup(backup_config, db_url)
    prefix = f"{conninfo_to_dict(db_url)['dbname'][:40]}_verify_"
    dead, live = f"{prefix}deadbeef", f"{prefix}0badf00d"
    with psycopg.connect(db_url, autocommit=True) as other:
        other.execute(f'CREATE DATABASE "{dead}"')  # nobody holds its lock: its process is gone
        # A verification in progress elsewhere: its session holds its scratch database's lock.
        other.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [SCRATCH_LOCK, live])
        other.execute(f'CREATE DATABASE "{live}"')
        try:
            said: list[str] = []
            report = verify_backup(backup_config, db_url, progress=said.append)
            assert report.passed, report.problems
            assert any(dead in s and "dropped" in s for s in said), said
            assert databases_like(admin_url, "%\\_verify\\_%") == [live]
            assert abandoned_scratch_databases(db_url) == []
        finally:
            other.execute(f'DROP DATABASE IF EXISTS "{live}"')
            other.execute(f'DROP DATABASE IF EXISTS "{dead}"')
