"""Compose: gather the day's briefing candidates from what the pipeline already knows.

Sources (each a function below, each item linked to the memories it rests on):
  synthesis      dream-cycle memories created in the window (cross-project ones flagged)
  contradiction  live `contradicts` edges created in the window (newer -> older)
  superseded     memories superseded in the window (status 'superseded' + live `superseded_by`)
  resurfaced     deep memories nobody has read for long (tuning: EXPRESS_RESURFACE_*)
  digest         the week in review, on the configured weekday
  question       open questions: `question` memories, and last prompts nobody answered
  source         inbox documents stored or revised in the window that bear on an agent memory
                 (a live edge from one of their passages), one item per document

Correction episodes are never included, not even as evidence: they are user-attributed evidence
for search and the dream cycle, not something to push at the user.

The window is (end of the previous briefing's window, end of this day or now], so composing the
same day again gives the same items (idempotent) and nothing falls between two briefings.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta

import psycopg
from psycopg.rows import dict_row

from memory_pipeline import tuning
from memory_pipeline.errors import UserError
from memory_pipeline.express.models import Candidate, LinkedMemory

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NOT_DELIVERED = "correction_episode"
LIVE_STATUSES = ("active", "explored")
GENERAL_TOPIC = "general"
CROSS_PROJECT_TOPIC = "cross-project"
DIGEST_TOPIC = "weekly digest"


def weekday_number(name: str) -> int:
    """0 for Monday ... 6 for Sunday; a clear error for anything else."""
    value = name.strip().lower()
    for i, day in enumerate(WEEKDAYS):
        if value in (day, day[:3]):
            return i
    raise UserError(
        f"MEMORY_BRIEF_DIGEST_WEEKDAY={name!r} is not a weekday; set it to one of "
        + ", ".join(WEEKDAYS)
    )


def briefing_window(
    conn: psycopg.Connection, day: date, now: datetime | None = None
) -> tuple[datetime, datetime]:
    """(from, to] for `day`'s briefing: from the end of the previous day's briefing window (or
    EXPRESS_FIRST_WINDOW_DAYS back) to the end of `day`, or now if `day` is today."""
    now = now or datetime.now(UTC)
    day_end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=UTC)
    to = min(now, day_end)
    row = conn.execute(
        "SELECT window_to FROM briefings WHERE day < %s ORDER BY day DESC LIMIT 1", [day]
    ).fetchone()
    start = row[0] if row and row[0] < to else to - timedelta(days=tuning.EXPRESS_FIRST_WINDOW_DAYS)
    return start, to


def compose(
    conn: psycopg.Connection,
    day: date,
    window: tuple[datetime, datetime],
    digest_weekday: str = "monday",
) -> list[Candidate]:
    """Every candidate for `day`'s briefing, in source order (the editor ranks them)."""
    candidates = [
        *synthesis_items(conn, window),
        *change_items(conn, window),
        *resurfaced_items(conn, day, window[1]),
        *question_items(conn, window),
        *source_items(conn, window),
    ]
    if day.weekday() == weekday_number(digest_weekday):
        candidates.extend(digest_items(conn, window[1]))
    seen: set[str] = set()
    unique = []
    for c in _one_per_change(_without_explained(_without_private(conn, candidates))):
        if c.key not in seen:
            seen.add(c.key)
            unique.append(c)
    return unique


def _without_explained(candidates: list[Candidate]) -> list[Candidate]:
    """A contradiction or supersession whose memories a dream-cycle synthesis of the same
    briefing rests on is told by that synthesis (it says what changed and why), not again."""
    explained = [{m.id for m in c.memories} for c in candidates if c.kind == "synthesis"]
    return [
        c
        for c in candidates
        if c.kind not in ("contradiction", "superseded")
        or not any({m.id for m in c.memories} <= ids for ids in explained)
    ]


# Dream-cycle operations that tell a change (thinker_offline: "Reversed: ...", "Changed since").
CHANGE_OPERATIONS = ("SUPERSEDE", "UPDATE")


