"""Dagster resources: thin handles the assets receive, configured from `Settings`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
from pydantic import PrivateAttr

from memory_pipeline import tuning
from memory_pipeline.capture.protocol import Connector
from memory_pipeline.capture.sources import SourceRoots, source_roots
from memory_pipeline.db import connect, ensure_ready
from memory_pipeline.db.migrate import migrate
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.semantic.models import SemanticBackend
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
        """An autocommit connection: every unit of work opens its own `conn.transaction()`."""
        with connect(self.dsn, autocommit=True) as conn:
            yield conn


def _prepared(url: str | None) -> str:
    if url:
        migrate(url)
        return url
    return ensure_ready(Settings.from_env()).app


class SourcesResource(dg.ConfigurableResource):
    """The agent transcript roots capture reads (real ones, or the bundled demo corpus): per
    source name (memory_pipeline/models/sources.py), the roots its connector looks in."""

    roots: dict[str, list[str]]
    kind: str  # "real" or "demo"
    quiet_minutes: float = tuning.SEMANTIC_QUIET_MINUTES  # the chat import's quiet rule

    @classmethod
    def from_settings(cls, settings: Settings) -> SourcesResource:
        roots = source_roots(settings)
        return cls.from_roots(roots)

    @classmethod
    def from_roots(cls, roots: SourceRoots) -> SourcesResource:
        return cls(
            roots={name: [str(p) for p in paths] for name, paths in roots.roots.items()},
            kind=roots.kind,
            quiet_minutes=roots.quiet_minutes,
        )

    @classmethod
    def of(cls, **roots: Any) -> SourcesResource:
        """Built from `SourceRoots` keywords: `of(codex_home=..., import_dir=..., kind="real")`."""
        return cls.from_roots(SourceRoots(**roots))

    def source_roots(self) -> SourceRoots:
        return SourceRoots(
            roots={name: [Path(p) for p in paths] for name, paths in self.roots.items()},
            kind=self.kind,  # type: ignore[arg-type]
            quiet_minutes=self.quiet_minutes,
        )

    def home(self, source: str) -> str:
        """The first root of `source`."""
        return self.roots[source][0]

    def connectors(self) -> list[Connector]:
        return self.source_roots().connectors()


class SemanticResource(dg.ConfigurableResource):
    """Which backend runs the Task Semantic Pass.

    Ollama when `model` is set and the server has it; otherwise the offline rules (with MiniLM
    vectors for topic shifts). The choice is made per run and reported in its metadata.
    """

    ollama_host: str
    model: str | None = None
    timeout_s: float = 120.0
    quiet_minutes: float = tuning.SEMANTIC_QUIET_MINUTES

    @classmethod
    def from_settings(cls, settings: Settings) -> SemanticResource:
        return cls(
            ollama_host=settings.ollama_host,
            model=settings.semantic_model,
            timeout_s=settings.ollama_timeout_s,
            quiet_minutes=settings.semantic_quiet_minutes,
        )

    def backend(self) -> SemanticBackend:
        from memory_pipeline.embedding.minilm import get_minilm
        from memory_pipeline.ollama_chat import ollama_model_available
        from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
        from memory_pipeline.semantic.ollama_backend import OllamaBackend

        if self.model and ollama_model_available(self.ollama_host, self.model, timeout_s=5):
            return OllamaBackend(self.ollama_host, self.model, self.timeout_s)
        return OfflineRulesBackend(embedder=get_minilm())


class EmbeddingResource(dg.ConfigurableResource):
    """The active embedding space: where new vectors go (search may still serve an older one)."""

    space: str
    ollama_host: str

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbeddingResource:
        return cls(space=settings.embedding_space, ollama_host=settings.ollama_host)

    def embedder(self) -> Embedder:
        from memory_pipeline.embedding.spaces import embedder_for

        return embedder_for(self.space, self.ollama_host)
