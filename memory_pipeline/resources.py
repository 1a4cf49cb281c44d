"""Dagster resources: thin handles the assets receive, configured from `Settings`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
import psycopg
from pydantic import PrivateAttr

from memory_pipeline.db import connect, ensure_ready
from memory_pipeline.db.migrate import migrate
from memory_pipeline.settings import Settings


class DatabaseResource(dg.ConfigurableResource):
    """Our PostgreSQL database, as the owner role: the only writer of memory tables.

    With `url` unset, the database comes from the environment (DATABASE_URL or the embedded
    server, started on demand). Pending migrations are applied before any asset runs.
    """

    url: str | None = None
    _dsn: str | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._dsn = _prepared(self.url)

    @property
    def dsn(self) -> str:
        if self._dsn is None:  # used outside a run: sensors, schedules, direct calls
            self._dsn = _prepared(self.url)
        return self._dsn

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with connect(self.dsn) as conn:
            yield conn


def _prepared(url: str | None) -> str:
    if url:
        migrate(url)
        return url
    return ensure_ready(Settings.from_env()).app
