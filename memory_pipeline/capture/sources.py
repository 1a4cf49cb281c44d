"""Which source roots capture reads, and the connector for each (from the registry).

Every source is one entry of `memory_pipeline/models/sources.py`; this module turns the roots
of each (the user's real ones from `Settings`, or the bundled demo corpus) into connectors with
the entry's factory. With `MEMORY_SOURCES=auto` (the default) the user's real roots are used as
soon as any of them holds data; a machine with no agent history gets the bundled demo corpus
instead, so the first `make run` has something to show. `demo` and `real` force one or the other.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from memory_pipeline import tuning
from memory_pipeline.capture.protocol import Connector, ConnectorOptions
from memory_pipeline.errors import UserError
from memory_pipeline.models.sources import SOURCES, SourceSpec
from memory_pipeline.settings import DEMO_CORPUS, Settings

Factory = Callable[[list[Path], ConnectorOptions], Connector]


class SourceRoots(BaseModel):
    """Per source name, the roots its connector looks in. A source with no entry is not read
    (so a test naming only the sources it writes never reads the user's other agents).

    Each source's `keyword` is accepted too: `SourceRoots(codex_home=..., import_dir=...)`.
    """

    roots: dict[str, list[Path]] = Field(default_factory=dict)
    kind: Literal["real", "demo"]
    # MEMORY_SEMANTIC_QUIET_MINUTES: a chat import's unanswered last prompt is captured after it.
    quiet_minutes: float = tuning.SEMANTIC_QUIET_MINUTES

    @model_validator(mode="before")
    @classmethod
    def _keywords(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        roots = dict(data.get("roots") or {})
        for source in SOURCES:
            if source.keyword in data:
                value = data.pop(source.keyword)
                roots[source.name] = list(value) if isinstance(value, list | tuple) else [value]
        data["roots"] = roots
        return data

    def home(self, source: str) -> Path:
        """The first root of `source` (KeyError when it is not configured)."""
        return self.roots[source][0]

    def options(self) -> ConnectorOptions:
        return ConnectorOptions(quiet_after=timedelta(minutes=self.quiet_minutes))

    def connectors(self) -> list[Connector]:
        options = self.options()
        return [
            factory(source)(self.roots[source.name], options)
            for source in SOURCES
            if self.roots.get(source.name)
        ]


def factory(source: SourceSpec) -> Factory:
    """The connector factory a registry entry names (`package.module:function`)."""
    module, _, name = source.factory.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def demo_roots() -> SourceRoots:
    return SourceRoots(
        roots={s.name: [DEMO_CORPUS / d for d in s.demo] for s in SOURCES if s.demo},
        kind="demo",
    )


def source_roots(settings: Settings) -> SourceRoots:
    real = SourceRoots(
        roots={name: list(paths) for name, paths in settings.source_homes.items()},
        kind="real",
        quiet_minutes=settings.semantic_quiet_minutes,
    )
    if settings.sources == "real":
        return real
    if settings.sources == "demo":
        return demo_roots()
    if settings.sources != "auto":
        raise UserError(f"MEMORY_SOURCES={settings.sources!r}: use auto, demo or real")
    return real if _has_data(real) else demo_roots()


def _has_data(roots: SourceRoots) -> bool:
    """True when any connector finds at least one transcript (an empty root does not count)."""
    return any(connector.discover() for connector in roots.connectors())
