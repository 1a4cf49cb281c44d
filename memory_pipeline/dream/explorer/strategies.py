"""The Explorer's eleven strategies: each a SQL query returning memory slices with a reason.

Every strategy reads only active memories that are not topic segments and not dream-cycle
memories themselves (so the cycle never dreams about its own output), returns at most
`DREAM_SLICES_PER_STRATEGY` slices of at most `DREAM_SLICE_MAX_MEMORIES` memories, and is
deterministic for the same database. Similarity strategies compare vectors of the serving space
(or the space with the most vectors) among the `DREAM_SIMILARITY_POOL` newest memories.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from memory_pipeline import tuning
from memory_pipeline.dream.models import Slice

ELIGIBLE = (
    "m.status = 'active' AND m.type <> 'segment' AND coalesce(m.source_type, '') <> 'dream_cycle'"
)


@dataclass(frozen=True)
class ExploreContext:
    space: str | None  # embedding space for similarity; None: similarity strategies find nothing
    reference: datetime  # "now" for ages: the newest memory's creation time
    per_strategy: int = tuning.DREAM_SLICES_PER_STRATEGY
    max_memories: int = tuning.DREAM_SLICE_MAX_MEMORIES
    pool: int = tuning.DREAM_SIMILARITY_POOL


Strategy = Callable[[psycopg.Connection, ExploreContext], list[Slice]]


def _rows(conn: psycopg.Connection, query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    return conn.execute(query, params).fetchall()


def _pool(where: str = "") -> str:
    """The similarity pool: the newest eligible memories with a vector in the space."""
    return (
        "SELECT m.id, m.project, m.type, m.created_at, m.access_count, e.embedding"
        " FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id AND e.space = %(space)s"
        f" WHERE {ELIGIBLE} {where} ORDER BY m.created_at DESC, m.id LIMIT %(pool)s"
    )


def _pairs_once(rows: list[tuple[Any, ...]], limit: int) -> list[tuple[str, str, float]]:
    """Best pairs first, each memory in at most one pair."""
    used: set[str] = set()
    out: list[tuple[str, str, float]] = []
    for a, b, cos in rows:
        a, b = str(a), str(b)
        if a in used or b in used:
            continue
        used.update((a, b))
        out.append((a, b, float(cos)))
        if len(out) >= limit:
            break
    return out


def temporal_juxtaposition(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """Memories of different projects learned within the same window of hours: what was on the
    user's mind at once may connect."""
    rows = _rows(
        conn,
        "WITH pool AS (SELECT m.id, m.project, m.created_at FROM memories m"
        f"  WHERE {ELIGIBLE} AND m.project IS NOT NULL"
        "  ORDER BY m.created_at DESC, m.id LIMIT %(pool)s)"
        " SELECT floor(extract(epoch FROM created_at) / (3600 * %(hours)s)) AS bucket,"
        "  array_agg(id::text ORDER BY project, created_at, id),"
        "  array_agg(project ORDER BY project, created_at, id)"
        " FROM pool GROUP BY 1 HAVING count(DISTINCT project) >= 2"
        " ORDER BY 1 DESC LIMIT %(n)s",
        {"pool": ctx.pool, "hours": tuning.DREAM_JUXTAPOSITION_HOURS, "n": ctx.per_strategy},
    )
    slices = []
    for _, ids, projects in rows:
        # Take memories round-robin across projects so the slice really juxtaposes them.
        by_project: dict[str, list[str]] = {}
        for mid, project in zip(ids, projects, strict=True):
            by_project.setdefault(project, []).append(mid)
        picked: list[str] = []
        while len(picked) < ctx.max_memories and any(by_project.values()):
            for queue in by_project.values():
                if queue and len(picked) < ctx.max_memories:
                    picked.append(queue.pop(0))
        names = ", ".join(sorted(by_project))
        slices.append(
            Slice(
                "temporal_juxtaposition",
                f"learned within {tuning.DREAM_JUXTAPOSITION_HOURS} h of each other in "
                f"different projects ({names})",
                tuple(picked),
            )
        )
    return slices


