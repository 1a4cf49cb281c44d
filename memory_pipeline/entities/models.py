"""What the entity stage reads and what a model backend returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID


@dataclass(frozen=True)
class Item:
    """A memory or a turn as the stage reads it: its text, its speakers, its semantic project."""

    id: UUID
    text: str
    speakers: tuple[str, ...] = ()
    project: str | None = None


@dataclass(frozen=True)
class Proposal:
    """A node a model says a memory names: staged, and linked only when the precheck passes."""

    memory_id: UUID
    type: str
    name: str
    confidence: float


@dataclass
class Proposals:
    proposals: list[Proposal] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # one line per failed batch
    failed: set[UUID] = field(default_factory=set)  # memories of failed batches: asked again


class Backend(Protocol):
    name: str

    def propose(self, memories: Sequence[Item]) -> Proposals: ...
