"""Near-duplicates: the same statement captured from different tasks, folded into one memory.

Two distilled memories of the same type are near-duplicates when their vectors are close
(DUPLICATE_MIN_SIMILARITY), their stemmed content words overlap (DUPLICATE_MIN_JACCARD), and they
use the same negation and reversal words: vectors alone put "use X" next to "stop using X".
They must come from different tasks (one task repeating itself is the semantic pass's
business). The earliest observation is kept; each later copy gets `memories.duplicate_of` and a
live `duplicate_of` edge (copy -> kept), keeps its own provenance, and the kept memory's
`observation_count` counts itself plus its copies. Search shows the kept memory only, with that
count.
"""

from __future__ import annotations

import re
from uuid import UUID

import psycopg

from memory_pipeline import tuning
from memory_pipeline.relationships.models import Edge, Memory
from memory_pipeline.semantic.text import content_terms, jaccard


def lexical_overlap(a: Memory, b: Memory) -> float:
    return jaccard(content_terms(a.text), content_terms(b.text))


_WORD = re.compile(r"[a-z']+")


def polarity(memory: Memory) -> frozenset[str]:
    """The negation and reversal words a memory uses (DUPLICATE_POLARITY_WORDS)."""
    words = set(_WORD.findall(memory.text.lower()))
    return frozenset(words & set(tuning.DUPLICATE_POLARITY_WORDS))


def is_duplicate(a: Memory, b: Memory, similarity: float) -> bool:
    if a.type != b.type or a.type not in tuning.DISTILLED_TYPES:
        return False
    if a.task_ids and b.task_ids and a.task_ids & b.task_ids:
        return False
    if polarity(a) != polarity(b):
        return False
    return (
        similarity >= tuning.DUPLICATE_MIN_SIMILARITY
        and lexical_overlap(a, b) >= tuning.DUPLICATE_MIN_JACCARD
    )


def duplicate_edge(a: Memory, b: Memory, similarity: float) -> Edge:
    """The later copy -> the earlier one (the kept memory is resolved when stored)."""
    copy, kept = (a, b) if a.newer_than(b) else (b, a)
    return Edge(
        copy.id,
        kept.id,
        "duplicate_of",
        similarity=round(similarity, 4),
        evidence=f"cosine {similarity:.3f}, shared words {lexical_overlap(a, b):.2f}",
        backend="vector",
    )


def kept_root(conn: psycopg.Connection, memory_id: UUID) -> UUID:
    """Follow duplicate_of to the memory that is kept (chains are at most a few long)."""
    seen = {memory_id}
    current = memory_id
    while True:
        row = conn.execute("SELECT duplicate_of FROM memories WHERE id = %s", [current]).fetchone()
        if row is None or row[0] is None or row[0] in seen:
            return current
        seen.add(row[0])
        current = row[0]


def refresh_duplicate_marks(conn: psycopg.Connection) -> int:
    """Make `memories.duplicate_of` and `observation_count` agree with the live duplicate_of
    edges; returns how many memories changed. Runs in the caller's transaction."""
    changed = conn.execute(
        "WITH live AS ("
        "  SELECT DISTINCT ON (source_id) source_id, target_id FROM memory_relationships"
        "  WHERE relation_type = 'duplicate_of' AND expired_at IS NULL"
        "  ORDER BY source_id, created_at)"
        " UPDATE memories m SET duplicate_of = live.target_id FROM live"
        " WHERE m.id = live.source_id AND m.duplicate_of IS DISTINCT FROM live.target_id"
    ).rowcount
    changed += conn.execute(
        "UPDATE memories m SET duplicate_of = NULL WHERE m.duplicate_of IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM memory_relationships r WHERE r.source_id = m.id"
        " AND r.relation_type = 'duplicate_of' AND r.expired_at IS NULL)"
    ).rowcount
    changed += conn.execute(
        "WITH counts AS ("
        "  SELECT m.id, 1 + count(c.id) AS n FROM memories m"
        "  LEFT JOIN memories c ON c.duplicate_of = m.id"
        "  WHERE m.observation_count > 1 OR EXISTS"
        "   (SELECT 1 FROM memories d WHERE d.duplicate_of = m.id)"
        "  GROUP BY m.id)"
        " UPDATE memories m SET observation_count = counts.n FROM counts"
        " WHERE m.id = counts.id AND m.observation_count <> counts.n"
    ).rowcount
    return changed
