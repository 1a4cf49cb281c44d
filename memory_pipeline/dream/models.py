"""The values the dream cycle's steps hand each other."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

Operation = Literal["CREATE", "UPDATE", "SUPERSEDE"]
SchemaOperation = Literal["assimilation", "accommodation"]
VerdictValue = Literal["accept", "reject", "defer"]
RUN_TYPES = ("scheduled", "post_learn", "session_start", "user_triggered")
EVALUATORS = ("skeptic", "user_advocate", "epistemologist", "methodologist")
# Relation types a candidate may propose (memory_relationships' CHECK, minus superseded_by,
# which only a SUPERSEDE writes).
EDGE_TYPES = (
    "supports",
    "contradicts",
    "extends",
    "inspires",
    "blocks",
    "requires",
    "derived_from",
    "related_to",
)


@dataclass(frozen=True)
class Slice:
    """Memories one strategy put together, and why."""

    strategy: str
    reason: str
    memory_ids: tuple[str, ...]
    score: float = 0.0  # strategy-specific strength (e.g. cosine); used by the offline Thinker

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(sorted(self.memory_ids))


@dataclass(frozen=True)
class MemoryView:
    """What the Thinker and the evaluators may read of a memory."""

    id: str
    type: str
    title: str
    content: str
    project: str | None
    status: str
    created_at: object
    source_type: str | None
    mem_class: str | None
    access_count: int = 0


class ProposedEdge(BaseModel):
    """A typed edge the candidate would add: `source` and `target` are memory ids, or "new"
    for the memory the candidate creates."""

    source: str
    target: str
    relation_type: Literal[
        "supports",
        "contradicts",
        "extends",
        "inspires",
        "blocks",
        "requires",
        "derived_from",
        "related_to",
    ]


class CandidateDraft(BaseModel):
    """A Thinker's proposal (the JSON schema the Ollama Thinker answers with, per candidate)."""

    operation: Operation
    schema_operation: SchemaOperation
    type: Literal["synthesis", "insight", "connection", "decision", "idea", "question"]
    title: str = Field(max_length=200)
    content: str = Field(max_length=4000)
    rests_on: list[str] = Field(min_length=1, max_length=12)
    target_memory_id: str | None = None  # UPDATE: the memory updated; SUPERSEDE: the older one
    successor_id: str | None = None  # SUPERSEDE: the newer memory that replaces the target
    edges: list[ProposedEdge] = Field(default_factory=list, max_length=24)
    quotes: list[str] = Field(default_factory=list, max_length=12)  # cited text, verbatim
    rationale: str = ""


class ThinkerOutput(BaseModel):
    candidates: list[CandidateDraft] = Field(default_factory=list, max_length=5)


class Verdict(BaseModel):
    """One evaluator's vote (the JSON schema the Ollama evaluators answer with)."""

    verdict: VerdictValue
    reasoning: str = Field(max_length=2000)


@dataclass
class Candidate:
    """A draft with where it came from and what happened to it."""

    draft: CandidateDraft
    strategy: str
    slice_reason: str
    score: float = 0.0
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    final: str | None = None  # ACCEPTED / REJECTED / DEFERRED
    defer_count: int = 0
    deferred_from: str | None = None
    deferred_twice_rejected: bool = False
    row_id: str | None = None
    created_memory_id: str | None = None
    cross_project: bool = False

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.draft)


def fingerprint(draft: CandidateDraft) -> str:
    """The same proposal across runs: operation, target, successor and what it rests on."""
    parts = [
        draft.operation,
        draft.target_memory_id or "",
        draft.successor_id or "",
        *sorted(set(draft.rests_on)),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]