def _is_change(c: Candidate) -> bool:
    return c.kind in ("contradiction", "superseded") or (
        c.kind == "synthesis" and c.facts.get("operation") in CHANGE_OPERATIONS
    )


_OLD_ROLES = ("older", "subject")


def _sides(c: Candidate) -> list[tuple[str, str]]:
    """("old" | "new", memory id) of a change item's memories; every memory of a synthesis
    counts as a new side (it is about the change its newer memory made)."""
    if c.kind == "synthesis":
        return [("new", m.id) for m in c.memories]
    return [("old" if m.role in _OLD_ROLES else "new", m.id) for m in c.memories]


def _one_per_change(candidates: list[Candidate]) -> list[Candidate]:
    """A briefing names one change once, however many memories restate it: contradictions and
    supersessions that share their old statement, or their new one, are one change, with the
    dream cycle's synthesis resting on one of its new statements; told by that synthesis when
    there is one (it says what changed and why), else by its highest-scored item (the first on
    a tie). A chain (A replaced by B, B later by C) stays two changes: B is new in one, old in
    the other."""
    changes = [n for n, c in enumerate(candidates) if _is_change(c)]
    parent = {n: n for n in changes}

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    holder: dict[tuple[str, str], int] = {}
    for n in changes:
        for key in _sides(candidates[n]):
            if key in holder:
                parent[find(n)] = find(holder[key])
            else:
                holder[key] = n
    groups: dict[int, list[int]] = {}
    for n in changes:
        groups.setdefault(find(n), []).append(n)
    dropped = set()
    for members in groups.values():
        best = min(
            members,
            key=lambda n: (candidates[n].kind != "synthesis", -candidates[n].base_score, n),
        )
        dropped |= set(members) - {best}
    return [c for n, c in enumerate(candidates) if n not in dropped]


def _without_private(conn: psycopg.Connection, candidates: list[Candidate]) -> list[Candidate]:
    """Private-tier memories (sql/019) are never delivered: a briefing may be e-mailed. An item
    about one is dropped; a private memory that is only evidence (or one of the digest's
    examples) is left out of the links."""
    ids = sorted({m.id for c in candidates for m in c.memories})
    if not ids:
        return candidates
    rows = conn.execute(
        "SELECT id::text FROM memories WHERE private AND id = ANY(%s::uuid[])", [ids]
    ).fetchall()
    private = {r[0] for r in rows}
    kept = []
    for c in candidates:
        main = [m for m in c.memories if m.role != "evidence"]
        if c.kind != "digest" and any(m.id in private for m in main):
            continue
        if any(m.id in private for m in c.memories):
            c = replace(c, memories=tuple(m for m in c.memories if m.id not in private))
        kept.append(c)
    return kept


def _rows(conn: psycopg.Connection, query: str, params: dict[str, object]) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


def _topic(*projects: str | None) -> str:
    named = sorted({p for p in projects if p})
    if len(named) > 1:
        return CROSS_PROJECT_TOPIC
    return named[0] if named else GENERAL_TOPIC


def _score(kind: str, depth: float | None = None, cross_project: bool = False) -> float:
    score = tuning.EXPRESS_KIND_SCORES[kind] + tuning.EXPRESS_DEPTH_WEIGHT * (depth or 0.0)
    return score + (tuning.EXPRESS_CROSS_PROJECT_BONUS if cross_project else 0.0)


