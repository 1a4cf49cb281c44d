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
it.
"""

from __future__ import annotations

from uuid import UUID

import psycopg

from memory_pipeline import tuning
from serving.models import ContextPack, LeftOut, SearchHit
from serving.render import pack_item_text


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


def order_current_first(
    conn: psycopg.Connection,
    hits: list[SearchHit],
    token_budget: int,
    include_private: bool,
    cut_old: bool = True,
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
