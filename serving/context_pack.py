"""Context packs: the excerpts of memories that matched a task, cut to a token budget.

A pack quotes what matched, not the head of each memory: the passages of the search's hits
that a channel ranked (the turns of a segment that matched, a decision or insight whole) and, as
the budget allows, the passages next to them (the neighbouring turns; the turn after a match
before the one before it, since an answer follows its question). Each memory is one item:
a title line, its provenance ids and its excerpts, counted as rendered (`serving/render.py`).

Excerpts are packed greedily by priority (`excerpt_priority`, weights in
`serving/rerank_weights.py`): the fused ranks of the passage itself and of its memory, so the
turn that matched best comes first whichever memory holds it, a turn that says more before a
short reply ranked as high (`substance`), and a further excerpt of a memory already in the pack
is favoured (it costs no title or provenance lines). An excerpt that does not fit is skipped
(a smaller later one may still fit); a matched turn that does not fit is
quoted by the one of its messages that says most of the query's words when that fits
(`best_message`, marked cut). No memory is packed twice, and neither is what the pack already
holds: an excerpt whose text is in it, or a decision or insight whose turns a segment excerpt
quotes (a segment excerpt packed later that quotes a distilled item's text word for word takes
its place and its room). A question about the current state ("... now?") packs the latest
statement of a fact before older ones that it changed (`newer_first`: the same fact by the
query's words both passages say, or by their vectors, since an update rarely repeats the
question's words). Each item is marked whole or not as it is counted, so the pack never exceeds
its budget. The pack lists the memories it quoted in part and those it left out, and says how
to read them whole (`memory_read`). Correction episodes are never packed (evidence, not
steering).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import psycopg

from memory_pipeline.embedding.spaces import serving_space
from memory_pipeline.relationships.flags import memory_flags
from serving import rerank_weights as W
from serving.models import (
    ContextItem,
    ContextPack,
    Excerpt,
    LeftOut,
    PassageMatch,
    SearchFilters,
    SearchHit,
)
from serving.render import pack_item_text
from serving.search import QueryEmbedder, passage_details, record_retrievals, search
from serving.text import tokens

_ELLIPSIS = " [...]"


def tokens_of(text: str) -> int:
    return -(-len(text) // W.CHARS_PER_TOKEN)  # ceiling


@dataclass(frozen=True)
class _Candidate:
    priority: float
    hit_index: int
    passage: PassageMatch
    neighbour: bool


def context(
    conn: psycopg.Connection,
    query: str,
    token_budget: int,
    *,
    embedder: QueryEmbedder | None,
    filters: SearchFilters | None = None,
    project_context: str | None = None,
    record_surface: str | None = None,
) -> ContextPack:
    filters = (filters or SearchFilters()).model_copy()
    allowed = [t for t in (filters.types or []) if t not in W.STEERING_EXCLUDED_TYPES]
    if filters.types and not allowed:
        return ContextPack(
            query=query, token_budget=token_budget, tokens_used=0, truncated=False, items=[]
        )
    response = search(
        conn,
        query,
        embedder=embedder,
        limit=W.MAX_LIMIT,
        filters=filters,
        project_context=project_context,
        temporal_context=False,  # a pack quotes matches; neighbours in time matched nothing
        record_surface=None,
        passages_per_hit=W.PACK_PASSAGES_PER_HIT,
        near_passages=True,
    )
    hits = [h for h in response.results if h.type not in W.STEERING_EXCLUDED_TYPES and h.passages]
    with conn.transaction():
        flags = memory_flags(  # relationships: <= 2 per item
            conn, [str(h.id) for h in hits], include_private=filters.include_private
        )
        hits = [h.model_copy(update={"flags": flags.get(str(h.id), [])}) for h in hits]
        neighbours, sizes = _neighbours_and_sizes(conn, hits)
        messages = _messages(conn, [p for h in hits if h.type == "segment" for p in h.passages])
        vectors = (
            passage_vectors(conn, _update_candidates(hits)) if asks_current_state(query) else {}
        )
        pack = pack_excerpts(query, token_budget, hits, neighbours, sizes, messages, vectors)
        if record_surface and pack.items:
            record_retrievals(conn, query, [str(i.memory_id) for i in pack.items], record_surface)
    return pack


def _neighbours_and_sizes(
    conn: psycopg.Connection, hits: list[SearchHit]
) -> tuple[dict[str, list[PassageMatch]], dict[str, int]]:
    """For each matched passage, the passages right after and before it in its memory; and how
    many passages each hit's memory has (to tell a whole memory from an excerpt)."""
    wanted = [(str(p.memory_id), p.ordinal + d) for h in hits for p in h.passages for d in (1, -1)]
    memory_ids = [str(h.id) for h in hits]
    sizes = dict(
        conn.execute(
            "SELECT memory_id::text, count(*) FROM memory_passages"
            " WHERE memory_id = ANY(%s::uuid[]) GROUP BY memory_id",
            [memory_ids],
        ).fetchall()
    )
    if not wanted:
        return {}, sizes
    rows = conn.execute(
        "SELECT p.id::text, p.memory_id::text, p.ordinal FROM memory_passages p"
        " JOIN unnest(%s::uuid[], %s::int[]) AS w(memory_id, ordinal)"
        " ON p.memory_id = w.memory_id AND p.ordinal = w.ordinal",
        [[m for m, _ in wanted], [o for _, o in wanted]],
    ).fetchall()
    details = passage_details(conn, [r[0] for r in rows])
    by_position = {(m, o): details[pid] for pid, m, o in rows if pid in details}
    out: dict[str, list[PassageMatch]] = {}
    for h in hits:
        for p in h.passages:
            out[str(p.id)] = [
                by_position[key]
                for d in (1, -1)
                if (key := (str(p.memory_id), p.ordinal + d)) in by_position
            ]
    return out, sizes


