"""The offline Thinker: proposes only what rules can stand behind.

- SUPERSEDE, for a live `contradicts` edge between two decisions where the newer one (the edge's
  source) reverses the older: a synthesis stating which decision holds now, quoting both.
- UPDATE a topic segment a newer decision contradicts when no decision distilled from that
  segment is contradicted too (the older choice was never distilled on its own): a synthesis
  that `extends` the segment, saying which part of it no longer holds. A segment holds more
  than the reversed choice, so it is never superseded.
- CREATE a connection, for two memories of different projects whose vectors are highly similar
  (cosine >= DREAM_CONNECTION_DEFER_COSINE; the Skeptic decides on the band below
  DREAM_CONNECTION_MIN_COSINE), quoting both.
- CREATE a procedural insight from DREAM_CORRECTION_MIN_EPISODES or more correction episodes on
  one theme, quoting each.
Every other strategy's slices get no proposal offline: rules cannot judge them.
"""

from __future__ import annotations

import psycopg

from memory_pipeline import tuning
from memory_pipeline.dream.feedback import Feedback
from memory_pipeline.dream.memories import load, quote, shared_terms
from memory_pipeline.dream.models import Candidate, CandidateDraft, ProposedEdge, Slice


class OfflineThinker:
    name = "offline-rules"

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def think(self, conn: psycopg.Connection, s: Slice, feedback: Feedback) -> list[Candidate]:
        views = load(conn, s.memory_ids)
        if s.strategy == "contradiction_hunt":
            return _supersede(s, views) or _update_segment(conn, s, views)
        if s.strategy == "cross_project_collision":
            return _connection(s, views)
        if s.strategy == "correction_pattern":
            return _procedure(s, views)
        return []


def derived_from(ids: list[str]) -> list[ProposedEdge]:
    """A candidate's provenance edges: the new memory is derived from each memory it rests on."""
    return [ProposedEdge(source="new", target=i, relation_type="derived_from") for i in ids]


def _day(value: object) -> str:
    return value.date().isoformat() if hasattr(value, "date") else str(value)  # type: ignore[attr-defined]


def _supersede(s: Slice, views: dict) -> list[Candidate]:  # type: ignore[type-arg]
    newer, older = (views.get(i) for i in s.memory_ids[:2])
    if newer is None or older is None:
        return []
    if newer.type != "decision" or older.type != "decision":
        return []
    if not newer.created_at > older.created_at:
        return []
    qn, qo = quote(newer.content), quote(older.content)
    where = f" in {newer.project}" if newer.project else ""
    draft = CandidateDraft(
        operation="SUPERSEDE",
        schema_operation="accommodation",
        type="synthesis",
        title=f"Reversed{where}: {newer.title}"[:200],
        content=(
            f'The decision of {_day(older.created_at)} ("{qo}") was reversed on '
            f'{_day(newer.created_at)}: "{qn}" The newer decision holds; the older one is '
            "superseded."
        ),
        rests_on=[newer.id, older.id],
        target_memory_id=older.id,
        successor_id=newer.id,
        edges=derived_from([newer.id, older.id]),
        quotes=[qo, qn],
        rationale=s.reason,
    )
    return [Candidate(draft=draft, strategy=s.strategy, slice_reason=s.reason, score=1.0)]


def _update_segment(
    conn: psycopg.Connection,
    s: Slice,
    views: dict,  # type: ignore[type-arg]
) -> list[Candidate]:
    newer, segment = (views.get(i) for i in s.memory_ids[:2])
    if newer is None or segment is None:
        return []
    if newer.type != "decision" or segment.type != "segment":
        return []
    if not newer.created_at > segment.created_at:
        return []
    covered = conn.execute(
        "SELECT 1 FROM memory_relationships c JOIN memory_relationships d"
        " ON d.source_id = c.target_id AND d.relation_type = 'derived_from'"
        " AND d.expired_at IS NULL AND d.target_id = %s"
        " WHERE c.source_id = %s AND c.relation_type = 'contradicts' AND c.expired_at IS NULL",
        [segment.id, newer.id],
    ).fetchone()
    if covered:
        return []  # the SUPERSEDE of that decision says it
    qn = quote(newer.content)
    where = f" in {newer.project}" if newer.project else ""
    draft = CandidateDraft(
        operation="UPDATE",
        schema_operation="accommodation",
        type="synthesis",
        title=f"Changed since{where}: {newer.title}"[:200],
        content=(
            f'Part of "{segment.title}" ({_day(segment.created_at)}) no longer holds: on '
            f'{_day(newer.created_at)} the decision changed: "{qn}"'
        ),
        rests_on=[newer.id, segment.id],
        target_memory_id=segment.id,
        edges=derived_from([newer.id, segment.id]),
        quotes=[qn],
        rationale=s.reason,
    )
    return [Candidate(draft=draft, strategy=s.strategy, slice_reason=s.reason, score=1.0)]


def _connection(s: Slice, views: dict) -> list[Candidate]:  # type: ignore[type-arg]
    a, b = (views.get(i) for i in s.memory_ids[:2])
    if a is None or b is None or not a.project or not b.project or a.project == b.project:
        return []
    if s.score < tuning.DREAM_CONNECTION_DEFER_COSINE:
        return []
    terms = shared_terms([f"{a.title} {a.content}", f"{b.title} {b.content}"])
    about = ", ".join(terms) if terms else "a shared approach"
    qa, qb = quote(a.content), quote(b.content)
    lo, hi = sorted([a.id, b.id])
    draft = CandidateDraft(
        operation="CREATE",
        schema_operation="assimilation",
        type="connection",
        title=f"{a.project} and {b.project}: {about}"[:200],
        content=(
            f"The same ground came up in two projects ({about}). "
            f'In {a.project}: "{qa}" In {b.project}: "{qb}"'
        ),
        rests_on=[a.id, b.id],
        edges=[
            *derived_from([a.id, b.id]),
            ProposedEdge(source=lo, target=hi, relation_type="related_to"),
        ],
        quotes=[qa, qb],
        rationale=s.reason,
    )
    return [
        Candidate(
            draft=draft,
            strategy=s.strategy,
            slice_reason=s.reason,
            score=s.score,
            cross_project=True,
        )
    ]


def _procedure(s: Slice, views: dict) -> list[Candidate]:  # type: ignore[type-arg]
    episodes = [views[i] for i in s.memory_ids if i in views]
    episodes = [e for e in episodes if e.type == "correction_episode"]
    if len(episodes) < tuning.DREAM_CORRECTION_MIN_EPISODES:
        return []
    terms = shared_terms([f"{e.title} {e.content}" for e in episodes[:2]])
    about = ", ".join(terms) if terms else "one theme"
    quotes = [quote(e.content, 240) for e in episodes]
    cited = " ".join(f'"{q}"' for q in quotes)
    projects = {e.project for e in episodes if e.project}
    draft = CandidateDraft(
        operation="CREATE",
        schema_operation="accommodation",
        type="insight",
        title=f"Recurring correction: {about}"[:200],
        content=(
            f"The user corrected the agent {len(episodes)} times on the same theme ({about}). "
            f"Check for it before answering. The corrections: {cited}"
        ),
        rests_on=[e.id for e in episodes],
        edges=derived_from([e.id for e in episodes]),
        quotes=quotes,
        rationale=s.reason,
    )
    return [
        Candidate(
            draft=draft,
            strategy=s.strategy,
            slice_reason=s.reason,
            score=float(len(episodes)),
            cross_project=len(projects) >= 2,
        )
    ]
