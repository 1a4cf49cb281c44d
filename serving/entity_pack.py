"""Packs the intent router shapes (serving/router.py): LOOKUP and AGGREGATE answered from
mentions, RECALL filtered first to memories mentioning the named entity.

- **LOOKUP** ("when did I last talk to Nadia?"): no embeddings. The mentions of the entity
  (turns, and distilled memories such as decisions) ranked by the share of the query's other
  words they hold, then newest first; the best ROUTER_LOOKUP_LINES, newest first.
- **AGGREGATE** ("which cities has Nadia visited?", "what does Nadia usually do to relax?"):
  every mention of the entity over time, one line per mention (the message of the turn that
  mentions it, or that its speaker said, cut to ROUTER_LINE_CHARS), the best for the query's
  other words first, as many as the budget holds, then put in date order. Each line is an
  excerpt of its memory with the turn it quotes ([t12]) and its memory's date and task.
- **RECALL**: the normal pack over the memories that mention the entity (SearchFilters.
  entity_ids), or over every memory when none of those matched.

Every routed pack carries `route`: the intent, the entities, the time window and the aliases
left ambiguous (the consumer is expected to ask which one was meant, not guess).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from memory_pipeline import tuning
from memory_pipeline.entities.extract import normal
from memory_pipeline.errors import BrowseError
from serving.current_first import asks_for_current
from serving.models import (
    ContextItem,
    ContextPack,
    EntityList,
    EntityMention,
    EntitySummary,
    EntityTimeline,
    Excerpt,
    PackRoute,
    PassageTurn,
    SearchFilters,
)
from serving.render import pack_item_text
from serving.router import EntityRef, Route, route
from serving.search.provenance import provenance
from serving.text import overlap, tokens


def describe(r: Route, filtered: bool = False) -> PackRoute:
    return PackRoute(
        intent=r.intent,
        entities=[f"{e.name} ({e.category})" for e in r.entities],
        ambiguous=[
            f"'{a.alias}' names {len(a.candidates)} entities: "
            + ", ".join(f"{name} ({cat})" for _, name, cat in a.candidates)
            for a in r.ambiguous
        ],
        time=r.time_text,
        filtered=filtered,
    )


@dataclass(frozen=True)
class Line:
    memory_id: UUID
    kind: str
    title: str
    created_at: datetime
    updated_at: datetime
    at: datetime  # when the mention was said (the turn's time, else the memory's)
    passage_id: UUID
    passage_ordinal: int
    text: str
    truncated: bool
    source: str | None
    native_task_id: str | None
    turn: PassageTurn | None
    score: float
    entities: frozenset[UUID]  # the named entities this mention is of
    extractor: str = "alias"  # how the strongest of its mentions was found
    confidence: float = 1.0


def plan(
    conn: psycopg.Connection, query: str, filters: SearchFilters
) -> tuple[Route, SearchFilters]:
    """The query's route, and the filters a RECALL search runs with (entity_ids set when the
    query or the caller names an entity). The caller's `entity` filter replaces the scan."""
    r = route(conn, query, include_private=filters.include_private)
    out = entity_filters(conn, filters)
    if filters.entities:
        refs = _summaries(
            conn, out.entity_ids or [], filters.include_private, len(filters.entities)
        )
        r.entities = [EntityRef(e.id, e.name, e.type, normal(e.name)) for e in refs]
        r.ambiguous = []
    elif r.entities:
        out.entity_ids = [e.id for e in r.entities]
    if r.entities:
        if r.since and not out.since:
            out.since = r.since
        if r.until and not out.until:
            out.until = r.until
    return r, out


def entity_filters(conn: psycopg.Connection, filters: SearchFilters) -> SearchFilters:
    """`filters` with the caller's entity names resolved to `entity_ids`; a name that means
    several entities, or none, is a one-line error saying what to do."""
    out = filters.model_copy()
    if not filters.entities:
        return out
    ids: list[UUID] = []
    for name in filters.entities:
        found, candidates = resolve(conn, name, include_private=filters.include_private)
        if candidates:
            names = _summaries(conn, candidates, filters.include_private, len(candidates))
            listed = ", ".join(f"{c.name} ({c.type})" for c in names)
            raise BrowseError(
                f"'{name}' names {len(candidates)} entities: {listed}; give one of these names"
            )
        if not found:
            raise BrowseError(
                f"no entity is named '{name}'; memory_entity (or `memory-pipeline entities`) "
                "lists the known ones"
            )
        ids += [i for i in found if i not in ids]
    out.entity_ids = ids
    return out


