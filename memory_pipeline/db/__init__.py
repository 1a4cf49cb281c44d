"""Database access: the embedded server, connection URLs and migrations."""

from __future__ import annotations

from collections.abc import Callable

from memory_pipeline.db.connection import DatabaseUrls, connect, prepare_server, resolve_urls
from memory_pipeline.db.migrate import migrate
from memory_pipeline.settings import Settings

__all__ = ["DatabaseUrls", "connect", "ensure_ready"]


def ensure_ready(settings: Settings, progress: Callable[[str], None] | None = None) -> DatabaseUrls:
    """Start the server if needed, create both databases, apply pending migrations."""
    urls = resolve_urls(settings, start=True)
    prepare_server(urls)
    migrate(urls.app, progress=progress)
    return urls
