"""The backup settings as a Dagster resource (shown in the UI; the key is never part of it)."""

from __future__ import annotations

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
        return cls(**BackupConfig.from_settings(settings).model_dump(mode="json"))

    def config(self) -> BackupConfig:
        """The plain configuration the backup functions take (paths validated again)."""
        return BackupConfig.model_validate(
            {name: getattr(self, name) for name in BackupConfig.model_fields}
        )
