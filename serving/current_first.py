"""The current value first (issue 34): a packed memory that a newer decision reverses (a live
`contradicts` edge to it) or supersedes (a live `superseded_by` edge from it) never comes before
its successor when the successor matched too.

A successor matched when it is among the search's hits itself, or when a hit rests on the same
captured task (the segment the reversing decision was distilled from). Then:

- the reversed memory moves to just after the last of its matched successors, so its excerpts
  rank below theirs and its item comes after theirs;
- when the query asks for the current state (`cut_old`: "now", "currently", ...) and the budget
  is not generous (PACK_GENEROUS_TOKENS), it is cut to one flagged line: its best passage's head
  (PACK_REVERSED_LINE_CHARS), no neighbours, no further messages, so the room goes to the
  current statement and what else matched. A question about the past ("how much faster was the
  memory-mapped reader", "where was the time spent before the optimisations") keeps its text:
  the reversed memory is where its answer is;
- after packing, a reversed decision (or other derived memory) whose matched successors all
  failed to fit is left out rather than served alone. A topic segment stays, with its flag: a
  session holds much more than the choice that was reversed (dropping the whole session lost
  the evidence of 12 of the 60 demo questions, e.g. a profiling result in the session whose
  mmap decision was later reversed).

A hit with no reversal, or whose successor did not match, is left exactly as the search ranked
it. Unless the query asks about the past, the hit standing for a successor also takes the
reversed hit's passage ranks (`_lift_successors`), so the current statement is packed before
the old one's further excerpts rather than left out for them.

After packing, `order_items` puts the latest statement of each fact first (order only: the
pack holds the same text): see its doc.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from uuid import UUID

import numpy as np
import psycopg

from memory_pipeline import tuning
from serving.models import ContextPack, LeftOut, PassageMatch, SearchHit
from serving.render import pack_item_text
from serving.text import tokens


def successors(
    conn: psycopg.Connection, hit_ids: list[str], include_private: bool
) -> dict[str, set[str]]:
    """Reversed or superseded hit -> the memories that replace it (live edges only)."""
    if not hit_ids:
        return {}
    private = "" if include_private else " AND NOT o.private"
    rows = conn.execute(
        "SELECT r.target_id::text, r.source_id::text FROM memory_relationships r"
        " JOIN memories o ON o.id = r.source_id WHERE r.relation_type = 'contradicts'"
        f" AND r.expired_at IS NULL AND r.target_id = ANY(%s::uuid[]){private}"
        " UNION SELECT r.source_id::text, r.target_id::text FROM memory_relationships r"
        " JOIN memories o ON o.id = r.target_id WHERE r.relation_type = 'superseded_by'"
        f" AND r.expired_at IS NULL AND r.source_id = ANY(%s::uuid[]){private}",
        [hit_ids, hit_ids],
    ).fetchall()
    out: dict[str, set[str]] = {}
    for old, new in rows:
        out.setdefault(old, set()).add(new)
    return out


def _tasks(conn: psycopg.Connection, memory_ids: set[str]) -> dict[str, set[UUID]]:
    rows = conn.execute(
        "SELECT memory_id::text, task_id FROM memory_provenance WHERE memory_id = ANY(%s::uuid[])",
        [list(memory_ids)],
    ).fetchall()
    out: dict[str, set[UUID]] = {}
    for mid, task in rows:
        out.setdefault(mid, set()).add(task)
    return out


def new_of_all(succ: dict[str, set[str]]) -> set[str]:
    return {s for ss in succ.values() for s in ss}


def _turns(conn: psycopg.Connection, memory_ids: set[str]) -> set[tuple[str, int]]:
    """The (native task, turn ordinal) of every turn the memories rest on."""
    rows = conn.execute(
        "SELECT k.native_id, a.ordinal FROM memory_provenance p"
        " JOIN agent_turns a ON a.id = p.turn_id JOIN captured_tasks k ON k.id = p.task_id"
        " WHERE p.memory_id = ANY(%s::uuid[])",
        [list(memory_ids)],
    ).fetchall()
    return {(native, ordinal) for native, ordinal in rows}


def order_current_first(
    conn: psycopg.Connection,
    hits: list[SearchHit],
    token_budget: int,
    include_private: bool,
    cut_old: bool = True,
    query: str = "",
) -> tuple[list[SearchHit], dict[str, set[str]], set[str]]:
    """(hits reordered, reversed hit id -> ids of the hits that stand for its successors, ids of
    passages cut to a line)."""
    succ = successors(conn, [str(h.id) for h in hits], include_private)
    if not succ:
        return hits, {}, set()
    tasks = _tasks(conn, {s for ss in succ.values() for s in ss})
    matched: dict[str, set[str]] = {}
    place: dict[int, int] = {}
    for i, hit in enumerate(hits):
        new = succ.get(str(hit.id))
        if not new:
            continue
        new_tasks = {t for s in new for t in tasks.get(s, ())}
        own = {p.task_id for p in hit.provenance}
        stands_for = [
            j
            for j, other in enumerate(hits)
            if j != i
            and str(other.id) not in succ  # an old one cannot stand for the current one
            and (
                str(other.id) in new
                or bool({p.task_id for p in other.provenance} & (new_tasks - own))
            )
        ]
        if stands_for:
            matched[str(hit.id)] = {str(hits[j].id) for j in stands_for}
            place[i] = min(stands_for)
    if not matched:
        return hits, {}, set()
    if not asks_about_past(query):
        hits = _lift_successors(hits, place, matched, _turns(conn, new_of_all(succ)))
    order = sorted(range(len(hits)), key=lambda i: (place.get(i, i), i in place, i))
    cut: set[str] = set()
    out = []
    for i in order:
        hit = hits[i]
        if cut_old and i in place and token_budget < tuning.PACK_GENEROUS_TOKENS and hit.passages:
            best = hit.passages[0]
            text = " ".join(best.text.split())
            if len(text) > tuning.PACK_REVERSED_LINE_CHARS:
                text = text[: tuning.PACK_REVERSED_LINE_CHARS].rstrip() + " [...]"
            hit = hit.model_copy(update={"passages": [best.model_copy(update={"text": text})]})
            cut.add(str(best.id))
        out.append(hit)
    return out, matched, cut


def _strength(p: PassageMatch) -> float:
    k = tuning.PACK_RRF_K
    return sum(1 / (k + r) for r in (p.bm25_rank, p.vector_rank) if r is not None)


def _lift_successors(
    hits: list[SearchHit],
    place: dict[int, int],
    matched: dict[str, set[str]],
    new_turns: set[tuple[str, int]],
) -> list[SearchHit]:
    """Each hit standing for a reversed hit's successor gets, on its matched passage that
    quotes a turn a successor rests on (else its best matched passage), the passage ranks of
    the reversed hit's best one when better than its own: what matched the old statement
    matched the question, and the statement that replaced it must be packed before it, not
    left out for the old one's further excerpts."""
    index = {str(h.id): n for n, h in enumerate(hits)}
    best: dict[int, tuple[int | None, int | None]] = {}
    for i in place:
        old = hits[i].passages
        bm25 = min((p.bm25_rank for p in old if p.bm25_rank is not None), default=None)
        vector = min((p.vector_rank for p in old if p.vector_rank is not None), default=None)
        for sid in matched[str(hits[i].id)]:
            j = index[sid]
            b, v = best.get(j, (None, None))
            best[j] = (_better(b, bm25), _better(v, vector))
    out = list(hits)
    for j, (bm25, vector) in best.items():
        hit = out[j]
        if not hit.passages:
            continue
        top = max(
            range(len(hit.passages)),
            key=lambda n: (
                any(
                    (hit.passages[n].native_task_id, t.ordinal) in new_turns
                    for t in hit.passages[n].turns
                ),
                _strength(hit.passages[n]),
                -n,
            ),
        )
        p = hit.passages[top]
        lifted = p.model_copy(
            update={
                "bm25_rank": _better(p.bm25_rank, bm25),
                "vector_rank": _better(p.vector_rank, vector),
            }
        )
        passages = [*hit.passages[:top], lifted, *hit.passages[top + 1 :]]
        out[j] = hit.model_copy(update={"passages": passages})
    return out


