"""What the discovery steps pass between them: memories, candidate pairs, edges, verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, Field

# Edge types whose reading is the same both ways: stored once, source_id < target_id.
SYMMETRIC = frozenset({"related_to"})
JUDGED_TYPES = ("supports", "contradicts", "extends", "requires", "blocks", "inspires")
# Every type discovery writes (and so may expire); other stages own the rest (superseded_by).
DISCOVERED_TYPES = ("derived_from", "related_to", "duplicate_of", *JUDGED_TYPES)


@dataclass(frozen=True)
class Memory:
    id: UUID
    type: str
    title: str
    content: str
    project: str | None
    created_at: datetime
    task_ids: frozenset[UUID] = frozenset()
    # The entity nodes it mentions (the entity stage's), each with the stemmed head word of
    # every name it goes by ("redi" for Redis): what a reversal's dropped choice is matched to.
    entities: tuple[tuple[UUID, frozenset[str]], ...] = ()

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.content}"

    @property
    def entity_ids(self) -> frozenset[UUID]:
        return frozenset(e for e, _ in self.entities)

    def shared_subject_words(self, other: Memory) -> frozenset[str]:
        """The head words of the entities both memories mention."""
        shared = self.entity_ids & other.entity_ids
        return frozenset(w for e, words in self.entities if e in shared for w in words)

    def newer_than(self, other: Memory) -> bool:
        """The order edges are directed by: creation time, then id (never a tie)."""
        return (self.created_at, str(self.id)) > (other.created_at, str(other.id))


def reversal_allowed(newer: Memory, older: Memory) -> bool:
    """A reversal (`newer contradicts older`), whichever judge says so: two distinct memories,
    the newer one a decision, and a subject entity both mention (issue 34). Anything else is a
    decision naming an alternative, or two unrelated memories that embed close."""
    return (
        newer.id != older.id
        and newer.type == "decision"
        and newer.newer_than(older)
        and bool(newer.entity_ids & older.entity_ids)
    )


@dataclass(frozen=True)
class Edge:
    source_id: UUID
    target_id: UUID
    relation_type: str
    similarity: float | None = None
    evidence: str | None = None
    backend: str = "structural"
    confidence: float = 1.0
    note: str | None = None

    def normalized(self) -> Edge:
        """Symmetric types are stored once, with the smaller id as the source."""
        if self.relation_type in SYMMETRIC and str(self.source_id) > str(self.target_id):
            return Edge(
                self.target_id,
                self.source_id,
                self.relation_type,
                self.similarity,
                self.evidence,
                self.backend,
                self.confidence,
                self.note,
            )
        return self

    @property
    def key(self) -> tuple[str, str, str]:
        e = self.normalized()
        return (str(e.source_id), str(e.target_id), e.relation_type)


@dataclass(frozen=True)
class Pair:
    """Two memories a judge looks at: `newer` was stated after `older`."""

    newer: Memory
    older: Memory
    similarity: float


Relation = Literal["supports", "contradicts", "extends", "requires", "blocks", "inspires", "none"]


class Verdict(BaseModel):
    """A judge's answer for one pair. `direction`: which memory is the edge's source."""

    pair: int = Field(ge=0)
    relation: Relation
    direction: Literal["newer_to_older", "older_to_newer"] = "newer_to_older"
    evidence: str = Field(default="", max_length=2000)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)


class JudgeFailure(BaseModel):
    backend: str
    pairs: int
    reason: str


@dataclass
class Judgement:
    edges: list[Edge] = field(default_factory=list)
    failures: list[JudgeFailure] = field(default_factory=list)
    failed_memories: set[UUID] = field(default_factory=set)  # not marked scanned: retried


class Judge(Protocol):
    name: str

    def judge(self, pairs: list[Pair]) -> Judgement: ...
