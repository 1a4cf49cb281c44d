"""The intent router (seed 003, issue 34): what a query names and what it asks, decided
deterministically before any ranking, with no model call.

- **Entities**: the query's word spans (up to ENTITY_ALIAS_MAX_WORDS words) looked up among the
  aliases of nodes a visible memory or turn mentions (one indexed lookup). An alias of two
  nodes is not resolved: the route keeps the ambiguity, and the pack says so. A person's,
  place's or organisation's single-word alias matches in any case, except a function word.
- **Time**: "today", "yesterday", "this/last week|month|year", "N days/weeks ago", "in March",
  "in 2025", "since March" become a window on the dates of memories and mentions.
- **Intent**: LOOKUP ("when did I last ...", "when did we decide ...", "last time ..."),
  AGGREGATE ("which <things>" with a plural noun, "list every ...", "how many times ...",
  "what does X usually ...", "every time ..."), otherwise RECALL. "Which <thing>" (one noun,
  singular) asks for one answer: RECALL, so its pack keeps the memory text that holds it. So
  does a question for a value as it is now or ended (`current_first.asks_for_current`: "when
  is the wedding now?", "how many students are in her homeroom now?", "the final dates"):
  RECALL, whose pack puts the current statement first.

LOOKUP and AGGREGATE change a pack only when the query names an entity; RECALL with an entity
filters the candidates to memories that mention it first. A query that names no entity is routed
RECALL with nothing to filter: its pack is exactly what it was before the router.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal
from uuid import UUID

import psycopg

from memory_pipeline import tuning
from memory_pipeline.entities.extract import NOT_NAMES, normal
from serving.current_first import asks_for_current
from serving.text import tokens

Intent = Literal["lookup", "aggregate", "recall"]

_LOOKUP = re.compile(
    r"^\s*(?:when (?:did|was|were|do|have|had|is)\b|what (?:day|date|time) did\b|"
    r"how long ago\b|(?:the )?last time\b)|\bwhen did (?:i|we|you|he|she|they) last\b",
    re.IGNORECASE,
)
_AGGREGATE = re.compile(
    r"^\s*(?:which (?:[\w/-]+ )?(?!(?:does|has|was|is|uses)\b)[\w/-]{2,}s\b|which of\b|"
    r"list|name (?:all|every)|what are (?:all|the)|how many|how often|"
    r"in what ways|what kinds? of)\b|\bevery (?:time|one)\b|\busually\b|\ball (?:the )?times\b",
    re.IGNORECASE,
)
_MONTHS = {
    m: i
    for i, m in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
_MONTH_RE = "|".join(_MONTHS)
_TIME = re.compile(
    rf"\b(today|yesterday|(?:this|last) (?:week|month|year)|(\d+) (day|week|month)s? ago|"
    rf"(in|since) ({_MONTH_RE})(?: (\d{{4}}))?|(in|since) (\d{{4}}))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class EntityRef:
    id: UUID
    name: str
    category: str
    alias: str  # the query's words that named it


@dataclass(frozen=True)
class Ambiguity:
    alias: str
    candidates: tuple[tuple[UUID, str, str], ...]  # id, name, category


@dataclass
class Route:
    intent: Intent
    entities: list[EntityRef] = field(default_factory=list)
    ambiguous: list[Ambiguity] = field(default_factory=list)
    since: datetime | None = None
    until: datetime | None = None
    time_text: str | None = None

    @property
    def changes_pack(self) -> bool:
        """Whether the pack differs from the router-less one (an entity or an ambiguity)."""
        return bool(self.entities or self.ambiguous)


def intent_of(query: str) -> Intent:
    if _LOOKUP.search(query) and not asks_for_current(query):
        # "When is Omar's wedding now?" asks for a value that changed, not when something
        # last happened: RECALL, whose pack puts the current statement first.
        return "lookup"
    if _AGGREGATE.search(query) and not asks_for_current(query):
        # "How many students are in her homeroom now?", "the final dates": one value as it
        # is now, not every mention over time: RECALL.
        return "aggregate"
    return "recall"


def time_window(query: str, now: datetime) -> tuple[datetime | None, datetime | None, str | None]:
    """The window a time expression names ([since, until)), or Nones."""
    m = _TIME.search(query)
    if m is None:
        return None, None, None
    text = m.group(1).lower()
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if text == "today":
        return day, day + timedelta(days=1), text
    if text == "yesterday":
        return day - timedelta(days=1), day, text
    if m.group(2):
        unit = {"day": 1, "week": 7, "month": 30}[m.group(3).lower()]
        at = day - timedelta(days=int(m.group(2)) * unit)
        return at - timedelta(days=unit), at + timedelta(days=1), text
    if text.startswith(("this", "last")):
        span = {"week": 7, "month": 30, "year": 365}[text.split()[1]]
        if text.startswith("this"):
            return day - timedelta(days=span), None, text
        return day - timedelta(days=2 * span), day - timedelta(days=span) + timedelta(days=1), text
    if m.group(5):
        month = _MONTHS[m.group(5).lower()]
        year = int(m.group(6)) if m.group(6) else (now.year if month <= now.month else now.year - 1)
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        return start, (end if m.group(4).lower() == "in" else None), text
    year = int(m.group(8))
    start = datetime(year, 1, 1, tzinfo=UTC)
    return (
        start,
        (datetime(year + 1, 1, 1, tzinfo=UTC) if m.group(7).lower() == "in" else None),
        text,
    )


_WORD = re.compile(r"[\w][\w.'/@+-]*[\w]|[\w]")


def spans(query: str) -> list[tuple[int, int, str]]:
    """(first word, last word + 1, normalised text) of every span of up to
    ENTITY_ALIAS_MAX_WORDS words."""
    words = [w.group(0) for w in _WORD.finditer(query)]
    out = []
    for i in range(len(words)):
        for n in range(1, min(tuning.ENTITY_ALIAS_MAX_WORDS, len(words) - i) + 1):
            text = normal(" ".join(words[i : i + n]))
            text = re.sub(r"'s$", "", text)
            if len(text) >= tuning.ENTITY_ALIAS_MIN_CHARS:
                out.append((i, i + n, text))
    return out


def _visible(include_private: bool) -> str:
    """A node is visible when a memory or turn the caller may see mentions it."""
    memory = "NOT m.private AND " if not include_private else ""
    task = "NOT k.private AND " if not include_private else ""
    return (
        "(EXISTS (SELECT 1 FROM memory_entities me JOIN memories m ON m.id = me.memory_id"
        f" WHERE {memory}me.entity_id = e.id)"
        " OR EXISTS (SELECT 1 FROM turn_entities te JOIN agent_turns t ON t.id = te.turn_id"
        f" JOIN captured_tasks k ON k.id = t.task_id WHERE {task}te.entity_id = e.id))"
    )


def entities_in(
    conn: psycopg.Connection, query: str, *, include_private: bool = False
) -> tuple[list[EntityRef], list[Ambiguity]]:
    """The nodes the query names (longest span first, left to right) and the aliases it used
    that name more than one node."""
    found = spans(query)
    if not found:
        return [], []
    rows = conn.execute(
        "SELECT a.alias, e.id, e.name, e.category FROM entity_aliases a"
        " JOIN entities e ON e.id = a.entity_id"
        f" WHERE a.alias = ANY(%s) AND {_visible(include_private)}",
        [sorted({t for _, _, t in found})],
    ).fetchall()
    nodes: dict[str, list[tuple[UUID, str, str]]] = {}
    for alias, eid, name, category in rows:
        nodes.setdefault(alias, []).append((eid, name, category))
    taken: set[int] = set()
    refs: list[EntityRef] = []
    ambiguous: list[Ambiguity] = []
    for first, last, text in sorted(found, key=lambda s: (-(s[1] - s[0]), s[0])):
        if text not in nodes or taken & set(range(first, last)):
            continue
        if last - first == 1 and (not tokens(text) or text in NOT_NAMES):
            continue
        taken |= set(range(first, last))
        candidates = sorted(nodes[text], key=lambda c: str(c[0]))
        if len(candidates) == 1:
            eid, name, category = candidates[0]
            if all(r.id != eid for r in refs):
                refs.append(EntityRef(eid, name, category, text))
        else:
            ambiguous.append(Ambiguity(text, tuple(candidates)))
    return refs, ambiguous


def route(
    conn: psycopg.Connection,
    query: str,
    *,
    include_private: bool = False,
    now: datetime | None = None,
    entity_names: list[str] | None = None,
) -> Route:
    """The route of a query. `entity_names`: the caller's explicit `entity` filter (MCP, CLI),
    resolved like the query's words; they replace the scan."""
    if entity_names:
        refs: list[EntityRef] = []
        ambiguous: list[Ambiguity] = []
        for name in entity_names:
            r, a = entities_in(conn, name, include_private=include_private)
            refs += [x for x in r if all(y.id != x.id for y in refs)]
            ambiguous += a
    else:
        refs, ambiguous = entities_in(conn, query, include_private=include_private)
    since, until, text = time_window(query, now or datetime.now(UTC))
    return Route(intent_of(query), refs, ambiguous, since, until, text)
