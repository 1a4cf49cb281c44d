"""Errors of the backup stage a user can act on (printed as one line by the CLI)."""

from __future__ import annotations

from memory_pipeline.errors import UserError


class BackupError(UserError):
    """Making a backup failed (pg_dump, an export, the backup directory); nothing was kept."""


class RestoreError(UserError):
    """Restoring or verifying a backup failed; the message says which file or table and why."""
