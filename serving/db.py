"""Serving's database access: always the read-only role.

The pipeline owns every write; serving can read memory tables and insert retrieval events,
nothing else, because the role it connects as (`memory_reader`, migration 011) can do nothing
else. The embedded server is started if needed (that writes no memory).
"""

from __future__ import annotations

import psycopg

from memory_pipeline.db.connection import connect, resolve_urls
from memory_pipeline.settings import Settings


def reader_url(settings: Settings | None = None) -> str:
    """MEMORY_READER_URL when set; otherwise the read-only role on our database (starting the
    embedded server if that is the one we use)."""
    settings = settings or Settings.from_env()
    return settings.reader_url or resolve_urls(settings, start=True).reader


def connect_reader(url: str | None = None) -> psycopg.Connection:
    """An autocommit connection as the read-only role; each search is its own transaction."""
    return connect(url or reader_url(), autocommit=True)
