"""Which memories a run links, and their vector neighbours.

A run takes the window's memories (partition days) whose discovery scan is missing or stale: the
text changed (a growing segment), the judge changed, or the serving space changed. Each one's
neighbours come from the serving space's partial HNSW index over memory vectors (the space and
width inlined as literals so the planner can use it), never from a scan of the corpus: a day's
memories against 100K existing ones costs one index probe each.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from uuid import UUID

import numpy as np
import psycopg
from psycopg import sql

from memory_pipeline import tuning
from memory_pipeline.relationships.models import Memory
from memory_pipeline.semantic.text import content_terms

# The text a scan is keyed on: the memory's title and content (what its vector embeds).
SCAN_SHA_SQL = "encode(sha256(convert_to(m.title || E'\\n' || m.content, 'UTF8')), 'hex')"
# The entity nodes a memory mentions, as a scan is keyed on them (sql/040): a reversal needs a
# subject entity both memories mention, so a memory whose mentions changed is scanned again.
ENTITY_SHA_SQL = (
    "(SELECT encode(sha256(convert_to(coalesce(string_agg(DISTINCT me.entity_id::text, ','"
    " ORDER BY me.entity_id::text), ''), 'UTF8')), 'hex')"
    " FROM memory_entities me WHERE me.memory_id = m.id)"
)
# Archived and user-rejected memories are out of play; a superseded one keeps its history.
LINKED_STATUSES = "('active', 'explored', 'superseded')"
HNSW_EF_SEARCH = 100  # candidates the index keeps per probe: above RELATIONSHIP_NEIGHBOURS


_MEMORY_COLUMNS = (
    "m.id, m.type, m.title, m.content, m.project, m.created_at,"
    " coalesce((SELECT array_agg(DISTINCT p.task_id) FROM memory_provenance p"
    " WHERE p.memory_id = m.id), '{}'),"
    " (SELECT coalesce(jsonb_agg(jsonb_build_array(e.id, e.name,"
    "  (SELECT coalesce(jsonb_agg(a.alias), '[]') FROM entity_aliases a"
    "   WHERE a.entity_id = e.id))), '[]')"
    "  FROM entities e WHERE e.id IN (SELECT me.entity_id FROM memory_entities me"
    "  WHERE me.memory_id = m.id))"
)


def _entities(value: object) -> tuple[tuple[UUID, frozenset[str]], ...]:
    """(node, head words of its names) for each node a memory mentions, by node id."""
    out = []
    for node, name, aliases in value or []:  # type: ignore[attr-defined]
        words = {w for alias in (name, *aliases) for w in content_terms(alias)[:1]}
        out.append((UUID(node), frozenset(words)))
    return tuple(sorted(out, key=lambda e: str(e[0])))


def _memory(row: Sequence[object]) -> Memory:
    return Memory(
        id=row[0],  # type: ignore[arg-type]
        type=row[1],  # type: ignore[arg-type]
        title=row[2],  # type: ignore[arg-type]
        content=row[3],  # type: ignore[arg-type]
        project=row[4],  # type: ignore[arg-type]
        created_at=row[5],  # type: ignore[arg-type]
        task_ids=frozenset(row[6]),  # type: ignore[arg-type]
        entities=_entities(row[7]),
    )


def pending_memories(
    conn: psycopg.Connection, start: date, end: date, space: str | None, backend: str
) -> list[Memory]:
    """The window's memories whose scan is missing or stale (text, entity mentions, judge or
    space changed), oldest first."""
    rows = conn.execute(
        f"SELECT {_MEMORY_COLUMNS} FROM memories m"
        " LEFT JOIN relationship_scans s ON s.memory_id = m.id"
        " WHERE m.partition_day >= %s AND m.partition_day < %s AND m.type = ANY(%s)"
        f" AND m.status IN {LINKED_STATUSES}"
        f" AND (s.memory_id IS NULL OR s.content_sha256 <> {SCAN_SHA_SQL}"
        f" OR s.entities_sha256 IS DISTINCT FROM {ENTITY_SHA_SQL}"
        " OR s.backend <> %s OR s.space IS DISTINCT FROM %s)"
        " ORDER BY m.created_at, m.id",
        [start, end, list(tuning.RELATIONSHIP_TYPES), backend, space],
    ).fetchall()
    return [_memory(r) for r in rows]


def load_memories(conn: psycopg.Connection, ids: Sequence[UUID]) -> dict[UUID, Memory]:
    rows = conn.execute(
        f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.id = ANY(%s)", [list(ids)]
    ).fetchall()
    return {r[0]: _memory(r) for r in rows}


def vectors(conn: psycopg.Connection, space: str, ids: Sequence[UUID]) -> dict[UUID, np.ndarray]:
    """The memories' current vectors in `space` (a memory without one is absent)."""
    rows = conn.execute(
        "SELECT memory_id, embedding FROM memory_embeddings WHERE space = %s"
        " AND memory_id = ANY(%s)",
        [space, list(ids)],
    ).fetchall()
    return {r[0]: np.asarray(r[1].to_numpy(), dtype=np.float32) for r in rows}


def neighbours(
    conn: psycopg.Connection,
    space: tuple[str, int],
    vector: np.ndarray,
    exclude: UUID,
    k: int = tuning.RELATIONSHIP_NEIGHBOURS,
) -> list[tuple[UUID, float]]:
    """The k nearest linkable memories by cosine in the serving space (HNSW), nearest first."""
    name, dims = space
    cast = sql.SQL("vector({})").format(sql.Literal(dims))
    with conn.transaction():
        conn.execute(f"SET LOCAL hnsw.ef_search = {int(max(HNSW_EF_SEARCH, k + 1))}")
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(
            sql.SQL(
                "SELECT e.memory_id, e.embedding::{cast} <=> %s::{cast} AS d"
                " FROM memory_embeddings e JOIN memories m ON m.id = e.memory_id"
                " WHERE e.space = {space} AND m.type = ANY(%s) AND e.memory_id <> %s"
                f" AND m.status IN {LINKED_STATUSES}"
                " ORDER BY d LIMIT %s"
            ).format(space=sql.Literal(name), cast=cast),
            [vector, list(tuning.RELATIONSHIP_TYPES), exclude, k],
        ).fetchall()
    rows.sort(key=lambda r: (r[1], str(r[0])))
    return [(r[0], 1.0 - float(r[1])) for r in rows]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def cue_candidates(
    conn: psycopg.Connection, memory: Memory, words: Sequence[str], limit: int
) -> list[UUID]:
    """Older decisions and segments of other tasks that name a word a reversal cue of `memory`
    drops, through the full-text index: a reversed choice may sit in a long segment whose
    vector is far from the short decision that reverses it."""
    if not words:
        return []
    query = " || ".join("plainto_tsquery('english', %s)" for _ in words)
    rows = conn.execute(
        "SELECT m.id FROM memories m"
        f" WHERE m.search_vector @@ ({query})"
        " AND m.type IN ('decision', 'segment') AND m.id <> %s"
        f" AND m.status IN {LINKED_STATUSES} AND (m.created_at, m.id::text) < (%s, %s)"
        " AND NOT EXISTS (SELECT 1 FROM memory_provenance p WHERE p.memory_id = m.id"
        "  AND p.task_id = ANY(%s))"
        " ORDER BY m.created_at DESC, m.id LIMIT %s",
        [*words, memory.id, memory.created_at, str(memory.id), list(memory.task_ids), limit],
    ).fetchall()
    return [r[0] for r in rows]
