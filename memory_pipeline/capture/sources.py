"""Which source roots capture reads, and the connector for each.

With `MEMORY_SOURCES=auto` (the default) the user's real roots are used as soon as any of them
holds data; a machine with no agent history gets the bundled demo corpus instead, so the first
`make run` has something to show. `demo` and `real` force one or the other.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from memory_pipeline import tuning
from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.capture.claude_code import ClaudeCodeConnector
from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.models import Connector
from memory_pipeline.errors import UserError
from memory_pipeline.settings import DEMO_CORPUS, Settings


class SourceRoots(BaseModel):
    codex_home: Path
    claude_home: Path
    import_dir: Path
    kind: Literal["real", "demo"]
    # MEMORY_SEMANTIC_QUIET_MINUTES: a chat import's unanswered last prompt is captured after it.
    quiet_minutes: float = tuning.SEMANTIC_QUIET_MINUTES

    def connectors(self) -> list[Connector]:
        return [
            CodexConnector(self.codex_home),
            ClaudeCodeConnector(self.claude_home),
            ChatImportConnector(self.import_dir, quiet_after=timedelta(minutes=self.quiet_minutes)),
        ]


def demo_roots() -> SourceRoots:
    return SourceRoots(
        codex_home=DEMO_CORPUS / "codex_home",
        claude_home=DEMO_CORPUS / "claude_home",
        import_dir=DEMO_CORPUS / "imports",
        kind="demo",
    )


def source_roots(settings: Settings) -> SourceRoots:
    real = SourceRoots(
        codex_home=settings.codex_home,
        claude_home=settings.claude_home,
        import_dir=settings.import_dir,
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
