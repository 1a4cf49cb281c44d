"""Database access: the embedded server, connection URLs, requirements and migrations."""

from __future__ import annotations

from collections.abc import Callable

from memory_pipeline.db.check import Scope, require
from memory_pipeline.db.connection import DatabaseUrls, connect, prepare_server, resolve_urls
from memory_pipeline.db.migrate import migrate
from memory_pipeline.settings import Settings

__all__ = ["DatabaseUrls", "connect", "ensure_ready"]


def ensure_ready(
    settings: Settings,
    progress: Callable[[str], None] | None = None,
    *,
    check_backups: bool = False,
) -> DatabaseUrls:
    """Start the server if needed, check what this role needs, create both databases, migrate.

    A missing requirement (db/check.py) stops here with one line saying what to fix, before
    anything is created or migrated. `check_backups` adds what the restore check of every backup
    needs: `run`, `ui` and the backup commands ask for it, since each of them ends in one.
    """
    urls = resolve_urls(settings, start=True)
    scopes: tuple[Scope, ...] = ("server", "migrate")
    if check_backups:
        scopes += ("backup",)
    require(urls, scopes)
    prepare_server(urls)
    migrate(urls.app, progress=progress)
    return urls
