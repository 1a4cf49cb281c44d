"""What a briefing is made of, shared by composing, editing, storing, rendering and serving.

Plain data without database or Dagster imports, so serving can render a stored briefing too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime

# Item kinds, in the words the CLI accepts for `--mute KIND`.
KINDS = ("synthesis", "contradiction", "superseded", "resurfaced", "digest", "question", "source")


@dataclass(frozen=True)
class LinkedMemory:
    """A memory an item rests on; `role` says how (subject, newer, older, successor, evidence)."""

    id: str
    title: str
    role: str
    project: str | None = None


@dataclass(frozen=True)
class Candidate:
    """One thing worth telling, before editing: its memories and the facts a headline uses."""

    kind: str
    topic: str
    memories: tuple[LinkedMemory, ...]
    base_score: float
    cross_project: bool = False
    facts: dict[str, object] = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> str:
        """The same finding has the same key in every briefing (kind + its main memories), so
        a push never sends it twice. Evidence links do not count: they may grow."""
        main = sorted(m.id for m in self.memories if m.role != "evidence")
        digest = hashlib.sha256("\n".join([self.kind, *main]).encode()).hexdigest()[:24]
        return f"{self.kind}:{digest}"


@dataclass(frozen=True)
class EditedItem:
    candidate: Candidate
    headline: str
    detail: str
    score: float


@dataclass(frozen=True)
class Filtered:
    """An item left out by a mute: shown in the run's metadata, never delivered."""

    kind: str
    topic: str
    rule: str  # "kind:<kind>" or "topic:<topic>"


@dataclass(frozen=True)
class StoredItem:
    id: int
    position: int
    kind: str
    topic: str
    headline: str
    detail: str
    score: float
    cross_project: bool
    key: str
    memories: tuple[LinkedMemory, ...]


@dataclass(frozen=True)
class StoredBriefing:
    id: str
    day: date
    window_from: datetime
    window_to: datetime
    editor: str
    composed_at: datetime
    items: tuple[StoredItem, ...]
    filtered: tuple[Filtered, ...]