def mention_pack(
    conn: psycopg.Connection,
    query: str,
    token_budget: int,
    r: Route,
    filters: SearchFilters,
) -> ContextPack:
    """The LOOKUP or AGGREGATE pack of a route naming entities."""
    lines = mention_lines(conn, query, r, filters)
    if r.intent == "lookup":
        lines = lines[: tuning.ROUTER_LOOKUP_LINES]
    items: dict[UUID, ContextItem] = {}
    sizes: dict[UUID, int] = {}
    used = 0
    truncated = False
    for line in lines:
        item = items.get(line.memory_id)
        excerpt = Excerpt(
            passage_id=line.passage_id,
            passage_ordinal=line.passage_ordinal,
            text=line.text,
            source=line.source,
            native_task_id=line.native_task_id,
            turns=[line.turn] if line.turn else [],
            truncated=line.truncated,
        )
        if item is None:
            trial = ContextItem(
                kind=line.kind,
                memory_id=line.memory_id,
                title=line.title,
                created_at=line.at,
                updated_at=line.updated_at,
                score=line.score,
                truncated=True,
                excerpts=[excerpt],
                provenance=provenance(conn, [str(line.memory_id)]).get(str(line.memory_id), []),
            )
        else:
            if any(e.passage_id == line.passage_id and e.text == line.text for e in item.excerpts):
                continue
            trial = item.model_copy(update={"excerpts": [*item.excerpts, excerpt]})
        cost = _tokens(pack_item_text(trial)) - sizes.get(line.memory_id, 0)
        if used + cost > token_budget:
            truncated = True
            continue
        items[line.memory_id] = trial
        sizes[line.memory_id] = sizes.get(line.memory_id, 0) + cost
        used += cost
    for mid, item in items.items():
        ordered = sorted(item.excerpts, key=lambda e: e.turns[0].ordinal if e.turns else 0)
        items[mid] = item.model_copy(update={"excerpts": ordered})
    # LOOKUP ("when did I last ...") and a question for a value as it is now or ended
    # ("which coordinator does the house run on now?"): the newest mention first, so the
    # current value comes before what it replaced; otherwise in date order.
    newest_first = r.intent == "lookup" or asks_for_current(query)
    ordered_items = sorted(items.values(), key=lambda i: i.created_at, reverse=newest_first)
    return ContextPack(
        query=query,
        token_budget=token_budget,
        tokens_used=sum(sizes.values()),
        truncated=truncated,
        items=ordered_items,
        route=describe(r, filtered=True),
    )


