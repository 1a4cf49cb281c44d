"""Retention on real backup directories, and the copy step to further destinations."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.create import create_backup
from memory_pipeline.backup.crypto import BackupKey, load_key
from memory_pipeline.backup.layout import (
    LOCK_NAME,
    Verification,
    list_backups,
    manifest_digest,
    write_verification,
)
from memory_pipeline.backup.operations import (
    apply_retention,
    copy_backup,
    copy_command_args,
    run_backup,
)
from memory_pipeline.backup.restore import verify_backup
from memory_pipeline_tests.backup.conftest import Seeded

# Wednesday 19 March 2025, ISO week 12 (Mon 17 .. Sun 23); week 11 is 10 .. 16 March.
NOW = datetime(2025, 3, 19, 12, 0, tzinfo=UTC)


def _at(day: int) -> datetime:
    return datetime(2025, 3, day, 2, 0, tzinfo=UTC)


def _mark(path: Path, key: BackupKey, *, passed: bool) -> None:
    """Record a restore check outcome as verify_backup does (real restores: other tests)."""
    record = Verification(
        backup_id=path.name,
        manifest_sha256=manifest_digest(path),
        verified_at=NOW,
        passed=passed,
    )
    write_verification(path, record, key)


def test_retention_keeps_the_right_set_of_real_backups(
    backup_config: BackupConfig, db_url: str
) -> None:
    config = backup_config.model_copy(update={"keep_daily": 2, "keep_weekly": 2})
    made = {
        day: create_backup(config, db_url, created_at=_at(day))
        for day in (5, 10, 14, 16, 17, 18, 19)
    }
    key = load_key(config.key_file, create=False)
    for day in (5, 10, 14, 16, 18):
        _mark(made[day].path, key, passed=True)
    _mark(made[17].path, key, passed=False)  # restored wrong: never good
    # 19 stays unverified: it is the newest, its check may still be running.
    unreadable = config.backup_dir / "2025-03-01T020000Z"  # looks like a backup, is not one
    unreadable.mkdir()
    (unreadable / "manifest.json.enc").write_bytes(b"garbage")
    not_ours = config.backup_dir / "notes"
    not_ours.mkdir()

    statuses = {i.id: i.status for i in list_backups(config.backup_dir, key)}
    assert statuses == {
        "2025-03-19T020000Z": "unverified",
        "2025-03-18T020000Z": "verified",
        "2025-03-17T020000Z": "verify failed",
        "2025-03-16T020000Z": "verified",
        "2025-03-14T020000Z": "verified",
        "2025-03-10T020000Z": "verified",
        "2025-03-05T020000Z": "verified",
        "2025-03-01T020000Z": "unreadable",
    }

    outcome = apply_retention(config, key, now=NOW)

    # newest unverified (19); newest good, daily and weekly of W12 (18); daily and weekly of
    # W11 (16). Expired: 14, 10, 5. Not good and older than the newest good: 17 and the garbage.
    assert outcome.kept == ("2025-03-19T020000Z", "2025-03-18T020000Z", "2025-03-16T020000Z")
    assert sorted(outcome.deleted) == [
        "2025-03-01T020000Z",
        "2025-03-05T020000Z",
        "2025-03-10T020000Z",
        "2025-03-14T020000Z",
        "2025-03-17T020000Z",
    ]
    assert outcome.errors == ()
    assert sorted(p.name for p in config.backup_dir.iterdir()) == [
        LOCK_NAME,
        "2025-03-16T020000Z",
        "2025-03-18T020000Z",
        "2025-03-19T020000Z",
        "notes",  # never touch what is not a backup
    ]


def test_retention_deletes_nothing_while_no_backup_is_verified(
    backup_config: BackupConfig, db_url: str
) -> None:
    config = backup_config.model_copy(update={"keep_daily": 0, "keep_weekly": 0})
    for day in (10, 11, 12):
        create_backup(config, db_url, created_at=_at(day))
    key = load_key(config.key_file, create=False)
    outcome = apply_retention(config, key, now=NOW)
    assert outcome.deleted == () and len(outcome.kept) == 3

    # Once one is verified, it is the newest good one and is kept even with 0 and 0.
    _mark(config.backup_dir / "2025-03-11T020000Z", key, passed=True)
    outcome = apply_retention(config, key, now=NOW)
    assert outcome.kept == ("2025-03-12T020000Z", "2025-03-11T020000Z")
    assert outcome.deleted == ("2025-03-10T020000Z",)


def test_verification_voided_when_the_manifest_is_replaced(
    backup_config: BackupConfig, seeded: Seeded, db_url: str
) -> None:
    first = create_backup(backup_config, db_url, created_at=_at(18))
    second = create_backup(backup_config, db_url, created_at=_at(19))
    assert verify_backup(backup_config, db_url, first.backup_id).passed
    key = load_key(backup_config.key_file, create=False)
    assert {i.id: i.good for i in list_backups(backup_config.backup_dir, key)} == {
        first.backup_id: True,
        second.backup_id: False,
    }
    # A verification record proves only the manifest it checked.
    manifest = "manifest.json.enc"
    (first.path / manifest).write_bytes((second.path / manifest).read_bytes())
    assert [i.status for i in list_backups(backup_config.backup_dir, key)] == [
        "unverified",
        "unverified",
    ]


def test_copy_command_runs_without_a_shell_and_copies_the_backup(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, tmp_path: Path
) -> None:
    remote = tmp_path / "remote with space"
    remote.mkdir()
    script = tmp_path / "copy.py"
    script.write_text(
        "import os, shutil, sys\n"
        "assert 'MEMORY_BACKUP_KEY' not in os.environ\n"
        "shutil.copytree(sys.argv[1], os.path.join(sys.argv[2], sys.argv[3]))\n"
    )
    config = backup_config.model_copy(
        update={"copy_command": f"{sys.executable} {script} {{dir}} '{remote}' {{name}}"}
    )
    run = run_backup(config, db_url)
    assert run.copy.status == "copied", run.copy
    copied = remote / run.backup.backup_id
    assert sorted(p.name for p in copied.iterdir()) == sorted(
        p.name for p in run.backup.path.iterdir()
    )
    assert (copied / "database.pgdump.enc").read_bytes() == (
        run.backup.path / "database.pgdump.enc"
    ).read_bytes()


@pytest.mark.parametrize(
    ("command", "detail"),
    [
        ("false", "exit status 1"),
        ("sh -c 'echo remote unreachable >&2; exit 3'", "exit status 3: remote unreachable"),
        ("/no/such/rclone copy {dir} remote:x", "command not found: /no/such/rclone"),
    ],
)
def test_a_failing_copy_is_reported_and_the_local_backup_stays(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, command: str, detail: str
) -> None:
    run = run_backup(backup_config.model_copy(update={"copy_command": command}), db_url)
    assert run.copy.status == "failed"
    assert run.copy.detail == detail
    assert run.backup.path.is_dir()
    assert verify_backup(backup_config, db_url).passed


def test_copy_command_is_never_given_to_a_shell(tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    outcome = copy_backup(f"true {{dir}}; touch {pwned}", tmp_path / "b; touch {pwned}", tmp_path)
    assert outcome.status == "copied"
    assert not pwned.exists()


def test_copy_placeholders_are_filled_per_argument() -> None:
    args = copy_command_args(
        "rclone copy {dir} 'remote:memory backups/{name}' --log-file={root}/copy.log",
        Path("/data/backups/2026-03-19T033000Z"),
        Path("/data/backups"),
    )
    assert args == [
        "rclone",
        "copy",
        "/data/backups/2026-03-19T033000Z",
        "remote:memory backups/2026-03-19T033000Z",
        "--log-file=/data/backups/copy.log",
    ]
    assert copy_backup(None, Path("/x"), Path("/")).status == "not configured"
    assert copy_backup("sleep 5", Path("/x"), Path("/"), timeout_s=0.2).detail == "stopped after 0s"