def _messages(conn: psycopg.Connection, passages: list[PassageMatch]) -> dict[str, list[str]]:
    """For each matched passage that quotes a whole turn, the turn's messages as the passage
    renders them (`Speaker: text`, semantic/store.py render_turns): the pieces a pack can quote
    alone when the whole passage does not fit (`pack_excerpts`)."""
    if not passages:
        return {}
    rows = conn.execute(
        "SELECT p.id::text, a.prompt_speaker, a.prompt, a.outcome_speaker, a.outcome"
        " FROM memory_passages p"
        " CROSS JOIN LATERAL unnest(p.turn_ids) WITH ORDINALITY AS u(turn_id, n)"
        " JOIN agent_turns a ON a.id = u.turn_id"
        " WHERE p.id = ANY(%s::uuid[]) ORDER BY p.id, u.n",
        [[str(p.id) for p in passages]],
    ).fetchall()
    text = {str(p.id): p.text for p in passages}
    out: dict[str, list[str]] = {}
    for pid, prompt_speaker, prompt, outcome_speaker, outcome in rows:
        for piece in (
            f"{prompt_speaker or 'User'}: {prompt}",
            f"{outcome_speaker or 'Agent'}: {outcome}" if outcome.strip() else "",
        ):
            if piece and piece in text[pid]:
                out.setdefault(pid, []).append(piece)
    return {pid: pieces for pid, pieces in out.items() if len(pieces) > 1}


def best_message(query: str, pieces: list[str]) -> str | None:
    """The message of a passage that says most of the query's content words (the shorter one
    on a tie, None when it says none): what a pack quotes of a matched turn too long for the
    room left."""
    query_words = tokens(query)
    scored = [(len(tokens(m) & query_words), -len(m), m) for m in pieces]
    overlap, _, best = max(scored, default=(0, 0, ""))
    return best if overlap else None


