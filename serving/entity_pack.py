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
from serving.models import (
    ContextItem,
    ContextPack,
    Excerpt,
    PackRoute,
    PassageTurn,
    SearchFilters,
)
from serving.render import pack_item_text
from serving.router import Route, route
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


def plan(
    conn: psycopg.Connection, query: str, filters: SearchFilters
) -> tuple[Route, SearchFilters]:
    """The query's route, and the filters a RECALL search runs with (entity_ids set when the
    query or the caller names an entity)."""
    r = route(conn, query, include_private=filters.include_private, entity_names=filters.entities)
    out = filters.model_copy()
    if r.entities:
        out.entity_ids = [e.id for e in r.entities]
        if r.since and not out.since:
            out.since = r.since
        if r.until and not out.until:
            out.until = r.until
    elif filters.entities:  # an entity filter naming nothing known: nothing matches
        out.entity_ids = []
    return r, out


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
    newest_first = r.intent == "lookup"
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
               p.id, p.ordinal, array_agg(DISTINCT te.entity_id), array_agg(DISTINCT te.surface)
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
        mid, kind, title, created, updated, pid, pord, ents, surfaces = row[11:]
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
            )
        )
    memory_rows = conn.execute(
        f"""
        SELECT m.id, m.type, m.title, m.content, m.created_at, m.updated_at, p.id, p.ordinal,
               array_agg(DISTINCT me.entity_id)
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
    for mid, kind, title, content, created, updated, pid, pord, ents in memory_rows:
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
