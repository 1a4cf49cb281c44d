"""A backup killed mid-way leaves its temp directory (ciphertext only): `backup list` shows it as
interrupted with a one-line reason, and the next start (the next backup, `memory-pipeline run`
or `ui`) removes it and says so. One being written by a live process is never shown as
interrupted nor removed. A real backup process is SIGKILLed while it writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.layout import backup_lock, interrupted_backups
from memory_pipeline.backup.operations import run_backup
from memory_pipeline.cli import app
from memory_pipeline.runs import clear_interrupted_work
from memory_pipeline.settings import Settings
from memory_pipeline_tests.backup.conftest import Seeded
from memory_pipeline_tests.support.pipeline_home import wait_until

# The real run_backup in a process of its own, stopped for good after its first export.
BACKUP = """
import json, sys, time
from pathlib import Path
from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.operations import run_backup
args = json.loads(sys.argv[1])
config = BackupConfig(backup_dir=Path(args["dir"]), key_file=Path(args["key"]), keep_daily=7,
                      keep_weekly=4)
def progress(message):
    print(message, flush=True)
    if message.startswith("export "):
        time.sleep(600)
run_backup(config, args["dsn"], progress=progress)
"""


def killed_backup(config: BackupConfig, db_url: str, tmp: Path) -> Path:
    args = json.dumps({"dir": str(config.backup_dir), "key": str(config.key_file), "dsn": db_url})
    with open(tmp / "backup.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", BACKUP, args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: "export " in (tmp / "backup.log").read_text(), 120, "the backup to write"
        )
        # While it lives, its temp directory is work in progress, not an interrupted backup.
        assert interrupted_backups(config.backup_dir) == []
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (left,) = [p for p in config.backup_dir.iterdir() if p.name.startswith(".tmp-")]
    return left


@pytest.fixture
def env(backup_config: BackupConfig, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("MEMORY_BACKUP_DIR", str(backup_config.backup_dir))
    monkeypatch.setenv("MEMORY_BACKUP_KEY_FILE", str(backup_config.key_file))


def test_backup_list_shows_a_killed_backup_and_the_next_backup_removes_it(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, tmp_path: Path, env: None
) -> None:
    run_backup(backup_config, db_url)  # a good one before
    left = killed_backup(backup_config, db_url, tmp_path)

    listed = CliRunner().invoke(app, ["backup", "list"], catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    (line,) = [ln for ln in listed.output.splitlines() if "interrupted" in ln]
    assert "killed before it completed" in line and "next backup removes" in line, line
    assert len([ln for ln in listed.output.splitlines() if ln.startswith("  ")]) == 2

    said: list[str] = []
    run_backup(backup_config, db_url, progress=said.append)
    assert not left.exists()
    assert any(left.name in s and "removed" in s for s in said), said
    listed = CliRunner().invoke(app, ["backup", "list"], catch_exceptions=False)
    assert "interrupted" not in listed.output


def test_memory_pipeline_run_removes_a_killed_backup_but_not_one_in_progress(
    backup_config: BackupConfig, db_url: str, env: None
) -> None:
    # What a killed backup leaves (the test above kills a real one): a temp directory.
    left = backup_config.backup_dir / ".tmp-2026-12-01T033000Z-1a2b3c4d"
    left.mkdir(parents=True)
    (left / "database.pgdump.enc").write_bytes(b"MPBACKUP ciphertext")
    with backup_lock(backup_config.backup_dir):  # a backup in progress elsewhere
        assert interrupted_backups(backup_config.backup_dir) == []
        assert clear_interrupted_work(Settings.from_env(), db_url) == []
        assert left.exists()
    assert interrupted_backups(backup_config.backup_dir) == [left]
    said: list[str] = []
    assert clear_interrupted_work(Settings.from_env(), db_url, said.append) == said
    assert len(said) == 1 and left.name in said[0] and "removed" in said[0]
    assert not left.exists()
