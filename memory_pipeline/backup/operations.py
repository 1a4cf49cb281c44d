"""One backup run as the schedule and `memory-pipeline backup now` do it, without Dagster.

    create (dump + exports + manifest) -> retention -> copy to further destinations

Retention runs before the copy so that a mirroring command (`rclone sync {root} remote:...`)
also drops what retention deleted. Neither a failed copy nor a failed deletion touches the new
backup: both are reported, and the run still counts as a successful local backup.

The restore check (restore.verify_backup) runs after this, as a separate step: in Dagster it is
the `backup_restores` asset check. A backup becomes "good" for retention once it passed, so a new
backup is protected by retention's "newest unverified" rule until its check has run.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.create import CreatedBackup, create_backup
from memory_pipeline.backup.crypto import BackupCryptoError, BackupKey, load_key
from memory_pipeline.backup.layout import backup_lock, interrupted_line, list_backups
from memory_pipeline.backup.manifest import ManifestError
from memory_pipeline.backup.pgtools import child_env
from memory_pipeline.backup.retention import BackupRecord, plan_retention
from memory_pipeline.errors import UserError
from memory_pipeline.tuning import BACKUP_COPY_TIMEOUT_S

Progress = Callable[[str], None]
_DETAIL_CHARS = 400


@dataclass(frozen=True)
class CopyOutcome:
    status: Literal["not configured", "copied", "failed"]
    command: str | None = None
    detail: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class RetentionOutcome:
    kept: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackupRun:
    backup: CreatedBackup
    retention: RetentionOutcome
    copy: CopyOutcome


def run_backup(config: BackupConfig, dsn: str, *, progress: Progress | None = None) -> BackupRun:
    say = progress or (lambda _message: None)
    backup = create_backup(config, dsn, progress=say)
    for name in backup.removed_temp_dirs:
        say(interrupted_line(name))
    say(
        f"backup {backup.backup_id}: {backup.encrypted_bytes / 1e6:.1f} MB in {backup.seconds}s"
        f" at {backup.path}"
    )
    retention = apply_retention(config, backup.key)
    if retention.deleted:
        say(f"retention deleted {', '.join(retention.deleted)}")
    for error in retention.errors:
        say(f"retention: {error}")
    copy = copy_backup(config.copy_command, backup.path, config.backup_dir)
    if copy.status != "not configured":
        say(f"copy {copy.status}: {copy.detail}" if copy.detail else f"copy {copy.status}")
    return BackupRun(backup, retention, copy)


def key_created_warning(config: BackupConfig) -> str:
    """Said once, when the first backup created the key file."""
    return (
        f"created a new backup key in {config.key_file}: keep a copy somewhere other than this"
        " machine (a password manager); without it no backup can be restored"
    )


def apply_retention(
    config: BackupConfig, key: BackupKey, *, now: datetime | None = None
) -> RetentionOutcome:
    """Delete what plan_retention says, under the backup lock; never raises for one deletion."""
    with backup_lock(config.backup_dir):
        infos = list_backups(config.backup_dir, key)
        records = [BackupRecord(i.id, i.created_at, i.path, i.good) for i in infos]
        # Local time: "a day" is the user's calendar day, not UTC's.
        plan = plan_retention(
            records,
            now or datetime.now().astimezone(),
            keep_daily=config.keep_daily,
            keep_weekly=config.keep_weekly,
        )
        deleted, errors = [], []
        for doomed in plan.delete:
            try:
                shutil.rmtree(doomed.backup.path)
                deleted.append(doomed.backup.id)
            except OSError as exc:
                errors.append(f"could not delete {doomed.backup.path}: {exc}")
    return RetentionOutcome(
        kept=tuple(k.backup.id for k in plan.keep), deleted=tuple(deleted), errors=tuple(errors)
    )


def copy_command_args(template: str, backup: Path, root: Path) -> list[str]:
    """The copy command's arguments, placeholders filled in per argument (never a shell)."""
    values = {"{dir}": str(backup), "{name}": backup.name, "{root}": str(root)}
    args = []
    for arg in shlex.split(template):
        for placeholder, value in values.items():
            arg = arg.replace(placeholder, value)
        args.append(arg)
    return args


def copy_backup(
    template: str | None, backup: Path, root: Path, *, timeout_s: float = BACKUP_COPY_TIMEOUT_S
) -> CopyOutcome:
    """Run the configured copy command for a complete backup; report, never raise, on failure."""
    if not template:
        return CopyOutcome("not configured")
    started = time.monotonic()
    args = copy_command_args(template, backup, root)
    shown = shlex.join(args)

    def outcome(status: Literal["copied", "failed"], detail: str) -> CopyOutcome:
        return CopyOutcome(
            status, shown, detail[-_DETAIL_CHARS:], round(time.monotonic() - started, 2)
        )

    try:
        proc = subprocess.run(
            args,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            env=child_env(),  # the backup key stays here: the copy only moves ciphertext
            check=False,
        )
    except FileNotFoundError:
        return outcome("failed", f"command not found: {args[0]}")
    except subprocess.TimeoutExpired:
        return outcome("failed", f"stopped after {timeout_s:.0f}s")
    except OSError as exc:
        return outcome("failed", str(exc))
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        last = f": {lines[-1]}" if lines else ""
        return outcome("failed", f"exit status {proc.returncode}{last}")
    return outcome("copied", "")


def load_restore_key(config: BackupConfig) -> BackupKey:
    """The key for reading backups: never creates one (a new key opens no existing backup)."""
    return load_key(config.key_file, create=False)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn backup format errors into UserError for the CLI's one-line messages."""
    try:
        yield
    except (BackupCryptoError, ManifestError) as exc:
        raise UserError(str(exc)) from exc
    except ValidationError as exc:
        raise UserError(f"invalid backup settings: {exc.errors()[0]['msg']}") from exc
