"""One discovery run over a window of days: propose edges, write them, expire what stopped
holding, fold near-duplicates, and mark the memories scanned.

Idempotent: a memory is scanned again only when its text, its entity mentions, the judge or the
serving space changed (`relationship_scans`), so re-running a day adds nothing and calls no
model. A `contradicts` edge, whichever judge proposes it, holds only between two memories of
which the newer is a decision and both mention a subject entity (models.reversal_allowed):
judged pairs are gated, and live edges that fail the test are expired. When a memory
is scanned, every live discovery edge touching it is re-checked: derived_from against its
provenance, related_to against the current cosine, duplicate_of against the near-duplicate test,
and judged edges against the judge's new verdict on that pair (or the candidate threshold when the
pair is no longer a candidate). What no longer holds gets `expired_at`; nothing is deleted. A
judged edge of another backend is kept: this judge cannot vouch for or against it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from uuid import UUID

import psycopg
from pydantic import BaseModel

from memory_pipeline import tuning
from memory_pipeline.embedding.spaces import serving_space
from memory_pipeline.relationships import candidates, duplicates, judge_offline, structural
from memory_pipeline.relationships.models import (
    DISCOVERED_TYPES,
    JUDGED_TYPES,
    Edge,
    Judge,
    JudgeFailure,
    Memory,
    Pair,
    reversal_allowed,
)


class RelationshipReport(BaseModel):
    judge: str
    space: str | None
    scanned: int = 0
    skipped_current: int = 0  # window memories whose scan was already current
    without_vector: int = 0  # scanned without neighbours (no vector in the serving space yet)
    pairs_judged: int = 0
    added: dict[str, int] = {}
    expired: dict[str, int] = {}
    live: dict[str, int] = {}  # live edges of each type in the whole corpus after the run
    duplicates_marked: int = 0
    failures: list[JudgeFailure] = []

    def metadata(self) -> dict[str, object]:
        return {
            "judge": self.judge,
            "serving_space": self.space or "none yet",
            "memories_scanned": self.scanned,
            "memories_already_current": self.skipped_current,
            "memories_without_vector": self.without_vector,
            "pairs_judged": self.pairs_judged,
            "edges_added": sum(self.added.values()),
            "edges_expired": sum(self.expired.values()),
            **{f"added_{t}": n for t, n in sorted(self.added.items())},
            **{f"expired_{t}": n for t, n in sorted(self.expired.items())},
            **{f"live_{t}": n for t, n in sorted(self.live.items())},
            "duplicate_marks_changed": self.duplicates_marked,
            "judge_failures": len(self.failures),
        }


@dataclass
class _Scan:
    memory: Memory
    neighbours: list[tuple[UUID, float]] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    others: dict[UUID, Memory] = field(default_factory=dict)  # the neighbours, loaded
    # Older memories naming what a reversal cue drops, found by full text (judged only).
    cue_pairs: list[tuple[UUID, float]] = field(default_factory=list)


def discover_window(
    conn: psycopg.Connection,
    judge: Judge,
    start: date,
    end: date,
    progress: Callable[[str], None] | None = None,
) -> RelationshipReport:
    say = progress or (lambda _msg: None)
    space = serving_space(conn)
    space_name = space[0] if space else None
    report = RelationshipReport(judge=judge.name, space=space_name)
    pending = candidates.pending_memories(conn, start, end, space_name, judge.name)
    total = conn.execute(
        "SELECT count(*) FROM memories m WHERE partition_day >= %s AND partition_day < %s"
        f" AND type = ANY(%s) AND m.status IN {candidates.LINKED_STATUSES}",
        [start, end, list(tuning.RELATIONSHIP_TYPES)],
    ).fetchone()[0]  # type: ignore[index]
    report.skipped_current = total - len(pending)
    with conn.transaction():
        swept = _expire_baseless_reversals(conn)
    if swept:
        report.expired = {"contradicts": swept}
    if not pending:
        report.live = live_counts(conn)
        return report
    say(f"relationships: {len(pending)} memories to link ({judge.name}, space {space_name})")

    scans = _propose(conn, pending, space, report)
    pairs = _judge_pairs(scans)
    report.pairs_judged = len(pairs)
    judgement = judge.judge(pairs) if pairs else None
    judged_ok: set[tuple[str, str]] = set()
    if judgement is not None:
        report.failures = judgement.failures
        failed = judgement.failed_memories
        judged_ok = {
            _pair_key(p) for p in pairs if p.newer.id not in failed and p.older.id not in failed
        }
        by_memory = {s.memory.id: s for s in scans}
        for edge in _gated(judgement.edges, pairs):
            for end_id in (edge.source_id, edge.target_id):
                if end_id in by_memory:
                    by_memory[end_id].edges.append(edge)
    else:
        failed = set()

    with conn.transaction():
        added: Counter[str] = Counter()
        expired: Counter[str] = Counter()
        for scan in scans:
            for edge in _dedupe(scan.edges):
                if _upsert(conn, edge):
                    added[edge.relation_type] += 1
            for kind in _expire(conn, scan, judge, judged_ok, space):
                expired[kind] += 1
        report.duplicates_marked = duplicates.refresh_duplicate_marks(conn)
        done = [s.memory.id for s in scans if s.memory.id not in failed]
        _mark_scanned(conn, done, space_name, judge.name)
    report.scanned = len(scans)
    report.added = dict(added)
    if swept:
        expired["contradicts"] += swept
    report.expired = dict(expired)
    report.live = live_counts(conn)
    say(
        f"relationships: {sum(added.values())} edges added, {sum(expired.values())} expired, "
        f"{len(report.failures)} judge batches failed"
    )
    return report


def _propose(
    conn: psycopg.Connection,
    pending: Sequence[Memory],
    space: tuple[str, int] | None,
    report: RelationshipReport,
) -> list[_Scan]:
    derived = structural.derived_from(conn, pending)
    vecs = candidates.vectors(conn, space[0], [m.id for m in pending]) if space else {}
    scans = [_Scan(m) for m in pending]
    for scan in scans:
        vec = vecs.get(scan.memory.id)
        if space is None or vec is None:
            report.without_vector += 1
            continue
        scan.neighbours = candidates.neighbours(conn, space, vec, scan.memory.id)
    for scan in scans:
        m = scan.memory
        if m.type == "decision":
            words = judge_offline.reversed_words(m.content)
            found = candidates.cue_candidates(conn, m, words, tuning.JUDGE_CUE_CANDIDATES)
            near = dict(scan.neighbours)
            far = [o for o in found if o not in near]
            if far and space is not None and m.id in vecs:
                theirs = candidates.vectors(conn, space[0], far)
                scan.cue_pairs = [
                    (o, candidates.cosine(vecs[m.id], theirs[o])) for o in far if o in theirs
                ]
    others = candidates.load_memories(
        conn,
        list(
            {o for s in scans for o, _ in [*s.neighbours, *s.cue_pairs]} | {m.id for m in pending}
        ),
    )
    copy_of: dict[UUID, UUID] = {}  # this run's near-duplicate decisions, oldest first
    for scan in scans:
        m = scan.memory
        scan.edges.extend(derived.get(m.id, []))
        skip = {e.target_id for e in derived.get(m.id, [])}
        # A segment and the memories distilled from it are linked by derived_from already.
        skip |= {
            o
            for o, _ in scan.neighbours
            if o in others and _same_source(m, others[o]) and "segment" in (m.type, others[o].type)
        }
        for other_id, sim in scan.neighbours:
            other = others.get(other_id)
            if other is None or not m.newer_than(other) or m.id in copy_of:
                continue
            if duplicates.is_duplicate(m, other, sim):
                kept = copy_of.get(other.id) or duplicates.kept_root(conn, other.id)
                if kept == m.id:
                    continue
                edge = duplicates.duplicate_edge(m, other, sim)
                scan.edges.append(
                    Edge(m.id, kept, "duplicate_of", edge.similarity, edge.evidence, edge.backend)
                )
                copy_of[m.id] = kept
                skip.add(other_id)
        scan.edges.extend(structural.related_to(m, scan.neighbours, skip))
        scan.others = others
    return scans


def _same_source(a: Memory, b: Memory) -> bool:
    return bool(a.task_ids & b.task_ids)


def _pair_key(pair: Pair) -> tuple[str, str]:
    return (str(pair.newer.id), str(pair.older.id))


def _judge_pairs(scans: Sequence[_Scan]) -> list[Pair]:
    """Candidate pairs for the judge: distilled memories close enough, decisions first, at most
    JUDGE_MAX_PAIRS_PER_MEMORY per scanned memory, each pair once."""
    pairs: dict[tuple[str, str], Pair] = {}
    for scan in scans:
        m = scan.memory
        others = scan.others
        dup_targets = {e.target_id for e in scan.edges if e.relation_type == "duplicate_of"}
        options = []
        for other_id, sim in scan.neighbours:
            other = others.get(other_id)
            if other is None or not _judgeable(m, other):
                continue
            if sim < tuning.JUDGE_MIN_SIMILARITY or other_id in dup_targets:
                continue
            both_decisions = m.type == "decision" and other.type == "decision"
            options.append((not both_decisions, -sim, str(other_id), other, sim))
        options.sort(key=lambda o: o[:3])
        chosen = [(o[3], o[4]) for o in options[: tuning.JUDGE_MAX_PAIRS_PER_MEMORY]]
        chosen += [(others[o], sim) for o, sim in scan.cue_pairs if o in others]
        for other, sim in chosen:
            newer, older = (m, other) if m.newer_than(other) else (other, m)
            pair = Pair(newer, older, sim)
            pairs.setdefault(_pair_key(pair), pair)
    return list(pairs.values())


def _gated(edges: Sequence[Edge], pairs: Sequence[Pair]) -> list[Edge]:
    """A judge's edges less the reversals that are none (models.reversal_allowed): whatever a
    judge says, `contradicts` needs a newer decision and a subject entity both mention."""
    memories = {m.id: m for p in pairs for m in (p.newer, p.older)}
    out = []
    for e in edges:
        if e.relation_type == "contradicts":
            newer, older = memories.get(e.source_id), memories.get(e.target_id)
            if newer is None or older is None or not reversal_allowed(newer, older):
                continue
        out.append(e)
    return out


def _judgeable(a: Memory, b: Memory) -> bool:
    """Distilled memories are judged against each other; a decision also against an older
    segment of another task (a choice the semantic pass did not distil on its own)."""
    if a.type in tuning.DISTILLED_TYPES and b.type in tuning.DISTILLED_TYPES:
        return True
    newer, older = (a, b) if a.newer_than(b) else (b, a)
    return newer.type == "decision" and older.type == "segment" and not _same_source(a, b)


def _dedupe(edges: Sequence[Edge]) -> list[Edge]:
    out: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        out.setdefault(e.key, e.normalized())
    return list(out.values())


def _upsert(conn: psycopg.Connection, edge: Edge) -> bool:
    """Insert the edge, or bring back an expired discovery edge; True when something changed.
    An edge another stage wrote (no backend) is left as it is."""
    row = conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type, note,"
        " similarity, evidence, backend, confidence) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (source_id, target_id, relation_type) DO UPDATE SET expired_at = NULL,"
        " created_at = now(), similarity = EXCLUDED.similarity, evidence = EXCLUDED.evidence,"
        " backend = EXCLUDED.backend, confidence = EXCLUDED.confidence"
        " WHERE memory_relationships.expired_at IS NOT NULL"
        " AND memory_relationships.backend IS NOT NULL"
        " RETURNING 1",
        [
            edge.source_id,
            edge.target_id,
            edge.relation_type,
            edge.note,
            edge.similarity,
            edge.evidence,
            edge.backend,
            edge.confidence,
        ],
    ).fetchone()
    return row is not None


def _expire(
    conn: psycopg.Connection,
    scan: _Scan,
    judge: Judge,
    judged_ok: set[tuple[str, str]],
    space: tuple[str, int] | None,
) -> list[str]:
    """Expire the live discovery edges touching the scanned memory that no longer hold."""
    m = scan.memory
    asserted = {e.key for e in scan.edges}
    rows = conn.execute(
        "SELECT source_id, target_id, relation_type, backend FROM memory_relationships"
        " WHERE (source_id = %s OR target_id = %s) AND expired_at IS NULL"
        " AND backend IS NOT NULL AND relation_type = ANY(%s)",
        [m.id, m.id, list(DISCOVERED_TYPES)],
    ).fetchall()
    live = [r for r in rows if (str(r[0]), str(r[1]), r[2]) not in asserted]
    if not live:
        return []
    near = dict(scan.neighbours)
    others = [r[1] if r[0] == m.id else r[0] for r in live]
    missing = [o for o in others if o not in near]
    if missing and space is not None:
        vecs = candidates.vectors(conn, space[0], [m.id, *missing])
        mine = vecs.get(m.id)
        for o in missing:
            if mine is not None and o in vecs:
                near[o] = candidates.cosine(mine, vecs[o])
    gone = []
    for (source, target, kind, backend), other in zip(live, others, strict=True):
        sim = near.get(other)
        if kind == "derived_from":
            stop = source == m.id  # provenance is re-read on every scan: not asserted = gone
        elif kind == "related_to":
            stop = sim is None or not structural.related_holds(sim)
        elif kind == "duplicate_of":
            stop = source == m.id  # the copy's scan decides what it duplicates
        elif kind == "contradicts" and not _reversal_holds(conn, m, other, source):
            stop = True  # no judge can vouch for a reversal with no shared subject entity
        elif kind in JUDGED_TYPES:
            if backend != judge.name:
                stop = False
            elif (str(source), str(target)) in judged_ok or (str(target), str(source)) in judged_ok:
                stop = True  # judged again just now, and the verdict no longer says so
            elif isinstance(judge, judge_offline.OfflineJudge):  # cheap: ask the rules again
                stop = not _still_judged(conn, judge, m, other, sim, (source, target, kind))
            else:  # a model's verdict is not asked again for a pair that is no candidate
                stop = sim is not None and sim < tuning.JUDGE_MIN_SIMILARITY
        else:
            stop = False
        if stop:
            conn.execute(
                "UPDATE memory_relationships SET expired_at = now() WHERE source_id = %s"
                " AND target_id = %s AND relation_type = %s AND expired_at IS NULL",
                [source, target, kind],
            )
            gone.append(kind)
    return gone


def _expire_baseless_reversals(conn: psycopg.Connection) -> int:
    """Expire every live discovered `contradicts` edge that models.reversal_allowed refuses
    (the same test in SQL), wherever it came from: an edge of an earlier version or of another
    judge whose memories were not scanned this run. A no-op once none is left."""
    return conn.execute(
        "UPDATE memory_relationships r SET expired_at = now() FROM memories s, memories t"
        " WHERE r.relation_type = 'contradicts' AND r.expired_at IS NULL"
        " AND r.backend IS NOT NULL AND s.id = r.source_id AND t.id = r.target_id"
        " AND (s.id = t.id OR s.type <> 'decision'"
        "  OR s.created_at < t.created_at"
        # Per edge, two index lookups (never a join of every pair of co-mentioning memories).
        "  OR NOT (ARRAY(SELECT a.entity_id FROM memory_entities a WHERE a.memory_id = s.id)"
        "   && ARRAY(SELECT b.entity_id FROM memory_entities b WHERE b.memory_id = t.id)))"
    ).rowcount


def _reversal_holds(conn: psycopg.Connection, m: Memory, other_id: UUID, source: UUID) -> bool:
    other = candidates.load_memories(conn, [other_id]).get(other_id)
    if other is None:
        return False
    newer, older = (m, other) if source == m.id else (other, m)
    return reversal_allowed(newer, older)


def _still_judged(
    conn: psycopg.Connection,
    judge: Judge,
    m: Memory,
    other_id: UUID,
    sim: float | None,
    edge: tuple[UUID, UUID, str],
) -> bool:
    other = candidates.load_memories(conn, [other_id]).get(other_id)
    if other is None:
        return False
    newer, older = (m, other) if m.newer_than(other) else (other, m)
    pair = Pair(newer, older, sim or 0.0)
    found = _gated(judge.judge([pair]).edges, [pair])
    return any(e.key == (str(edge[0]), str(edge[1]), edge[2]) for e in found)


def _mark_scanned(
    conn: psycopg.Connection, ids: Sequence[UUID], space: str | None, judge_name: str
) -> None:
    if not ids:
        return
    conn.execute(
        "INSERT INTO relationship_scans (memory_id, content_sha256, entities_sha256, space,"
        f" backend) SELECT m.id, {candidates.SCAN_SHA_SQL}, {candidates.ENTITY_SHA_SQL}, %s, %s"
        " FROM memories m WHERE m.id = ANY(%s)"
        " ON CONFLICT (memory_id) DO UPDATE SET content_sha256 = EXCLUDED.content_sha256,"
        " entities_sha256 = EXCLUDED.entities_sha256, space = EXCLUDED.space,"
        " backend = EXCLUDED.backend, scanned_at = now()",
        [space, judge_name, list(ids)],
    )


def live_counts(conn: psycopg.Connection) -> dict[str, int]:
    rows = conn.execute(
        "SELECT relation_type, count(*) FROM memory_relationships WHERE expired_at IS NULL"
        " GROUP BY 1 ORDER BY 1"
    ).fetchall()
    return {r[0]: r[1] for r in rows}
