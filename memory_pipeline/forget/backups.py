"""`forget --purge-backups`: older backups still hold what was forgotten; replace them.

A new backup is made after the forget (so it holds nothing forgotten) and proven by a restore;
only then are all older backups in MEMORY_BACKUP_DIR deleted. If the new backup fails its
restore check, nothing is deleted. Copies made by MEMORY_BACKUP_COPY_COMMAND elsewhere are out
of reach: the user deletes those by hand.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from pydantic import BaseModel

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.layout import backup_lock, backup_names
from memory_pipeline.backup.operations import run_backup
from memory_pipeline.backup.restore import verify_backup
from memory_pipeline.errors import UserError


class PurgeOutcome(BaseModel):
    new_backup: str
    deleted: list[str]
    errors: list[str]


def purge_backups(
    config: BackupConfig, dsn: str, progress: Callable[[str], None] | None = None
) -> PurgeOutcome:
    say = progress or (lambda _m: None)
    made = run_backup(config, dsn, progress=say).backup
    report = verify_backup(config, dsn, made.backup_id, progress=say)
    if not report.passed:
        raise UserError(
            f"the new backup {made.backup_id} failed its restore check, so older backups were"
            " kept; run `memory-pipeline backup now` and then `forget --purge-backups` again"
        )
    deleted: list[str] = []
    errors: list[str] = []
    with backup_lock(config.backup_dir):
        for name in backup_names(config.backup_dir):
            if name == made.backup_id:
                continue
            try:
                shutil.rmtree(config.backup_dir / name)
                deleted.append(name)
            except OSError as exc:
                errors.append(f"could not delete {config.backup_dir / name}: {exc}")
    return PurgeOutcome(new_backup=made.backup_id, deleted=deleted, errors=errors)