def synthesis_items(conn: psycopg.Connection, window: tuple[datetime, datetime]) -> list[Candidate]:
    """Dream-cycle memories of the window, with the memories they rest on as evidence."""
    rows = _rows(
        conn,
        """
        SELECT m.id::text, m.title, m.content, m.project, m.depth_score,
               coalesce((m.metadata ->> 'cross_project')::boolean, false) AS cross_project,
               m.metadata ->> 'dream_operation' AS operation,
               coalesce(array_agg(e.id::text ORDER BY e.created_at, e.id)
                        FILTER (WHERE e.id IS NOT NULL), '{}') AS evidence_ids,
               coalesce(array_agg(e.title ORDER BY e.created_at, e.id)
                        FILTER (WHERE e.id IS NOT NULL), '{}') AS evidence_titles,
               coalesce(array_agg(e.project ORDER BY e.created_at, e.id)
                        FILTER (WHERE e.id IS NOT NULL), '{}') AS evidence_projects
        FROM memories m
        LEFT JOIN memory_relationships r
               ON r.source_id = m.id AND r.relation_type = 'derived_from' AND r.expired_at IS NULL
        LEFT JOIN memories e ON e.id = r.target_id AND e.type <> %(excluded)s
        WHERE m.source_type = 'dream_cycle' AND m.status = 'active' AND m.type <> %(excluded)s
          AND m.created_at > %(start)s AND m.created_at <= %(end)s
        GROUP BY m.id
        ORDER BY m.created_at, m.id
        """,
        {"excluded": NOT_DELIVERED, "start": window[0], "end": window[1]},
    )
    items = []
    for r in rows:
        projects = [p for p in r["evidence_projects"] if p]
        cross = bool(r["cross_project"]) or len(set(projects)) > 1
        evidence = tuple(
            LinkedMemory(i, t, "evidence", p)
            for i, t, p in zip(
                r["evidence_ids"], r["evidence_titles"], r["evidence_projects"], strict=True
            )
        )
        subject = LinkedMemory(r["id"], r["title"], "subject", r["project"])
        items.append(
            Candidate(
                kind="synthesis",
                topic=CROSS_PROJECT_TOPIC if cross else _topic(r["project"], *projects),
                memories=(subject, *evidence),
                base_score=_score("synthesis", r["depth_score"], cross),
                cross_project=cross,
                facts={
                    "title": r["title"],
                    "content": r["content"],
                    "projects": sorted(set(projects)),
                    "operation": r["operation"],
                },
            )
        )
    return items


def change_items(conn: psycopg.Connection, window: tuple[datetime, datetime]) -> list[Candidate]:
    """New live contradictions between memories that both still hold, and memories superseded
    in the window. A pair that is both (the older one superseded by the newer) is told once, as
    superseded; a contradiction whose side was superseded or archived is resolved, not news."""
    rows = _rows(
        conn,
        """
        SELECT r.relation_type, r.note,
               a.id::text AS a_id, a.title AS a_title, a.project AS a_project,
               a.depth_score AS a_depth, a.status AS a_status,
               b.id::text AS b_id, b.title AS b_title, b.project AS b_project,
               b.depth_score AS b_depth, b.status AS b_status
        FROM memory_relationships r
        JOIN memories a ON a.id = r.source_id
        JOIN memories b ON b.id = r.target_id
        WHERE r.relation_type IN ('contradicts', 'superseded_by') AND r.expired_at IS NULL
          AND r.created_at > %(start)s AND r.created_at <= %(end)s
          AND a.type <> %(excluded)s AND b.type <> %(excluded)s
        ORDER BY r.created_at, r.source_id, r.target_id
        """,
        {"excluded": NOT_DELIVERED, "start": window[0], "end": window[1]},
    )
    superseded_pairs = {
        frozenset((r["a_id"], r["b_id"]))
        for r in rows
        if r["relation_type"] == "superseded_by" and r["a_status"] == "superseded"
    }
    items = []
    for r in rows:
        depth = max(r["a_depth"] or 0.0, r["b_depth"] or 0.0)
        topic = _topic(r["a_project"], r["b_project"])
        if r["relation_type"] == "contradicts":
            # Resolved already: one side was superseded (told as such) or set aside.
            if frozenset((r["a_id"], r["b_id"])) in superseded_pairs or not (
                r["a_status"] in LIVE_STATUSES and r["b_status"] in LIVE_STATUSES
            ):
                continue
            memories = (
                LinkedMemory(r["a_id"], r["a_title"], "newer", r["a_project"]),
                LinkedMemory(r["b_id"], r["b_title"], "older", r["b_project"]),
            )
            kind = "contradiction"
        elif r["a_status"] == "superseded":
            memories = (
                LinkedMemory(r["a_id"], r["a_title"], "subject", r["a_project"]),
                LinkedMemory(r["b_id"], r["b_title"], "successor", r["b_project"]),
            )
            kind = "superseded"
        else:  # an edge whose old memory is active again (undone): nothing to tell
            continue
        items.append(
            Candidate(
                kind=kind,
                topic=topic,
                memories=memories,
                base_score=_score(kind, depth),
                facts={"first": r["a_title"], "second": r["b_title"], "note": r["note"] or ""},
            )
        )
    return items