def pack_excerpts(
    query: str,
    token_budget: int,
    hits: list[SearchHit],
    neighbours: dict[str, list[PassageMatch]],
    passage_counts: dict[str, int],
    messages: dict[str, list[str]] | None = None,
    vectors: dict[str, np.ndarray] | None = None,
) -> ContextPack:
    """The pack for ranked hits whose `passages` are their matched passages, best first.
    `messages` holds, for a matched passage of several messages, those messages: when the whole
    passage does not fit, the one that says most of the query is quoted alone (marked cut)."""
    messages = messages or {}
    matched = [
        (i, passage, excerpt_priority(passage, i, hit.type))
        for i, hit in enumerate(hits)
        for passage in hit.passages
    ]
    if asks_current_state(query):
        matched = newer_first(query, hits, matched, vectors)
    candidates: list[_Candidate] = []
    for i, passage, base in matched:
        kind = hits[i].type
        candidates.append(_Candidate(base * substance(passage, kind), i, passage, False))
        for n in neighbours.get(str(passage.id), []):
            share = W.PACK_NEIGHBOUR_SHARE if n.ordinal > passage.ordinal else W.PACK_PREVIOUS_SHARE
            candidates.append(_Candidate(base * share * substance(n, kind), i, n, True))

    items: dict[int, ContextItem] = {}
    packed_ids: set[str] = set()  # passages quoted whole (or found already quoted)
    parts: dict[str, str] = {}  # passage id -> the one message of it quoted so far
    packed_texts: list[str] = []
    represented: set[int] = set()  # hits whose matched text another memory's excerpt holds
    quoted_turns: set[tuple[str | None, int]] = set()  # (task, turn) quoted by segment excerpts
    used = 0
    skipped = False

    def cost_of(trial: ContextItem, item: ContextItem | None) -> int:
        return tokens_of(pack_item_text(trial)) - (tokens_of(pack_item_text(item)) if item else 0)

    for cand in _best_first(candidates, items):
        pid = str(cand.passage.id)
        if pid in packed_ids:
            continue
        hit = hits[cand.hit_index]
        key = _normal(cand.passage.text)
        turns = {(cand.passage.native_task_id, t.ordinal) for t in cand.passage.turns}
        if (key and any(key in seen for seen in packed_texts)) or (
            hit.type != "segment" and turns and turns <= quoted_turns
        ):
            # Already in the pack: its text, or (a distilled memory) the turns it rests on.
            packed_ids.add(pid)
            represented.add(cand.hit_index)
            continue
        item = items.get(cand.hit_index)
        # (A neighbour that is a matched passage quoted in part so far is still a match.)
        excerpt = _excerpt(cand.passage, cand.neighbour and pid not in parts)
        trial = _marked(_with_excerpt(hit, item, excerpt), passage_counts)
        cost = cost_of(trial, item)
        # A distilled memory packed earlier whose every excerpt this segment excerpt quotes
        # word for word (a sentence of the turn) would be said twice: it gives its room back.
        # Text, not turn ids: a long turn is cut into several passages.
        covered = (
            [
                j
                for j, other in items.items()
                if hits[j].type != "segment"
                and all(_normal(e.text) and _normal(e.text) in key for e in other.excerpts)
            ]
            if hit.type == "segment" and key
            else []
        )
        cost -= sum(tokens_of(pack_item_text(items[j])) for j in covered)
        if used + cost > token_budget:
            skipped = True
            part = None if cand.neighbour else best_message(query, messages.get(pid, []))
            if (
                part is not None
                and pid not in parts
                and not any(_normal(part) in seen for seen in packed_texts)
            ):
                # The whole turn does not fit: its message that says most of the query may.
                excerpt = _excerpt(cand.passage, False, part)
                trial = _marked(_with_excerpt(hit, item, excerpt), passage_counts)
                if used + cost_of(trial, item) <= token_budget:
                    used += cost_of(trial, item)
                    items[cand.hit_index] = trial
                    packed_texts.append(_normal(part))
                    parts[pid] = part
                    continue
            if not items and not cand.neighbour:
                # Nothing packed yet and the best excerpt alone is too long: quote its head.
                trial = _cut_to_fit(hit, excerpt, token_budget)
                if trial is not None:
                    items[cand.hit_index] = trial
                    used = tokens_of(pack_item_text(trial))
                    packed_ids.add(pid)
            continue
        used += cost
        for j in covered:
            del items[j]
            represented.add(j)
        items[cand.hit_index] = trial
        packed_texts.append(key)
        packed_ids.add(pid)
        if hit.type == "segment":
            quoted_turns |= turns

    ordered = []
    for i in sorted(items):
        item = items[i]
        item.excerpts.sort(key=lambda e: e.passage_ordinal)
        ordered.append(item)
    left_out = [
        LeftOut(memory_id=h.id, kind=h.type, title=h.title)
        for i, h in enumerate(hits)
        if i not in items and i not in represented
    ]
    return ContextPack(
        query=query,
        token_budget=token_budget,
        # As rendered, and as counted while packing (`_marked`): never more than the budget.
        tokens_used=sum(tokens_of(pack_item_text(item)) for item in ordered),
        truncated=skipped or bool(left_out),
        items=ordered,
        left_out=left_out[: W.PACK_MAX_LEFT_OUT_LISTED],
        left_out_count=len(left_out),
    )


