"""What the browsing queries (`serving/browse.py`) return: summaries, one memory in full with its
relationships and source turns, a relationship neighbourhood, a timeline. The private tier
(`memory_pipeline/forget/tier.py`) filters the same models."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field

from memory_pipeline.models.provenance import Provenance

# The CHECK constraints of migrations 002 and 003.
MemoryType = Literal[
    "idea",
    "synthesis",
    "research",
    "insight",
    "question",
    "decision",
    "correction_episode",
    "priority",
    "project",
    "connection",
    "source",
    "segment",
]
RelationType = Literal[
    "supports",
    "contradicts",
    "extends",
    "inspires",
    "blocks",
    "requires",
    "derived_from",
    "related_to",
    "superseded_by",
]


class MemorySummary(BaseModel):
    """One memory in a listing: its fields and the start of its content."""

    id: UUID
    type: str
    title: str
    preview: str  # the first characters of the content
    preview_truncated: bool  # the content is longer than the preview
    project: str | None
    mem_class: str | None
    source_type: str | None
    status: str
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    provenance: list[Provenance] = Field(default_factory=list)


class MemoryPage(BaseModel):
    """A page of a newest-first listing; pass `next_cursor` back for the next page."""

    items: list[MemorySummary]
    page_size: int
    next_cursor: str | None  # None: this is the last page


class Relationship(BaseModel):
    """A typed edge seen from one memory: `outgoing` means this memory is the edge's source."""

    direction: Literal["outgoing", "incoming"]
    relation_type: str
    other_id: UUID
    other_type: str
    other_title: str
    other_status: str
    note: str | None
    created_at: datetime
    expired_at: datetime | None  # set when the edge stopped holding
    # Set by relationship discovery (sql/016): the cosine when found, the words that justify
    # the edge, who decided it (structural, vector, offline-rules, ollama:<model>).
    similarity: float | None = None
    evidence: str | None = None
    backend: str | None = None


class TurnText(BaseModel):
    """A supporting turn with its prompt and outcome, cut to the read's bounds."""

    ordinal: int
    native_turn_id: str | None
    native_message_ids: list[str]
    role: str  # segment | supports | corrected | correcting
    started_at: datetime | None
    completed_at: datetime | None
    prompt: str | None  # None when the total text budget was spent on earlier turns
    outcome: str | None
    prompt_truncated: bool
    outcome_truncated: bool


class ProvenanceDetail(BaseModel):
    """The chain from a memory to a native task: the task, its topic segment, the turns."""

    task_id: UUID
    source: str
    native_task_id: str
    task_title: str | None
    segment_id: UUID
    segment_title: str
    first_ordinal: int
    last_ordinal: int
    turns: list[TurnText]


class DreamProvenance(BaseModel):
    """What the dream cycle did with a memory: made it (`role` "created") or superseded it
    (`role` "superseded"), in which run, from which memories, with the panel's votes."""

    role: str  # "created" | "superseded"
    run_id: UUID
    run_type: str
    run_started_at: datetime
    strategy: str | None
    operation: str | None
    schema_operation: str | None
    votes: dict[str, str]  # evaluator -> accept / reject / defer
    rests_on: list[UUID]
    successor_id: UUID | None = None  # SUPERSEDE: the newer memory that replaces the old one
    user_rejected_at: datetime | None = None
    user_rejection_reason: str | None = None


class MemoryDetail(BaseModel):
    """One memory in full (content cut at the read's bound), its relationships, its sources."""

    id: UUID
    type: str
    title: str
    content: str
    content_truncated: bool
    summary: str | None
    tags: list[str]
    project: str | None
    mem_class: str | None
    source_type: str | None
    source_url: str | None
    status: str
    confidence: float
    parent_id: UUID | None
    created_at: datetime
    updated_at: datetime
    relationships: list[Relationship]
    relationships_truncated: bool  # more edges than the read returns
    # Near-duplicates: how often the statement was captured (this memory plus its copies, each
    # an incoming duplicate_of edge with its own provenance); set on a copy: the kept memory.
    observation_count: int = 1
    duplicate_of: UUID | None = None
    provenance: list[ProvenanceDetail]
    turns_truncated: bool  # more supporting turns, or more turn text, than the read returns
    # The dream cycle's part: set on a dream memory and on a memory it superseded.
    dream: list[DreamProvenance] = Field(default_factory=list)
    superseded_by: UUID | None = None  # a superseded memory's live successor


class GraphNode(BaseModel):
    id: UUID
    type: str
    title: str
    preview: str
    status: str
    project: str | None
    created_at: datetime
    depth: int  # hops from the root (0 = the root)
    dream_run_id: UUID | None = None  # set on memories the dream cycle made
    provenance: list[Provenance] = Field(default_factory=list)


class GraphEdge(BaseModel):
    source_id: UUID
    target_id: UUID
    relation_type: str
    note: str | None
    created_at: datetime
    expired_at: datetime | None
    similarity: float | None = None  # as on Relationship
    evidence: str | None = None
    backend: str | None = None


class MemoryGraph(BaseModel):
    """The typed-relationship neighbourhood of a memory, breadth first, both directions."""

    root_id: UUID
    depth: int
    include_expired: bool
    nodes: list[GraphNode]  # breadth-first order, the root first
    edges: list[GraphEdge]  # every edge among the returned nodes
    truncated: bool  # the node or edge cap cut the neighbourhood


class Timeline(BaseModel):
    """Memories ordered by creation time, oldest first."""

    around: datetime | None
    window_start: datetime | None
    window_end: datetime | None
    project: str | None
    items: list[MemorySummary]
    truncated: bool  # more memories matched than the limit
