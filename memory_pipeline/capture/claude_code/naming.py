"""Task titles: what the user or Claude Code named a session, or a subagent's description."""

from __future__ import annotations

from typing import Any

from memory_pipeline.capture.claude_code.records import Loaded, Sidecar, text_field
from memory_pipeline.capture.models import TaskTitle


def session_title(loaded: Loaded, session_id: str | None) -> TaskTitle | None:
    """custom-title (user-set) wins, then the latest ai-title, then `summary` (older builds)."""

    def mine(cars: list[Sidecar]) -> list[Sidecar]:
        return [c for c in cars if c.session_id in (None, session_id)]

    for cars, source in (
        (mine(loaded.custom_titles), "claude_code:custom-title"),
        (mine(loaded.ai_titles), "claude_code:ai-title"),
        ([c for c in loaded.summaries if c.leaf in loaded.records], "claude_code:summary"),
    ):
        if cars:
            car = cars[-1]
            return TaskTitle(text=car.text or "", source=source, observed_at=car.observed_at)
    return None


def agent_title(meta: dict[str, Any]) -> TaskTitle | None:
    """A subagent's `meta.json` description (what the main agent asked it to do)."""
    description = text_field(meta.get("description"))
    if not description:
        return None
    return TaskTitle(text=description, source="claude_code:agent-description")