def _best_first(
    candidates: list[_Candidate], items: dict[int, ContextItem]
) -> Iterator[_Candidate]:
    """Candidates by priority, those of a memory already in the pack (`items`, which the
    caller fills as it goes) weighted by PACK_OPEN_ITEM_BONUS: another excerpt of a packed
    memory costs no title or provenance lines."""

    def key(c: _Candidate) -> tuple[float, int, bool, int]:
        return (-c.priority, c.hit_index, c.neighbour, c.passage.ordinal)

    closed = [(key(c), n, c) for n, c in enumerate(candidates)]
    heapq.heapify(closed)
    opened: list[tuple[tuple[float, int, bool, int], int, _Candidate]] = []
    moved: set[int] = set()
    while closed or opened:
        # Move the candidates of memories packed since the last step to the boosted queue.
        if new := items.keys() - moved:
            moved |= new
            for _, n, c in (e for e in closed if e[2].hit_index in new):
                heapq.heappush(opened, ((-c.priority * W.PACK_OPEN_ITEM_BONUS, *key(c)[1:]), n, c))
            closed = [e for e in closed if e[2].hit_index not in new]
            heapq.heapify(closed)
        if opened and (not closed or opened[0][0] <= closed[0][0]):
            yield heapq.heappop(opened)[2]
        else:
            yield heapq.heappop(closed)[2]


def excerpt_priority(passage: PassageMatch, hit_index: int, kind: str = "segment") -> float:
    """Reciprocal Rank Fusion of the passage's own ranks (BM25 and vectors, among passages)
    and its memory's rank in the search (which carries the rerank), the latter weighted; a
    distilled memory's passage (a sentence drawn from a turn) at PACK_DISTILLED_SHARE of it."""
    k = W.PACK_RRF_K
    score = W.PACK_HIT_WEIGHT / (k + hit_index + 1)
    for rank in (passage.bm25_rank, passage.vector_rank):
        if rank is not None:
            score += 1 / (k + rank)
    return score if kind == "segment" else score * W.PACK_DISTILLED_SHARE


def substance(passage: PassageMatch, kind: str = "segment") -> float:
    """How much a segment's turn says, as a factor of its priority (1 for a turn of
    PACK_SUBSTANCE_TYPICAL_WORDS distinct content words, more for more); 1 for a distilled
    memory (short by design: a decision says what it must)."""
    if kind != "segment":
        return 1.0
    words = len(tokens(passage.text)) + W.PACK_SUBSTANCE_OFFSET
    return (words / (W.PACK_SUBSTANCE_TYPICAL_WORDS + W.PACK_SUBSTANCE_OFFSET)) ** (
        W.PACK_SUBSTANCE_EXPONENT
    )


_CURRENT_STATE = re.compile(
    r"\b(?:" + "|".join(re.escape(c) for c in W.PACK_CURRENT_STATE_CUES) + r")\b", re.I
)


_CHANGE_TOKENS = frozenset(tokens(" ".join(W.PACK_CHANGE_CUES)))


def asks_current_state(query: str) -> bool:
    """Whether the query asks for the current value of something ("... now?", "currently",
    "these days"): then the newest statement of a fact is what answers it."""
    return bool(_CURRENT_STATE.search(query))


def _update_candidates(hits: list[SearchHit]) -> list[str]:
    """The ids of the PACK_UPDATE_CANDIDATES best matched passages (those `newer_first`
    compares)."""
    ranked = sorted(
        (
            (excerpt_priority(p, i, h.type), str(p.id))
            for i, h in enumerate(hits)
            for p in h.passages
        ),
        reverse=True,
    )
    return [pid for _, pid in ranked[: W.PACK_UPDATE_CANDIDATES]]


def passage_vectors(conn: psycopg.Connection, passage_ids: list[str]) -> dict[str, np.ndarray]:
    """The passages' unit vectors in the serving space (none before a space is complete)."""
    space = serving_space(conn)
    if space is None or not passage_ids:
        return {}
    rows = conn.execute(  # pgvector Vectors (db.connection registers the type)
        "SELECT passage_id::text, embedding FROM passage_embeddings"
        " WHERE space = %s AND passage_id = ANY(%s::uuid[])",
        [space[0], passage_ids],
    ).fetchall()
    out = {}
    for pid, embedding in rows:
        v = np.asarray(embedding.to_numpy(), dtype=np.float32)
        norm = float(np.linalg.norm(v))
        if norm > 0:
            out[pid] = v / norm
    return out