def cross_project_collision(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """Two highly similar memories of different projects: the same lesson or tool met twice."""
    if ctx.space is None:
        return []
    rows = _rows(
        conn,
        f"WITH pool AS ({_pool(where='AND m.project IS NOT NULL')})"
        " SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding) AS cos"
        " FROM pool a JOIN pool b ON a.id < b.id AND a.project <> b.project"
        " WHERE 1 - (a.embedding <=> b.embedding) >= %(min)s"
        " ORDER BY cos DESC, a.id, b.id LIMIT 200",
        {"space": ctx.space, "pool": ctx.pool, "min": tuning.DREAM_COLLISION_MIN_COSINE},
    )
    return [
        Slice(
            "cross_project_collision",
            f"similar memories (cosine {cos:.2f}) in two different projects",
            (a, b),
            score=cos,
        )
        for a, b, cos in _pairs_once(rows, ctx.per_strategy)
    ]


def orphan_archaeology(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """The oldest memories with no live edge at all, each with its nearest neighbours: what was
    never connected may belong somewhere."""
    rows = _rows(
        conn,
        f"SELECT m.id::text FROM memories m WHERE {ELIGIBLE} AND NOT EXISTS ("
        " SELECT 1 FROM memory_relationships r WHERE r.expired_at IS NULL"
        " AND (r.source_id = m.id OR r.target_id = m.id))"
        " ORDER BY m.created_at, m.id LIMIT %(n)s",
        {"n": ctx.per_strategy},
    )
    slices = []
    for (mid,) in rows:
        near: list[str] = []
        if ctx.space is not None:
            near = [
                str(r[0])
                for r in _rows(
                    conn,
                    "SELECT m.id FROM memories m"
                    " JOIN memory_embeddings e ON e.memory_id = m.id AND e.space = %(space)s"
                    " JOIN memory_embeddings o ON o.memory_id = %(id)s AND o.space = %(space)s"
                    f" WHERE {ELIGIBLE} AND m.id <> %(id)s"
                    " ORDER BY e.embedding <=> o.embedding, m.id LIMIT %(k)s",
                    {"space": ctx.space, "id": mid, "k": min(3, ctx.max_memories - 1)},
                )
            ]
        slices.append(
            Slice("orphan_archaeology", "an old memory with no relationships", (mid, *near))
        )
    return slices


def contradiction_hunt(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """Live `contradicts` edges between active memories (newer -> older): something believed
    may have been reversed. These slices always reach the panel, so they are bounded by the
    run's slice bound (DREAM_SLICES_PER_RUN), not the strategy's; edges between two decisions
    come first, then the newest reversal, a distilled memory before its near-duplicate
    restatement, then by text: never by the edges' insertion time (one transaction writes them
    all) or the random ids, so every home of the same memories dreams the same."""
    rows = _rows(
        conn,
        "SELECT r.source_id::text, r.target_id::text, coalesce(r.note, '')"
        " FROM memory_relationships r"
        " JOIN memories s ON s.id = r.source_id JOIN memories t ON t.id = r.target_id"
        " WHERE r.relation_type = 'contradicts' AND r.expired_at IS NULL"
        " AND s.status = 'active' AND t.status = 'active'"
        " ORDER BY (s.type = 'decision' AND t.type = 'decision') DESC, s.created_at DESC,"
        " s.duplicate_of IS NOT NULL, t.created_at DESC, md5(s.title || s.content),"
        " md5(t.title || t.content), r.source_id, r.target_id LIMIT %(n)s",
        {"n": tuning.DREAM_SLICES_PER_RUN},
    )
    return [
        Slice(
            "contradiction_hunt",
            "a live contradicts edge (newer -> older)" + (f": {note}" if note else ""),
            (newer, older),
        )
        for newer, older, note in rows
    ]


def decision_revisit(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """An old decision with newer, related material in its project: does it still hold?"""
    if ctx.space is None:
        return []
    rows = _rows(
        conn,
        "SELECT d.id::text, array_agg(n.id::text ORDER BY n.cos DESC, n.id)"
        " FROM memories d JOIN memory_embeddings de ON de.memory_id = d.id AND de.space = %(space)s"
        " CROSS JOIN LATERAL ("
        "  SELECT m.id, 1 - (e.embedding <=> de.embedding) AS cos FROM memories m"
        "  JOIN memory_embeddings e ON e.memory_id = m.id AND e.space = %(space)s"
        f"  WHERE {ELIGIBLE} AND m.project = d.project AND m.created_at > d.created_at"
        "  AND 1 - (e.embedding <=> de.embedding) >= %(min)s"
        "  ORDER BY cos DESC, m.id LIMIT %(k)s) n"
        " WHERE d.type = 'decision' AND d.status = 'active' AND d.project IS NOT NULL"
        " AND coalesce(d.source_type, '') <> 'dream_cycle'"
        " AND d.created_at < %(ref)s - make_interval(days => %(age)s)"
        " GROUP BY d.id, d.created_at ORDER BY d.created_at, d.id LIMIT %(n)s",
        {
            "space": ctx.space,
            "min": tuning.DREAM_REVISIT_MIN_COSINE,
            "k": ctx.max_memories - 1,
            "ref": ctx.reference,
            "age": tuning.DREAM_REVISIT_MIN_AGE_DAYS,
            "n": ctx.per_strategy,
        },
    )
    return [
        Slice(
            "decision_revisit",
            f"a decision older than {tuning.DREAM_REVISIT_MIN_AGE_DAYS} days with newer related"
            " memories in its project",
            (decision, *newer),
        )
        for decision, newer in rows
    ]


def recurring_question(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """Memories of different tasks that answer questions and say nearly the same: the user
    keeps asking it."""
    if ctx.space is None:
        return []
    asks = (
        "AND (m.type = 'question' OR jsonb_typeof(m.metadata -> 'questions') = 'array'"
        " AND jsonb_array_length(m.metadata -> 'questions') > 0)"
    )
    rows = _rows(
        conn,
        f"WITH pool AS ({_pool(where=asks)}),"
        " tasks AS (SELECT p.id, coalesce((SELECT min(mp.task_id::text)"
        "  FROM memory_provenance mp WHERE mp.memory_id = p.id), p.id::text) AS task"
        "  FROM pool p)"
        " SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding) AS cos"
        " FROM pool a JOIN pool b ON a.id < b.id"
        " JOIN tasks ta ON ta.id = a.id JOIN tasks tb ON tb.id = b.id"
        " WHERE ta.task IS DISTINCT FROM tb.task"
        " AND 1 - (a.embedding <=> b.embedding) >= %(min)s"
        " ORDER BY cos DESC, a.id, b.id LIMIT 200",
        {"space": ctx.space, "pool": ctx.pool, "min": tuning.DREAM_RECURRING_MIN_COSINE},
    )
    return [
        Slice(
            "recurring_question",
            f"the same question answered in two tasks (cosine {cos:.2f})",
            (a, b),
            score=cos,
        )
        for a, b, cos in _pairs_once(rows, ctx.per_strategy)
    ]


CORRECTIONS = "AND m.type = 'correction_episode'"


def correction_pattern(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """Correction episodes on one theme (at least DREAM_CORRECTION_MIN_EPISODES of them): the
    agent keeps getting the same thing wrong."""
    if ctx.space is None:
        return []
    rows = _rows(
        conn,
        f"WITH pool AS ({_pool(where=CORRECTIONS)})"
        " SELECT a.id::text, array_agg(b.id::text ORDER BY"
        "  a.embedding <=> b.embedding, b.id)"
        " FROM pool a JOIN pool b ON a.id <> b.id"
        " AND 1 - (a.embedding <=> b.embedding) >= %(min)s"
        " GROUP BY a.id ORDER BY count(*) DESC, a.id",
        {"space": ctx.space, "pool": ctx.pool, "min": tuning.DREAM_CORRECTION_THEME_MIN_COSINE},
    )
    used: set[str] = set()
    slices = []
    for seed, others in rows:
        members = [m for m in (seed, *others) if m not in used][: ctx.max_memories]
        if len(members) < tuning.DREAM_CORRECTION_MIN_EPISODES or seed in used:
            continue
        used.update(members)
        slices.append(
            Slice(
                "correction_pattern",
                f"{len(members)} correction episodes on one theme",
                tuple(members),
                score=float(len(members)),
            )
        )
        if len(slices) >= ctx.per_strategy:
            break
    return slices


def stale_priority(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """Priorities and decisions nobody retrieved for DREAM_STALE_DAYS, per project: still
    current, or quietly dropped?"""
    rows = _rows(
        conn,
        "SELECT m.project, array_agg(m.id::text ORDER BY m.created_at, m.id)"
        f" FROM memories m WHERE {ELIGIBLE} AND m.type IN ('priority', 'decision')"
        " AND coalesce(m.last_accessed_at, m.created_at)"
        "  < %(ref)s - make_interval(days => %(days)s)"
        " GROUP BY m.project ORDER BY min(m.created_at), m.project NULLS LAST LIMIT %(n)s",
        {"ref": ctx.reference, "days": tuning.DREAM_STALE_DAYS, "n": ctx.per_strategy},
    )
    return [
        Slice(
            "stale_priority",
            f"priorities/decisions of {project or 'no project'} not retrieved for "
            f"{tuning.DREAM_STALE_DAYS} days",
            tuple(ids[: ctx.max_memories]),
        )
        for project, ids in rows
    ]


def bridge_between_clusters(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """A memory whose live edges reach memories of two or more other projects: a bridge
    between clusters that may carry a lesson across."""
    rows = _rows(
        conn,
        "WITH nb AS (SELECT r.source_id AS a, r.target_id AS b FROM memory_relationships r"
        "  WHERE r.expired_at IS NULL UNION SELECT r.target_id, r.source_id"
        "  FROM memory_relationships r WHERE r.expired_at IS NULL)"
        " SELECT m.id::text, array_agg(DISTINCT o.id::text), count(DISTINCT o.project)"
        " FROM memories m JOIN nb ON nb.a = m.id JOIN memories o ON o.id = nb.b"
        f" WHERE {ELIGIBLE} AND o.status = 'active' AND o.project IS NOT NULL"
        " AND o.project IS DISTINCT FROM m.project"
        " GROUP BY m.id HAVING count(DISTINCT o.project) >= 2"
        " ORDER BY count(DISTINCT o.project) DESC, m.id LIMIT %(n)s",
        {"n": ctx.per_strategy},
    )
    return [
        Slice(
            "bridge_between_clusters",
            f"connected to memories of {n} other projects",
            (bridge, *sorted(others)[: ctx.max_memories - 1]),
        )
        for bridge, others, n in rows
    ]


def reinforced_vs_forgotten(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """A memory retrieved often beside similar ones never retrieved: is the forgotten one
    redundant, or overlooked?"""
    if ctx.space is None:
        return []
    rows = _rows(
        conn,
        f"WITH pool AS ({_pool()})"
        " SELECT a.id::text, array_agg(b.id::text ORDER BY a.embedding <=> b.embedding, b.id)"
        " FROM pool a JOIN pool b ON b.access_count = 0 AND a.id <> b.id"
        " AND 1 - (a.embedding <=> b.embedding) >= %(min)s"
        " WHERE a.access_count > 0"
        " GROUP BY a.id, a.access_count ORDER BY a.access_count DESC, a.id LIMIT %(n)s",
        {
            "space": ctx.space,
            "pool": ctx.pool,
            "min": tuning.DREAM_REVISIT_MIN_COSINE,
            "n": ctx.per_strategy,
        },
    )
    return [
        Slice(
            "reinforced_vs_forgotten",
            "a often-retrieved memory beside similar never-retrieved ones",
            (hot, *cold[: ctx.max_memories - 1]),
        )
        for hot, cold in rows
    ]


def superseded_echo(conn: psycopg.Connection, ctx: ExploreContext) -> list[Slice]:
    """Our own: active memories that closely echo a superseded one (with its successor): they
    may still carry the outdated belief."""
    if ctx.space is None:
        return []
    rows = _rows(
        conn,
        "SELECT s.id::text, (SELECT r.target_id::text FROM memory_relationships r"
        "  WHERE r.source_id = s.id AND r.relation_type = 'superseded_by'"
        "  AND r.expired_at IS NULL ORDER BY r.created_at DESC LIMIT 1),"
        " array_agg(m.id::text ORDER BY e.embedding <=> se.embedding, m.id)"
        " FROM memories s JOIN memory_embeddings se ON se.memory_id = s.id AND se.space = %(space)s"
        " JOIN memories m ON m.id <> s.id"
        " JOIN memory_embeddings e ON e.memory_id = m.id AND e.space = %(space)s"
        f" WHERE s.status = 'superseded' AND {ELIGIBLE}"
        " AND 1 - (e.embedding <=> se.embedding) >= %(min)s"
        " GROUP BY s.id ORDER BY s.id LIMIT %(n)s",
        {
            "space": ctx.space,
            "min": tuning.DREAM_COLLISION_MIN_COSINE,
            "n": ctx.per_strategy,
        },
    )
    slices = []
    for old, successor, echoes in rows:
        members = [old, *([successor] if successor else [])]
        members += [e for e in echoes if e not in members][: ctx.max_memories - len(members)]
        slices.append(
            Slice("superseded_echo", "active memories echoing a superseded one", tuple(members))
        )
    return slices


# In order of the evidence they carry: when two strategies assemble the same memories, the
# precheck keeps the slice of the earlier one (its reason and score reach the Thinker).
STRATEGIES: dict[str, Strategy] = {
    "contradiction_hunt": contradiction_hunt,
    "cross_project_collision": cross_project_collision,
    "correction_pattern": correction_pattern,
    "decision_revisit": decision_revisit,
    "recurring_question": recurring_question,
    "superseded_echo": superseded_echo,
    "bridge_between_clusters": bridge_between_clusters,
    "reinforced_vs_forgotten": reinforced_vs_forgotten,
    "temporal_juxtaposition": temporal_juxtaposition,
    "stale_priority": stale_priority,
    "orphan_archaeology": orphan_archaeology,
}
