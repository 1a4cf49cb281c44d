"""The backup settings as a Dagster resource (shown in the UI; the key is never part of it)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.settings import Settings


class BackupResource(dg.ConfigurableResource):
    """Where backups go, which key file encrypts them, retention and the optional copy command.

    The key comes from MEMORY_BACKUP_KEY or `key_file` when a run needs it, so it never appears
    in run configuration or the UI.
    """

    backup_dir: str
    key_file: str
    copy_command: str | None = None
    keep_daily: int
    keep_weekly: int
    pg_dump: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> BackupResource:
        return cls(
            backup_dir=str(settings.backup_dir),
            key_file=str(settings.backup_key_file),
            copy_command=settings.backup_copy_command,
            keep_daily=settings.backup_keep_daily,
            keep_weekly=settings.backup_keep_weekly,
            pg_dump=str(settings.pg_dump) if settings.pg_dump else None,
        )

    def config(self) -> BackupConfig:
        return BackupConfig(
            backup_dir=Path(self.backup_dir),
            key_file=Path(self.key_file),
            copy_command=self.copy_command,
            keep_daily=self.keep_daily,
            keep_weekly=self.keep_weekly,
            pg_dump=Path(self.pg_dump) if self.pg_dump else None,
        )
