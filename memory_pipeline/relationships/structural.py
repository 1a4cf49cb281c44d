"""Edges that need no judge: derived_from (from provenance) and related_to (vector neighbours)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import psycopg

from memory_pipeline import tuning
from memory_pipeline.relationships.models import Edge, Memory


def derived_from(conn: psycopg.Connection, memories: Sequence[Memory]) -> dict[UUID, list[Edge]]:
    """A distilled memory (decision, insight, correction) -> the topic segment it was distilled
    from, read from its provenance; keyed by the distilled memory."""
    ids = [m.id for m in memories if m.type in tuning.DISTILLED_TYPES]
    out: dict[UUID, list[Edge]] = {i: [] for i in ids}
    if not ids:
        return out
    rows = conn.execute(
        "SELECT DISTINCT p.memory_id, s.memory_id FROM memory_provenance p"
        " JOIN topic_segments s ON s.id = p.segment_id"
        " WHERE p.memory_id = ANY(%s) AND s.memory_id <> p.memory_id",
        [ids],
    ).fetchall()
    for memory_id, segment_memory in rows:
        out[memory_id].append(
            Edge(memory_id, segment_memory, "derived_from", evidence="provenance")
        )
    return out


def related_to(
    memory: Memory,
    neighbours: Sequence[tuple[UUID, float]],
    skip: set[UUID],
) -> list[Edge]:
    """The nearest neighbours at or above RELATED_MIN_SIMILARITY, at most RELATED_MAX_PER_MEMORY,
    leaving out `skip` (the memory's own segment or distilled memories, its duplicates)."""
    edges = []
    for other, sim in neighbours:
        if len(edges) >= tuning.RELATED_MAX_PER_MEMORY:
            break
        if other in skip or sim < tuning.RELATED_MIN_SIMILARITY:
            continue
        edges.append(
            Edge(memory.id, other, "related_to", similarity=round(sim, 4), backend="vector")
        )
    return edges


def related_holds(similarity: float) -> bool:
    return similarity >= tuning.RELATED_MIN_SIMILARITY