def resurfaced_items(conn: psycopg.Connection, day: date, now: datetime) -> list[Candidate]:
    """Deep memories unread for EXPRESS_RESURFACE_MIN_AGE_DAYS, deepest and longest-unread
    first, none that an earlier briefing resurfaced in the last EXPRESS_RESURFACE_COOLDOWN_DAYS."""
    rows = _rows(
        conn,
        """
        SELECT m.id::text, m.title, m.project, m.depth_score,
               coalesce(m.last_accessed_at, m.created_at) AS last_read
        FROM memories m
        WHERE m.status = 'active'
          AND m.type NOT IN (%(excluded)s, 'segment', 'question')
          AND m.depth_score >= %(min_depth)s
          AND coalesce(m.last_accessed_at, m.created_at) <= %(cutoff)s
          AND NOT EXISTS (
              SELECT 1 FROM briefing_item_memories bim
              JOIN briefing_items bi ON bi.id = bim.item_id
              JOIN briefings b ON b.id = bi.briefing_id
              WHERE bim.memory_id = m.id AND bi.kind = 'resurfaced'
                AND b.day < %(day)s AND b.day >= %(cooldown)s)
        ORDER BY m.depth_score DESC, last_read, m.id
        LIMIT %(limit)s
        """,
        {
            "excluded": NOT_DELIVERED,
            "min_depth": tuning.EXPRESS_RESURFACE_MIN_DEPTH,
            "cutoff": now - timedelta(days=tuning.EXPRESS_RESURFACE_MIN_AGE_DAYS),
            "day": day,
            "cooldown": day - timedelta(days=tuning.EXPRESS_RESURFACE_COOLDOWN_DAYS),
            "limit": tuning.EXPRESS_RESURFACE_MAX,
        },
    )
    return [
        Candidate(
            kind="resurfaced",
            topic=_topic(r["project"]),
            memories=(LinkedMemory(r["id"], r["title"], "subject", r["project"]),),
            base_score=_score("resurfaced", r["depth_score"]),
            facts={"title": r["title"], "days": max(0, (now - r["last_read"]).days)},
        )
        for r in rows
    ]


def question_items(conn: psycopg.Connection, window: tuple[datetime, datetime]) -> list[Candidate]:
    """Open questions: active `question` memories of the window, and unanswered last prompts
    captured in the window (no later turn continues them), linked to their segment memory."""
    params = {"start": window[0], "end": window[1], "excluded": NOT_DELIVERED}
    items = [
        Candidate(
            kind="question",
            topic=_topic(r["project"]),
            memories=(LinkedMemory(r["id"], r["title"], "subject", r["project"]),),
            base_score=_score("question", r["depth_score"]),
            facts={"question": r["title"]},
        )
        for r in _rows(
            conn,
            """
            SELECT id::text, title, project, depth_score FROM memories
            WHERE type = 'question' AND status = 'active'
              AND created_at > %(start)s AND created_at <= %(end)s
            ORDER BY created_at, id
            """,
            params,
        )
    ]
    for r in _rows(
        conn,
        """
        SELECT DISTINCT ON (t.id) t.prompt, ct.title AS task_title,
               m.id::text AS memory_id, m.title, m.project, m.depth_score
        FROM agent_turns t
        JOIN captured_tasks ct ON ct.id = t.task_id
        JOIN memory_provenance mp ON mp.turn_id = t.id
        JOIN memories m ON m.id = mp.memory_id
        WHERE t.unanswered AND t.captured_at > %(start)s AND t.captured_at <= %(end)s
          AND m.status = 'active' AND m.type <> %(excluded)s
          AND NOT EXISTS (SELECT 1 FROM agent_turns later
                          WHERE later.task_id = t.task_id AND later.ordinal > t.ordinal)
        ORDER BY t.id, (mp.role = 'segment') DESC, m.created_at
        """,
        params,
    ):
        items.append(
            Candidate(
                kind="question",
                topic=_topic(r["project"]),
                memories=(LinkedMemory(r["memory_id"], r["title"], "subject", r["project"]),),
                base_score=_score("question", r["depth_score"]),
                facts={"question": r["prompt"], "task": r["task_title"] or r["title"]},
            )
        )
    return items