def newer_first(
    query: str,
    hits: list[SearchHit],
    matched: list[tuple[int, PassageMatch, float]],
    vectors: dict[str, np.ndarray] | None = None,
) -> list[tuple[int, PassageMatch, float]]:
    """For a current-state query: a matched passage ranks at least PACK_NEWER_STEP above every
    older matched passage that states the same fact, so the latest statement is packed before
    what it replaced (the older ones keep their priority and follow as the budget allows).

    Two passages state the same fact when the query content words both contain are at least
    PACK_SAME_FACT_SHARE of the query's (cue words left out), or when their `vectors` (unit,
    serving space) are at least PACK_SAME_FACT_COSINE close, and the newer one states a
    change only if it says so (one of PACK_CHANGE_CUES): a later mention of the same thing
    ("the wedding was lovely") is not an update. Time is the memory's (the turn it
    happened in) and, within a memory, the passage order. Only the PACK_UPDATE_CANDIDATES best
    passages are compared (the rest could not be packed first anyway)."""
    query_words = tokens(query) - tokens(" ".join(_CURRENT_STATE.findall(query)))
    if not query_words:
        return matched
    order = sorted(range(len(matched)), key=lambda n: -matched[n][2])
    top = set(order[: W.PACK_UPDATE_CANDIDATES])
    when = {n: (hits[matched[n][0]].created_at, matched[n][1].ordinal) for n in top}
    words = {n: tokens(matched[n][1].text) for n in top}
    shared = {n: words[n] & query_words for n in top}
    priority = {n: matched[n][2] for n in top}
    chronological = sorted(top, key=lambda n: (when[n], n))
    for pos, newer in enumerate(chronological):
        if not words[newer] & _CHANGE_TOKENS:
            continue  # a later mention that says nothing changed (it happened, it was nice)
        for older in chronological[:pos]:
            if when[older] >= when[newer]:
                continue  # same moment: no order between them
            common = shared[newer] & shared[older]
            if len(common) >= W.PACK_SAME_FACT_SHARE * len(query_words) or _close(
                vectors, matched[newer][1], matched[older][1]
            ):
                priority[newer] = max(priority[newer], priority[older] * W.PACK_NEWER_STEP)
    return [(i, p, priority.get(n, prio)) for n, (i, p, prio) in enumerate(matched)]


def _close(vectors: dict[str, np.ndarray] | None, a: PassageMatch, b: PassageMatch) -> bool:
    """Whether two passages say nearly the same thing by their vectors (PACK_SAME_FACT_COSINE)."""
    va, vb = (vectors or {}).get(str(a.id)), (vectors or {}).get(str(b.id))
    return va is not None and vb is not None and float(va @ vb) >= W.PACK_SAME_FACT_COSINE


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _excerpt(p: PassageMatch, neighbour: bool, text: str | None = None) -> Excerpt:
    return Excerpt(
        passage_id=p.id,
        passage_ordinal=p.ordinal,
        text=p.text if text is None else text,
        source=p.source,
        native_task_id=p.native_task_id,
        turns=p.turns,
        neighbour=neighbour,
        truncated=text is not None,
    )


def _marked(item: ContextItem, passage_counts: dict[str, int]) -> ContextItem:
    """The item marked whole when it quotes every passage of its memory in full, so that it is
    counted as it will be rendered."""
    whole = len({e.passage_id for e in item.excerpts}) >= passage_counts.get(
        str(item.memory_id), 0
    ) and not any(e.truncated for e in item.excerpts)
    return item.model_copy(update={"truncated": not whole})


def _with_excerpt(hit: SearchHit, item: ContextItem | None, excerpt: Excerpt) -> ContextItem:
    if item is None:
        return ContextItem(
            kind=hit.type,
            memory_id=hit.id,
            title=hit.title,
            created_at=hit.created_at,
            updated_at=hit.updated_at,
            score=hit.score,
            truncated=True,
            excerpts=[excerpt],
            provenance=hit.provenance,
            flags=hit.flags,
        )
    # The whole passage takes the place of the one message of it quoted so far.
    kept = [e for e in item.excerpts if e.passage_id != excerpt.passage_id]
    return item.model_copy(update={"excerpts": [*kept, excerpt]})


def _cut_to_fit(hit: SearchHit, excerpt: Excerpt, budget: int) -> ContextItem | None:
    """The item with its excerpt's head, as much as the budget leaves after the item's lines."""
    empty = pack_item_text(_with_excerpt(hit, None, excerpt.model_copy(update={"text": ""})))
    room = budget * W.CHARS_PER_TOKEN - len(empty) - len(_ELLIPSIS)
    while room > 0:
        cut = excerpt.model_copy(
            update={"text": excerpt.text[:room].rstrip() + _ELLIPSIS, "truncated": True}
        )
        item = _with_excerpt(hit, None, cut)
        if tokens_of(pack_item_text(item)) <= budget:
            return item
        room -= W.CHARS_PER_TOKEN * 4  # cleaning or escaping made it longer: try shorter
    return None
