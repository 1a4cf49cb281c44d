"""The deterministic precheck, before any model call (seed 003's staging-queue triage).

On slices (before the Thinker): a slice of fewer than two memories says nothing new; a slice
whose memories another slice of the run already holds is collapsed; a slice whose memories are
exactly what an active dream memory already rests on restates it and is dropped. On candidates
(before the panel): repeats within the run collapse; a candidate that restates an existing memory
(same fingerprint as an active dream memory, or the same title or content as an active memory)
is dropped, and corroborates that memory when it rests on other evidence than the memory itself
does; a proposal the user rejected or that was deferred twice is dropped. Contradiction slices
and SUPERSEDE candidates are never dropped as restatements: they always reach the panel.
A candidate never combines memories of unrelated tasks (issue 34): when what it rests on comes
from two or more tasks that share no memory, those tasks' memories must all mention one subject
entity (a node of the entity stage), or it is dropped, whatever its operation or strategy (a
recurring correction of three sessions about three things; a reversal edge another judge wrote).
A memory of no task (a document passage) is not of an unrelated task. Everything removed is
counted by reason.

The panel votes on a proposal once per state of its evidence: a proposal (by fingerprint) whose
latest vote was REJECTED is dropped while none of the memories it names (what it rests on, its
target and successor) changed since that vote (`memories.updated_at`, which edits, status changes
and redactions bump), and one whose latest vote waits for `dream approve` is dropped until it is
decided. Otherwise every run would vote on the same proposal from the same memories again and
store another candidate row each time. A DEFERRED proposal still comes back for its next vote
(the DREAM_MAX_DEFERRALS rule); once that vote rejects it, the rule above holds it.

Corroboration counts distinct evidence, never runs: a restatement's evidence is the set of
memories it rests on (`evidence_key`), and each memory keeps the keys of the evidence that
corroborated it (store.record_corroborations). The cycle proposes the same thing from the same
memories on every run until they change; that is the evidence a memory was made from, not more
of it, so a slice or proposal that rests on exactly a memory's own basis corroborates nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import psycopg

from memory_pipeline.dream.explorer.strategies import STRATEGIES
from memory_pipeline.dream.feedback import Feedback
from memory_pipeline.dream.memories import normalize
from memory_pipeline.dream.models import Candidate, Slice


@dataclass
class PrecheckReport:
    removed: Counter[str] = field(default_factory=Counter)
    # memory id -> keys of the evidence that restated it (evidence_key), this run
    corroborated: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def as_json(self) -> dict[str, object]:
        return {
            "removed": dict(self.removed),
            "corroborated": {m: sorted(keys) for m, keys in self.corroborated.items() if keys},
        }

    @property
    def corroborations(self) -> int:
        return sum(len(keys) for keys in self.corroborated.values())


def evidence_key(memory_ids: Iterable[str]) -> str:
    """The same evidence whatever the order or repeats of its memories."""
    joined = "|".join(sorted(set(memory_ids)))
    return hashlib.sha256(joined.encode()).hexdigest()[:32]


def _own_basis(conn: psycopg.Connection, memory_id: str) -> str:
    """The evidence key of what a memory rests on itself (its live `derived_from` targets)."""
    rows = conn.execute(
        "SELECT target_id::text FROM memory_relationships WHERE source_id = %s"
        " AND relation_type = 'derived_from' AND expired_at IS NULL",
        [memory_id],
    ).fetchall()
    return evidence_key(r[0] for r in rows)


def _corroborate(
    conn: psycopg.Connection, report: PrecheckReport, memory_id: str, rests_on: Iterable[str]
) -> None:
    key = evidence_key(rests_on)
    if key != _own_basis(conn, memory_id):
        report.corroborated[memory_id].add(key)


def _dream_memories_by_basis(conn: psycopg.Connection) -> dict[tuple[str, ...], str]:
    rows = conn.execute(
        "SELECT m.id::text, array_agg(r.target_id::text ORDER BY r.target_id)"
        " FROM memories m JOIN memory_relationships r ON r.source_id = m.id"
        " AND r.relation_type = 'derived_from' AND r.expired_at IS NULL"
        " WHERE m.source_type = 'dream_cycle' AND m.status = 'active' GROUP BY m.id"
    ).fetchall()
    return {tuple(basis): mid for mid, basis in rows}


def slices(conn: psycopg.Connection, found: list[Slice], report: PrecheckReport) -> list[Slice]:
    known = _dream_memories_by_basis(conn)
    rank = {name: i for i, name in enumerate(STRATEGIES)}
    best: dict[tuple[str, ...], Slice] = {}
    for s in found:
        other = best.get(s.key)
        if other is None or rank.get(s.strategy, 99) < rank.get(other.strategy, 99):
            best[s.key] = s
    kept: list[Slice] = []
    for s in found:
        hold = s.strategy == "contradiction_hunt"
        if len(set(s.memory_ids)) < 2:
            report.removed["slice_too_small"] += 1
            continue
        if best.get(s.key) is not s:
            report.removed["slice_repeat_in_run"] += 1
            continue
        if not hold and s.key in known:
            # Exactly the memories that dream memory rests on: its own evidence, not more.
            report.removed["slice_restates_memory"] += 1
            continue
        kept.append(s)
    return kept


def candidates(
    conn: psycopg.Connection,
    proposed: list[Candidate],
    feedback: Feedback,
    report: PrecheckReport,
) -> list[Candidate]:
    by_fingerprint = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT metadata ->> 'dream_fingerprint', id::text FROM memories"
            " WHERE source_type = 'dream_cycle' AND status = 'active'"
            " AND metadata ? 'dream_fingerprint'"
        ).fetchall()
    }
    proposed = _one_supersede_per_target(conn, proposed, report)
    decided = _latest_votes(conn, {c.fingerprint for c in proposed})
    seen: set[str] = set()
    kept: list[Candidate] = []
    for c in proposed:
        fp = c.fingerprint
        if fp in seen:
            report.removed["candidate_repeat_in_run"] += 1
            continue
        seen.add(fp)
        if fp in feedback.user_rejected:
            report.removed["candidate_rejected_by_user"] += 1
            continue
        if fp in feedback.rejected_for_good:
            report.removed["candidate_deferred_twice"] += 1
            continue
        if unrelated_tasks(conn, c.draft.rests_on):
            report.removed["candidate_unrelated_tasks"] += 1
            continue
        if fp in by_fingerprint:
            report.removed["candidate_restates_memory"] += 1
            _corroborate(conn, report, by_fingerprint[fp], c.draft.rests_on)
            continue
        if c.draft.operation != "SUPERSEDE":
            same = conn.execute(
                "SELECT id::text FROM memories WHERE status = 'active' AND ("
                " lower(title) = lower(%s) OR content = %s) ORDER BY created_at LIMIT 1",
                [c.draft.title.strip(), c.draft.content.strip()],
            ).fetchone()
            if same:
                report.removed["candidate_restates_memory"] += 1
                _corroborate(conn, report, same[0], c.draft.rests_on)
                continue
        latest = decided.get(fp)
        if latest is not None:
            verdict, approval, voted_at = latest
            if approval == "held":
                report.removed["candidate_held_for_approval"] += 1
                continue
            if verdict == "REJECTED" and not _changed_since(conn, c, voted_at):
                report.removed["candidate_rejected_unchanged"] += 1
                continue
        kept.append(c)
    return kept


def unrelated_tasks(conn: psycopg.Connection, memory_ids: Iterable[str]) -> bool:
    """Whether the memories come from tasks that share neither a memory nor a subject entity:
    the tasks are grouped (two memories of one task join their groups), and every group must
    mention one common entity."""
    ids = _memory_ids(memory_ids)
    rows = conn.execute(
        "SELECT m.id::text,"
        " coalesce((SELECT array_agg(DISTINCT p.task_id::text) FROM memory_provenance p"
        "  WHERE p.memory_id = m.id AND p.task_id IS NOT NULL), '{}'),"
        " coalesce((SELECT array_agg(DISTINCT e.entity_id::text) FROM memory_entities e"
        "  WHERE e.memory_id = m.id), '{}')"
        " FROM memories m WHERE m.id = ANY(%s::uuid[])",
        [ids],
    ).fetchall()
    groups: list[tuple[set[str], set[str]]] = []  # (tasks, entities mentioned) per group
    for _, tasks, entities in rows:
        if not tasks:
            continue
        tasks, entities = set(tasks), set(entities)
        for g in [g for g in groups if g[0] & tasks]:
            groups.remove(g)
            tasks |= g[0]
            entities |= g[1]
        groups.append((tasks, entities))
    if len(groups) < 2:
        return False
    return not set.intersection(*(g[1] for g in groups))


def _latest_votes(
    conn: psycopg.Connection, fingerprints: set[str]
) -> dict[str, tuple[str | None, str | None, object]]:
    """fingerprint -> (final verdict, approval, when) of the latest vote on that proposal."""
    if not fingerprints:
        return {}
    rows = conn.execute(
        "SELECT DISTINCT ON (fingerprint) fingerprint, final_verdict, approval, created_at"
        " FROM dream_cycle_candidates WHERE fingerprint = ANY(%s)"
        " ORDER BY fingerprint, created_at DESC",
        [sorted(fingerprints)],
    ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _memory_ids(values: Iterable[str | None]) -> list[str]:
    out = []
    for v in values:
        try:
            out.append(str(uuid.UUID(v or "")))
        except ValueError:
            continue  # a model's made-up id: no memory, nothing that can change
    return sorted(set(out))


def _changed_since(conn: psycopg.Connection, c: Candidate, voted_at: object) -> bool:
    """Whether a memory the proposal names was edited (or changed status) after `voted_at`."""
    d = c.draft
    ids = _memory_ids([*d.rests_on, d.target_memory_id, d.successor_id])
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ANY(%s::uuid[]) AND updated_at > %s)",
        [ids, voted_at],
    ).fetchone()
    return bool(row and row[0])


def _one_supersede_per_target(
    conn: psycopg.Connection, proposed: list[Candidate], report: PrecheckReport
) -> list[Candidate]:
    """Two newer decisions may both reverse one older decision: only the newest successor is
    what holds now, so one SUPERSEDE per target reaches the panel."""
    targets = [c for c in proposed if c.draft.operation == "SUPERSEDE" and c.draft.successor_id]
    if len(targets) < 2:
        return proposed
    created = dict(
        conn.execute(
            "SELECT id::text, created_at FROM memories WHERE id = ANY(%s::uuid[])",
            [[c.draft.successor_id for c in targets]],
        ).fetchall()
    )
    best: dict[str, Candidate] = {}
    for c in targets:
        key = c.draft.target_memory_id or ""
        other = best.get(key)
        when = created.get(c.draft.successor_id or "")
        if other is None or (
            when is not None
            and (
                created.get(other.draft.successor_id or "") is None
                or when > created[other.draft.successor_id or ""]
            )
        ):
            best[key] = c
    out = []
    for c in proposed:
        if c in targets and best.get(c.draft.target_memory_id or "") is not c:
            report.removed["supersede_older_successor"] += 1
            continue
        out.append(c)
    return out


def is_quoted(quote: str, texts: list[str]) -> bool:
    """A quote is supported when it appears verbatim (whitespace and case aside) in a text."""
    q = normalize(quote)
    return bool(q) and any(q in normalize(t) for t in texts)