def source_items(conn: psycopg.Connection, window: tuple[datetime, datetime]) -> list[Candidate]:
    """New or revised inbox documents of the window with a live edge from one of their passages
    to an agent memory: one item per document, its closest link (a decision first)."""
    params = {"start": window[0], "end": window[1], "excluded": NOT_DELIVERED}
    rows = _rows(
        conn,
        """
        SELECT DISTINCT ON (s.id) s.kind, s.title AS doc_title,
               coalesce(s.url, s.locator) AS location, sm.id::text AS memory_id,
               sm.title AS memory_title, sm.metadata ->> 'position' AS position,
               sm.depth_score, om.id::text AS other_id, om.title AS other_title,
               om.project AS project
        FROM inbox_sources s
        JOIN inbox_passages p ON p.source_id = s.id
        JOIN memories sm ON sm.id = p.memory_id AND sm.status = 'active'
        JOIN memory_relationships r ON r.expired_at IS NULL
             AND r.relation_type <> 'duplicate_of' AND sm.id IN (r.source_id, r.target_id)
        JOIN memories om ON om.id = CASE WHEN r.source_id = sm.id THEN r.target_id
                                         ELSE r.source_id END
        WHERE s.revised_at > %(start)s AND s.revised_at <= %(end)s AND s.missing_since IS NULL
          AND om.type NOT IN ('source', %(excluded)s) AND om.status IN ('active', 'explored')
        ORDER BY s.id, (om.type = 'decision') DESC, coalesce(r.confidence, 0) DESC,
                 om.created_at DESC, om.id
        """,
        params,
    )
    return [
        Candidate(
            kind="source",
            topic=_topic(r["project"]),
            memories=(
                LinkedMemory(r["memory_id"], r["memory_title"], "subject"),
                LinkedMemory(r["other_id"], r["other_title"], "evidence", r["project"]),
            ),
            base_score=_score("source", r["depth_score"]),
            facts={
                "title": r["doc_title"],
                "kind": r["kind"],
                "where": f"{r['location']} {r['position'] or ''}".strip(),
                "related": r["other_title"],
            },
        )
        for r in rows
    ]


def digest_items(conn: psycopg.Connection, now: datetime) -> list[Candidate]:
    """The week in review: how many decisions, insights and syntheses arrived in the last
    EXPRESS_DIGEST_DAYS days, in how many projects, and the deepest of them."""
    rows = _rows(
        conn,
        """
        SELECT id::text, title, project, type, depth_score FROM memories
        WHERE status = 'active' AND type NOT IN (%(excluded)s, 'segment')
          AND created_at > %(start)s AND created_at <= %(end)s
        ORDER BY depth_score DESC NULLS LAST, created_at DESC, id
        """,
        {
            "excluded": NOT_DELIVERED,
            "start": now - timedelta(days=tuning.EXPRESS_DIGEST_DAYS),
            "end": now,
        },
    )
    if not rows:
        return []
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["type"]] += 1
    top = rows[: tuning.EXPRESS_DIGEST_TOP]
    return [
        Candidate(
            kind="digest",
            topic=DIGEST_TOPIC,
            memories=tuple(LinkedMemory(r["id"], r["title"], "subject", r["project"]) for r in top),
            base_score=_score("digest"),
            facts={
                "counts": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                "projects": len({r["project"] for r in rows if r["project"]}),
                "week_of": (now - timedelta(days=tuning.EXPRESS_DIGEST_DAYS)).date().isoformat(),
            },
        )
    ]