def _tokens(text: str) -> int:
    return -(-len(text) // tuning.CHARS_PER_TOKEN)


def mention_lines(
    conn: psycopg.Connection, query: str, r: Route, filters: SearchFilters
) -> list[Line]:
    """Every mention of the route's entities a caller may see, one line each, best first."""
    ids = [e.id for e in r.entities]
    alias_words = frozenset().union(*(tokens(f"{e.alias} {e.name}") for e in r.entities))
    wanted = tokens(query) - alias_words
    private = "" if filters.include_private else " AND NOT m.private"
    window = ""
    params: list[object] = [ids, list(filters.statuses)]
    if r.since:
        window += " AND coalesce(t.started_at, k.started_at) >= %s"
        params.append(r.since)
    if r.until:
        window += " AND coalesce(t.started_at, k.started_at) < %s"
        params.append(r.until)
    turn_rows = conn.execute(
        f"""
        SELECT t.id, t.ordinal, t.native_turn_id, t.native_message_ids, t.prompt, t.outcome,
               t.prompt_speaker, t.outcome_speaker, coalesce(t.started_at, k.started_at),
               k.source, k.native_id, m.id, m.type, m.title, m.created_at, m.updated_at,
               p.id, p.ordinal, array_agg(DISTINCT te.entity_id), array_agg(DISTINCT te.surface),
               (array_agg(te.extractor ORDER BY te.confidence DESC))[1], max(te.confidence)
        FROM turn_entities te
        JOIN agent_turns t ON t.id = te.turn_id
        JOIN captured_tasks k ON k.id = t.task_id
        JOIN memory_provenance mp ON mp.turn_id = t.id
        JOIN memories m ON m.id = mp.memory_id AND m.type = 'segment'
        JOIN LATERAL (
            SELECT id, ordinal FROM memory_passages p
            WHERE p.memory_id = m.id AND t.id = ANY(p.turn_ids) ORDER BY ordinal LIMIT 1
        ) p ON true
        WHERE te.entity_id = ANY(%s) AND m.status = ANY(%s) AND m.duplicate_of IS NULL
              {private}{window}
        GROUP BY t.id, k.id, m.id, p.id, p.ordinal
        """,
        params,
    ).fetchall()
    names = {normal_name for e in r.entities for normal_name in (e.name.lower(), e.alias)}
    lines: list[Line] = []
    for row in turn_rows:
        (_, ordinal, native_turn, msg_ids, prompt, outcome, psp, osp, at, source, native) = row[:11]
        mid, kind, title, created, updated, pid, pord, ents, surfaces, how, conf = row[11:]
        sides = [(psp or "User", prompt), (osp or "Agent", outcome)]
        marks = {s.lower() for s in surfaces if s} | names
        best = None
        for speaker, text in sides:
            if not text.strip():
                continue
            # the entity's own words first, then a message naming it
            said = 0.3 if speaker.lower() in names else 0.0
            named = 0.2 if any(m in text.lower() for m in marks) else 0.0
            score = overlap(wanted, tokens(text)) + max(said, named) + 0.1 * len(ents)
            if best is None or score > best[0]:
                best = (score, f"{speaker}: {text}")
        if best is None:
            continue
        text, cut = _cut(best[1])
        turn = PassageTurn(ordinal=ordinal, native_turn_id=native_turn, native_message_ids=msg_ids)
        lines.append(
            Line(
                mid,
                kind,
                title,
                created,
                updated,
                at,
                pid,
                pord,
                text,
                cut,
                source,
                native,
                turn,
                best[0],
                frozenset(ents),
                how,
                conf,
            )
        )
    memory_rows = conn.execute(
        f"""
        SELECT m.id, m.type, m.title, m.content, m.created_at, m.updated_at, p.id, p.ordinal,
               array_agg(DISTINCT me.entity_id),
               (array_agg(me.extractor ORDER BY me.confidence DESC))[1], max(me.confidence)
        FROM memory_entities me JOIN memories m ON m.id = me.memory_id
        JOIN LATERAL (
            SELECT id, ordinal FROM memory_passages p WHERE p.memory_id = m.id
            ORDER BY ordinal LIMIT 1
        ) p ON true
        WHERE me.entity_id = ANY(%s) AND m.status = ANY(%s) AND m.duplicate_of IS NULL
              AND m.type = ANY(%s){private}
              {" AND m.created_at >= %s" if r.since else ""}
              {" AND m.created_at < %s" if r.until else ""}
        GROUP BY m.id, p.id, p.ordinal
        """,
        [
            ids,
            list(filters.statuses),
            list(tuning.ROUTER_MEMORY_MENTION_TYPES),
            *([r.since] if r.since else []),
            *([r.until] if r.until else []),
        ],
    ).fetchall()
    for mid, kind, title, content, created, updated, pid, pord, ents, how, conf in memory_rows:
        text, cut = _cut(f"{title}: {content}")
        score = overlap(wanted, tokens(f"{title} {content}"))
        lines.append(
            Line(
                mid,
                kind,
                title,
                created,
                updated,
                created,
                pid,
                pord,
                text,
                cut,
                None,
                None,
                None,
                score,
                frozenset(ents),
                how,
                conf,
            )
        )
    if len(ids) > 1:  # several entities named: the mentions of them all, when there are any
        together = [ln for ln in lines if ln.entities >= set(ids)]
        lines = together or lines
    lines.sort(key=lambda ln: (-round(ln.score, 6), -ln.at.timestamp(), str(ln.passage_id)))
    return lines


def _cut(text: str) -> tuple[str, bool]:
    text = " ".join(text.split())
    limit = tuning.ROUTER_LINE_CHARS
    if len(text) <= limit:
        return text, False
    return text[: limit - 1].rstrip() + "…", True


# --- browsing entities (MCP memory_entity, CLI `memory-pipeline entities`) ----------------------
def _summaries(
    conn: psycopg.Connection, ids: list[UUID] | None, include_private: bool, limit: int
) -> list[EntitySummary]:
    """Entities with their visible mention counts, most mentioned first (`ids`: only those)."""
    memory = "" if include_private else " AND NOT m.private"
    task = "" if include_private else " AND NOT k.private"
    rows = conn.execute(
        f"""
        WITH seen AS (
            SELECT me.entity_id, m.created_at AS at, 1 AS memory, 0 AS turn
            FROM memory_entities me JOIN memories m ON m.id = me.memory_id
            WHERE m.status IN ('active', 'explored'){memory}
            UNION ALL
            SELECT te.entity_id, coalesce(t.started_at, k.started_at), 0, 1 FROM turn_entities te
            JOIN agent_turns t ON t.id = te.turn_id JOIN captured_tasks k ON k.id = t.task_id
            WHERE true{task}
        )
        SELECT e.id, e.name, e.category, sum(s.memory), sum(s.turn), min(s.at), max(s.at),
               (SELECT array_agg(alias ORDER BY alias) FROM entity_aliases a
                WHERE a.entity_id = e.id),
               (SELECT array_agg(identifier ORDER BY identifier) FROM entity_identifiers i
                WHERE i.entity_id = e.id)
        FROM seen s JOIN entities e ON e.id = s.entity_id
        WHERE (%s::uuid[] IS NULL OR e.id = ANY(%s::uuid[]))
        GROUP BY e.id ORDER BY count(*) DESC, e.name, e.id LIMIT %s
        """,
        [ids, ids, limit],
    ).fetchall()
    return [
        EntitySummary(
            id=r[0],
            name=r[1],
            type=r[2],
            memories=r[3],
            turns=r[4],
            first_seen=r[5],
            last_seen=r[6],
            aliases=list(r[7] or []),
            identifiers=list(r[8] or []),
        )
        for r in rows
    ]


def entity_list(
    conn: psycopg.Connection, *, include_private: bool = False, limit: int = 50
) -> EntityList:
    total = conn.execute("SELECT count(*) FROM entities").fetchone()[0]  # type: ignore[index]
    return EntityList(entities=_summaries(conn, None, include_private, limit), total=total)


def resolve(
    conn: psycopg.Connection, name: str, *, include_private: bool = False
) -> tuple[list[UUID], list[UUID]]:
    """(the node a name means, the candidates when it means several). An identifier
    (`repo:github.com/o/r`, `email:a@b`) or a whole alias first, then the query scan."""
    key = normal(name)
    exact = conn.execute(
        "SELECT entity_id FROM entity_identifiers WHERE identifier = %s OR identifier = %s"
        " UNION SELECT entity_id FROM entity_aliases WHERE alias = %s",
        [name.strip(), key, key],
    ).fetchall()
    ids = sorted({r[0] for r in exact}, key=str)
    if ids:
        ids = [s.id for s in _summaries(conn, ids, include_private, len(ids))]
    if len(ids) == 1:
        return ids, []
    if len(ids) > 1:
        return [], ids
    r = route(conn, name, include_private=include_private)
    if r.entities:
        return [r.entities[0].id], []
    if r.ambiguous:
        return [], [c[0] for c in r.ambiguous[0].candidates]
    return [], []


def entity_timeline(
    conn: psycopg.Connection, name: str, *, include_private: bool = False, limit: int = 50
) -> EntityTimeline:
    """An entity's mentions, newest first; or the candidates when the name means several."""
    ids, candidates = resolve(conn, name, include_private=include_private)
    if not ids:
        found = _summaries(conn, candidates, include_private, len(candidates)) if candidates else []
        return EntityTimeline(query=name, candidates=found)
    (summary,) = _summaries(conn, ids, include_private, 1)
    r = Route("aggregate", [EntityRef(summary.id, summary.name, summary.type, normal(name))])
    lines = mention_lines(conn, "", r, SearchFilters(include_private=include_private))
    lines.sort(key=lambda ln: (ln.at, str(ln.passage_id)), reverse=True)
    mentions = [
        EntityMention(
            at=ln.at,
            memory_id=ln.memory_id,
            kind=ln.kind,
            title=ln.title,
            line=ln.text,
            extractor=ln.extractor,
            confidence=ln.confidence,
            source=ln.source,
            native_task_id=ln.native_task_id,
            turn=ln.turn.ordinal if ln.turn else None,
        )
        for ln in lines[:limit]
    ]
    return EntityTimeline(
        query=name, entity=summary, mentions=mentions, truncated=len(lines) > limit
    )
