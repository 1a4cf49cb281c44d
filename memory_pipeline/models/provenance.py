"""The exact chain from a memory to the native agent task it came from, as every read reports it
(search hits, context packs, listings, graphs)."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel


class TurnRef(BaseModel):
    ordinal: int
    native_turn_id: str | None
    native_message_ids: list[str]
    role: str  # segment | supports | corrected | correcting


class Provenance(BaseModel):
    """The exact chain from a memory to the native agent task it came from."""

    task_id: UUID
    source: str
    native_task_id: str
    task_title: str | None
    segment_id: UUID
    turns: list[TurnRef]