def _better(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def drop_orphaned_reversals(pack: ContextPack, matched: dict[str, set[str]]) -> ContextPack:
    """A reversed decision packed while none of its matched successors fit goes to left_out:
    an agent reading the pack must not act on the old decision alone. A topic segment stays
    (flagged "reversed by a newer decision ..."): the rest of its session is still evidence."""
    packed = {str(i.memory_id) for i in pack.items}
    gone = [
        i
        for i in pack.items
        if i.kind != "segment"
        and str(i.memory_id) in matched
        and not matched[str(i.memory_id)] & packed
    ]
    if not gone:
        return pack
    items = [i for i in pack.items if i not in gone]
    left = [LeftOut(memory_id=i.memory_id, kind=i.kind, title=i.title) for i in gone]
    return pack.model_copy(
        update={
            "items": items,
            "tokens_used": sum(-(-len(pack_item_text(i)) // tuning.CHARS_PER_TOKEN) for i in items),
            "truncated": True,
            "left_out": (left + pack.left_out)[: tuning.PACK_MAX_LEFT_OUT_LISTED],
            "left_out_count": pack.left_out_count + len(gone),
        }
    )


# --- the order of a pack's items (after packing) ----------------------------------------------
def _cues(cues: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(re.escape(c) for c in cues) + r")\b", re.IGNORECASE)


_PAST = _cues(tuning.PACK_PAST_CUES)
_NEWEST_ANSWERS = (
    tuning.PACK_CURRENT_STATE_CUES + tuning.PACK_FINAL_VALUE_CUES + tuning.PACK_PLAN_CUES
)
_CURRENT = _cues(_NEWEST_ANSWERS)
_CUE_WORDS = frozenset(tokens(" ".join(_NEWEST_ANSWERS)))


def asks_for_current(query: str) -> bool:
    """Whether the query asks for a value as it is now, as it ended, or as it is planned ("...
    now?", "these days", "ended up", "the final ...", "planning to"): the newest statement
    answers it."""
    return bool(_CURRENT.search(query))


def asks_about_past(query: str) -> bool:
    """Whether the query asks what was true before ("what did we use before ...", "originally",
    "at first"): then an older statement is its answer and keeps its place."""
    return bool(_PAST.search(query))


def order_items(
    conn: psycopg.Connection,
    pack: ContextPack,
    query: str,
    include_private: bool,
    vectors: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
) -> ContextPack:
    """The packed items, the current statement of each fact first (issue 34, item 3).

    Items that state the same thing at different times form a group: an item and the packed
    item standing for a memory that reverses or supersedes it (a live edge, as
    `order_current_first` matches successors: the memory itself, or an item resting on its
    task); for a question for the value as it is now or ended (`asks_for_current`), all the
    items; otherwise, unless the query asks about the past (`asks_about_past`), two items that both
    hold PACK_SAME_FACT_SHARE of the query's content words or whose excerpts' vectors are
    PACK_SAME_FACT_COSINE close (an update rarely repeats the question's words). A group keeps
    the places its items had, and fills them newest first: the latest statement takes the
    group's first place, what it replaced follows. Items in no group keep their places. For a
    question asking for the value as it is now or ended (`asks_for_current`), an item's
    excerpts come latest first too: one conversation can state a value and then change it.
    Only the order changes: the pack holds the same text, within the same budget."""
    items = pack.items
    if len(items) < 2:
        return pack
    ids = [str(i.memory_id) for i in items]
    parent = list(range(len(items)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def join(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    succ = successors(conn, ids, include_private)
    if succ:
        tasks = _tasks(conn, {s for ss in succ.values() for s in ss})
        for i, mid in enumerate(ids):
            new = succ.get(mid)
            if not new:
                continue
            new_tasks = {t for s in new for t in tasks.get(s, ())}
            own = {p.task_id for p in items[i].provenance}
            for j, other in enumerate(items):
                if j != i and (
                    ids[j] in new or bool({p.task_id for p in other.provenance} & (new_tasks - own))
                ):
                    join(i, j)
    if asks_for_current(query):
        # A question for the value as it is now: every packed item answers it at its date,
        # so the pack reads newest first (the same-fact tests below miss updates worded
        # unlike each other: "Heroku's bill: $420 a month", "the Hetzner bill is 95 euro").
        for n in range(1, len(items)):
            join(n, 0)
    elif not asks_about_past(query):
        query_words = tokens(query) - _CUE_WORDS
        words = [tokens(i.text) & query_words for i in items]
        need = tuning.PACK_SAME_FACT_SHARE * len(query_words)
        by_id = vectors([str(e.passage_id) for i in items for e in i.excerpts]) if vectors else {}
        vecs = [
            [v for e in i.excerpts if (v := by_id.get(str(e.passage_id))) is not None]
            for i in items
        ]
        for a in range(len(items)):
            for b in range(a + 1, len(items)):
                if items[a].created_at == items[b].created_at:
                    continue
                same = bool(query_words) and len(words[a] & words[b]) >= need > 0
                if not same:
                    same = any(
                        float(x @ y) >= tuning.PACK_SAME_FACT_COSINE
                        for x in vecs[a]
                        for y in vecs[b]
                    )
                if same:
                    join(a, b)
    groups: dict[int, list[int]] = {}
    for n in range(len(items)):
        groups.setdefault(find(n), []).append(n)
    order = list(range(len(items)))
    for members in groups.values():
        if len(members) < 2:
            continue
        newest = sorted(members, key=lambda n: (-items[n].created_at.timestamp(), n))
        for slot, n in zip(sorted(members), newest, strict=True):
            order[slot] = n
    out = [items[n] for n in order]
    if asks_for_current(query):
        # One conversation that states the value and then changes it ("8 GB ... no, I got
        # 16"): its latest excerpt first.
        out = [
            i.model_copy(update={"excerpts": sorted(i.excerpts, key=lambda e: -e.passage_ordinal)})
            if len(i.excerpts) > 1
            else i
            for i in out
        ]
    if out == items:
        return pack
    return pack.model_copy(update={"items": out})
