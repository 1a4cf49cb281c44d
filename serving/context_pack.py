"""Context packs: the excerpts of memories that matched a task, cut to a token budget.

A pack quotes what matched, not the head of each memory: the passages of the search's hits
that a channel ranked (the turns of a segment that matched, a decision or insight whole) and, as
the budget allows, the passages next to them (the neighbouring turns; the turn after a match
before the one before it, since an answer follows its question). Each memory is one item:
a title line, its provenance ids and its excerpts, counted as rendered (`serving/render.py`).

Excerpts are packed greedily by priority (`excerpt_priority`, weights in
`memory_pipeline/tuning/`): the fused ranks of the passage itself and of its memory, so the
turn that matched best comes first whichever memory holds it, a turn or message that says more
before a short reply ranked as high (`substance`), and a further excerpt of a memory already in
the pack is favoured (it costs no title or provenance lines). A turn is packed message by
message (`_pieces`): each of its messages is a candidate of its own, ranked up by its own
vector's nearness to the query (`message_bonus`), so the side of a turn that matched is quoted
(marked cut) without the side that says nothing of the task, and the turn is quoted whole once
both are in; a turn nobody answered is one message, ranked among them by its passage's vector.
An excerpt that does not fit is skipped (a smaller later one may still fit). No memory is
packed twice, and neither is what the pack already holds: an excerpt whose text is in it, or a
decision or insight whose turns a segment excerpt quotes (a segment excerpt packed later that
quotes a distilled item's text word for word takes its place and its room). A question about
the current state ("... now?") packs the latest statement of a fact before older ones that it
changed (`newer_first`: the same fact by the query's words both passages say, or by their
vectors, since an update rarely repeats the question's words); once packed, the items are put
current statement first (`current_first.order_items`). Each item is marked whole or not
as it is counted, so the pack never exceeds its budget. The pack lists the memories it quoted
in part and those it left out, and says how to read them whole (`memory_read`). Correction
episodes are never packed (evidence, not steering).
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from memory_pipeline import tuning
from memory_pipeline.embedding.passages import PIECE_NUMBER, PIECES_FROM
from memory_pipeline.embedding.spaces import serving_space
from memory_pipeline.relationships.flags import memory_flags
from serving import entity_pack
from serving.current_first import drop_orphaned_reversals, order_current_first, order_items
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
from serving.search import QueryEmbedder, record_retrievals
from serving.search.pipeline import search_in_transaction
from serving.search.provenance import collect_passages
from serving.text import tokens

_ELLIPSIS = " [...]"


def tokens_of(text: str) -> int:
    return -(-len(text) // tuning.CHARS_PER_TOKEN)  # ceiling


@dataclass(frozen=True)
class Piece:
    """One message of a passage (`Speaker: text`), as the passage renders it: `number` orders
    it within the passage, `rank` is its place among every candidate message by its own vector
    (1 = nearest the query)."""

    number: int
    text: str
    rank: int


@dataclass(frozen=True)
class _Candidate:
    priority: float
    hit_index: int
    passage: PassageMatch
    neighbour: bool
    piece: Piece | None = None  # one message of the passage; None: the passage whole


def context(
    conn: psycopg.Connection,
    query: str,
    token_budget: int,
    *,
    embedder: QueryEmbedder | None,
    filters: SearchFilters | None = None,
    project_context: str | None = None,
    record_surface: str | None = None,
    now: datetime | None = None,
) -> ContextPack:
    filters = (filters or SearchFilters()).model_copy()
    allowed = [t for t in (filters.types or []) if t not in tuning.STEERING_EXCLUDED_TYPES]
    if filters.types and not allowed:
        return ContextPack(
            query=query, token_budget=token_budget, tokens_used=0, truncated=False, items=[]
        )
    # One transaction for the whole pack (issue 35): the search runs in it, not in one of its
    # own, so a pack makes two round trips (BEGIN and COMMIT) fewer.
    with conn.transaction():
        return _context(
            conn, query, token_budget, embedder, filters, project_context, record_surface, now
        )


def _context(
    conn: psycopg.Connection,
    query: str,
    token_budget: int,
    embedder: QueryEmbedder | None,
    filters: SearchFilters,
    project_context: str | None,
    record_surface: str | None,
    now: datetime | None,
) -> ContextPack:
    # --- intent router (serving/router.py, serving/entity_pack.py) -------------------------
    # A query naming an entity: LOOKUP / AGGREGATE are answered from its mentions; RECALL
    # packs the memories mentioning it first, then the rest. A query naming none is untouched.
    route, routed = entity_pack.plan(conn, query, filters)
    if route.entities and route.intent != "recall":
        pack = entity_pack.mention_pack(conn, query, token_budget, route, routed)
        if record_surface and pack.items:
            record_retrievals(conn, query, [str(i.memory_id) for i in pack.items], record_surface)
        return pack
    hits, space = _hits(conn, query, embedder, routed, project_context, now)
    filtered = routed.entity_ids is not None
    if filtered and not filters.entities:
        # A name the query says (not the caller's `entity` filter): the memories mentioning it
        # come first, then the rest of what matched, since a memory can speak of the entity
        # without its mention being extracted (packing only the mentioning ones lost the
        # evidence of demo questions naming their project).
        first = {h.id for h in hits}
        rest, _ = _hits(conn, query, embedder, filters, project_context, now)
        filtered = bool(hits)
        hits += [h for h in rest if h.id not in first]
    # --- end of the router's part -----------------------------------------------------------
    # The neighbours' statement is sent first and answered with the flags' (one round trip).
    with conn.pipeline():
        neighbours_cursor = _neighbours_and_sizes_send(conn, hits)
        flags = memory_flags(  # relationships: <= 2 per item
            conn, [str(h.id) for h in hits], include_private=filters.include_private
        )
    neighbours, sizes = _neighbours_and_sizes_read(hits, neighbours_cursor.fetchall())
    hits = [h.model_copy(update={"flags": flags.get(str(h.id), [])}) for h in hits]
    # The current value first (serving/current_first.py): a reversed memory after its
    # matched successor, cut to a flagged line when the query asks for the current state
    # and the budget is not generous. (It keeps every hit and its passages' ids and ordinals,
    # so the neighbours read above are those of the hits it returns.)
    hits, reversed_by, cut = order_current_first(
        conn, hits, token_budget, filters.include_private, asks_current_state(query), query
    )
    for pid in cut:
        neighbours.pop(pid, None)
    quotable = [
        p
        for h in hits
        if h.type == "segment"
        for m in h.passages
        if str(m.id) not in cut
        for p in (m, *neighbours.get(str(m.id), []))
    ]
    pieces = _pieces(conn, quotable, query, embedder, space)
    vectors = (
        passage_vectors(conn, _update_candidates(hits), space) if asks_current_state(query) else {}
    )
    pack = pack_excerpts(query, token_budget, hits, neighbours, sizes, pieces, vectors)
    if reversed_by:
        pack = drop_orphaned_reversals(pack, reversed_by)
    # The current statement of each fact first (serving/current_first.py): order only.
    pack = order_items(
        conn, pack, query, filters.include_private, lambda ids: passage_vectors(conn, ids, space)
    )
    if route.changes_pack:  # the router's part: say how it shaped the pack
        pack.route = entity_pack.describe(route, filtered)
    if record_surface and pack.items:
        record_retrievals(conn, query, [str(i.memory_id) for i in pack.items], record_surface)
    return pack


_UNKNOWN: Any = object()  # the serving space not yet read: read it


def _hits(
    conn: psycopg.Connection,
    query: str,
    embedder: QueryEmbedder | None,
    filters: SearchFilters,
    project_context: str | None,
    now: datetime | None = None,
) -> tuple[list[SearchHit], str | None]:
    """The search's hits a pack quotes, and the serving space it searched (None without an
    embedder: then no message is ranked by its vector)."""
    response = search_in_transaction(
        conn,
        query,
        embedder=embedder,
        limit=tuning.MAX_LIMIT,
        filters=filters,
        project_context=project_context,
        temporal_context=False,  # a pack quotes matches; neighbours in time matched nothing
        record_surface=None,
        passages_per_hit=tuning.PACK_PASSAGES_PER_HIT,
        near_passages=True,
        now=now,
    )
    hits = [
        h for h in response.results if h.type not in tuning.STEERING_EXCLUDED_TYPES and h.passages
    ]
    return hits, response.space


def _neighbours_and_sizes(
    conn: psycopg.Connection, hits: list[SearchHit]
) -> tuple[dict[str, list[PassageMatch]], dict[str, int]]:
    """For each matched passage, the passages right after and before it in its memory; and how
    many passages each hit's memory has (to tell a whole memory from an excerpt)."""
    return _neighbours_and_sizes_read(hits, _neighbours_and_sizes_send(conn, hits).fetchall())


def _neighbours_and_sizes_send(conn: psycopg.Connection, hits: list[SearchHit]) -> psycopg.Cursor:
    """The statement of _neighbours_and_sizes, sent (in a pipeline: answered with the next
    statement's round trip). One statement: the neighbours' rows with their turns (as
    passage_details reads them), and a row per hit's memory with its passage count."""
    wanted = [(str(p.memory_id), p.ordinal + d) for h in hits for p in h.passages for d in (1, -1)]
    memory_ids = [str(h.id) for h in hits]
    return conn.execute(
        "WITH w AS (SELECT DISTINCT * FROM unnest(%s::uuid[], %s::int[]) AS w(memory_id, ordinal))"
        " SELECT p.id, p.memory_id, p.ordinal, p.text, t.source, t.native_id,"
        " a.ordinal, a.native_turn_id, a.native_message_ids, NULL::bigint, u.n"
        " FROM w JOIN memory_passages p ON p.memory_id = w.memory_id AND p.ordinal = w.ordinal"
        " LEFT JOIN LATERAL unnest(p.turn_ids) WITH ORDINALITY AS u(turn_id, n) ON true"
        " LEFT JOIN agent_turns a ON a.id = u.turn_id"
        " LEFT JOIN captured_tasks t ON t.id = a.task_id"
        " UNION ALL"
        " SELECT NULL, memory_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, count(*), NULL"
        " FROM memory_passages WHERE memory_id = ANY(%s::uuid[]) GROUP BY memory_id"
        " ORDER BY 1, 11",
        [[m for m, _ in wanted], [o for _, o in wanted], memory_ids],
    )


def _neighbours_and_sizes_read(
    hits: list[SearchHit], rows: list[Any]
) -> tuple[dict[str, list[PassageMatch]], dict[str, int]]:
    # A passage's rows together, its turns in their order (u.n), as passage_details reads them.
    sizes = {str(row[1]): row[9] for row in rows if row[0] is None}
    details = collect_passages(row[:9] for row in rows if row[0] is not None)
    by_position = {(str(m.memory_id), m.ordinal): m for m in details.values()}
    out: dict[str, list[PassageMatch]] = {}
    for h in hits:
        for p in h.passages:
            out[str(p.id)] = [
                by_position[key]
                for d in (1, -1)
                if (key := (str(p.memory_id), p.ordinal + d)) in by_position
            ]
    return out, sizes


def _pieces(
    conn: psycopg.Connection,
    passages: list[PassageMatch],
    query: str,
    embedder: QueryEmbedder | None,
    space: str | None = _UNKNOWN,
) -> dict[str, list[Piece]]:
    """The messages of each passage that quotes several, in order, ranked among all of them by
    their own vectors' cosine to the query in the serving space (passage_piece_embeddings,
    written by the embedding asset for the passages that quote their turns whole; none before
    it has, and then a pack quotes whole passages). A passage of one message (the last prompt
    of an imported conversation, nobody answered it) is that message: ranked among them by the
    passage's own vector, so it competes as they do. Messages that do not render their
    passage's text exactly (a passage cut again since) are not used. `space`: the serving
    space's name when the caller read it (the search did)."""
    if space is _UNKNOWN:
        found = serving_space(conn)
        space = found[0] if found else None
    if not passages or space is None or embedder is None:
        return {}
    rows = conn.execute(
        f"SELECT p.id::text, {PIECE_NUMBER}, s.text,"
        " coalesce(e.embedding, w.embedding) <=> %s::vector"
        f" FROM {PIECES_FROM} LEFT JOIN passage_piece_embeddings e ON e.passage_id = p.id"
        f" AND e.piece = {PIECE_NUMBER} AND e.space = %s"
        " LEFT JOIN passage_embeddings w ON s.text = p.text AND w.passage_id = p.id"
        " AND w.space = %s"
        " WHERE p.id = ANY(%s::uuid[]) AND s.text IS NOT NULL"
        " AND coalesce(e.embedding, w.embedding) IS NOT NULL ORDER BY 1, 2",
        [
            embedder.embed(space, query),
            space,
            space,
            list(dict.fromkeys(str(p.id) for p in passages)),
        ],
    ).fetchall()
    order = sorted(range(len(rows)), key=lambda i: (rows[i][3], rows[i][0], rows[i][1]))
    rank = {(rows[i][0], rows[i][1]): r for r, i in enumerate(order, start=1)}
    by_passage: dict[str, list[Piece]] = {}
    for pid, n, text, _ in rows:
        by_passage.setdefault(pid, []).append(Piece(n, text, rank[(pid, n)]))
    texts = {str(p.id): p.text for p in passages}
    return {pid: ps for pid, ps in by_passage.items() if _joined(ps) == texts[pid]}


def _joined(pieces: list[Piece]) -> str:
    """The text of the pieces as their passage renders them: a turn's messages on their own
    lines, turns apart by a blank line (passages.turn_text, passages.cut)."""
    turns: dict[int, list[str]] = {}
    for p in pieces:
        turns.setdefault(p.number // 2, []).append(p.text)
    return "\n\n".join("\n".join(texts) for _, texts in sorted(turns.items()))


def pack_excerpts(
    query: str,
    token_budget: int,
    hits: list[SearchHit],
    neighbours: dict[str, list[PassageMatch]],
    passage_counts: dict[str, int],
    pieces: dict[str, list[Piece]] | None = None,
    vectors: dict[str, np.ndarray] | None = None,
) -> ContextPack:
    """The pack for ranked hits whose `passages` are their matched passages, best first.
    `pieces` holds, for a passage of several messages, those messages: each is a candidate of
    its own (its passage's priority plus `message_bonus`), quoted alone (marked cut) until all
    of them are."""
    pieces = pieces or {}
    matched = [
        (i, passage, excerpt_priority(passage, i, hit.type))
        for i, hit in enumerate(hits)
        for passage in hit.passages
    ]
    if asks_current_state(query):
        matched = newer_first(query, hits, matched, vectors)
    candidates: list[_Candidate] = []

    def add(priority: float, i: int, passage: PassageMatch, neighbour: bool) -> None:
        kind = hits[i].type
        for piece in pieces.get(str(passage.id)) or [None]:
            text = piece.text if piece else passage.text
            priority_of = priority * substance(text, kind) + message_bonus(piece)
            candidates.append(_Candidate(priority_of, i, passage, neighbour, piece))

    for i, passage, base in matched:
        add(base, i, passage, False)
        for n in neighbours.get(str(passage.id), []):
            share = (
                tuning.PACK_NEIGHBOUR_SHARE
                if n.ordinal > passage.ordinal
                else tuning.PACK_PREVIOUS_SHARE
            )
            add(base * share, i, n, True)

    items: dict[int, ContextItem] = {}
    packed_ids: set[str] = set()  # passages quoted whole (or found already quoted)
    quoted: dict[str, set[int]] = {}  # passage id -> the numbers of its messages quoted so far
    packed_texts: list[str] = []
    represented: set[int] = set()  # hits whose matched text another memory's excerpt holds
    quoted_turns: set[tuple[str | None, int]] = set()  # (task, turn) quoted by segment excerpts
    used = 0
    skipped = False

    sizes: dict[int, int] = {}  # tokens of each packed item as rendered

    def cost_of(trial: ContextItem, i: int) -> int:
        return tokens_of(pack_item_text(trial)) - sizes.get(i, 0)

    for cand in _best_first(candidates, items):
        pid = str(cand.passage.id)
        if pid in packed_ids or (cand.piece and cand.piece.number in quoted.get(pid, ())):
            continue
        hit = hits[cand.hit_index]
        key = _normal(cand.piece.text if cand.piece else cand.passage.text)
        turns = {(cand.passage.native_task_id, t.ordinal) for t in cand.passage.turns}
        if (key and any(key in seen for seen in packed_texts)) or (
            hit.type != "segment" and turns and turns <= quoted_turns
        ):
            # Already in the pack: its text, or (a distilled memory) the turns it rests on.
            if cand.piece:
                quoted.setdefault(pid, set()).add(cand.piece.number)
            else:
                packed_ids.add(pid)
            represented.add(cand.hit_index)
            continue
        item = items.get(cand.hit_index)
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
        freed = sum(sizes[j] for j in covered)
        if items and used + _at_least(cand) - freed > token_budget:
            skipped = True  # cannot fit whatever it renders to: not worth rendering
            continue
        # Built only for a candidate that may fit: once a pack is nearly full, most of the
        # remaining candidates (hundreds in a long conversation) stop at the check above.
        excerpt, whole = _excerpt_with(cand, item, pieces.get(pid, []), quoted.get(pid, set()))
        trial = _marked(_with_excerpt(hit, item, excerpt), passage_counts)
        cost = cost_of(trial, cand.hit_index) - freed
        if used + cost > token_budget:
            skipped = True
            if not items and not cand.neighbour:
                # Nothing packed yet and the best excerpt alone is too long: quote its head.
                trial = _cut_to_fit(hit, excerpt, token_budget)
                if trial is not None:
                    items[cand.hit_index] = trial
                    used = sizes[cand.hit_index] = tokens_of(pack_item_text(trial))
                    packed_ids.add(pid)
            continue
        used += cost
        for j in covered:
            del items[j], sizes[j]
            represented.add(j)
        items[cand.hit_index] = trial
        sizes[cand.hit_index] = tokens_of(pack_item_text(trial))
        packed_texts.append(key)
        if whole:
            packed_ids.add(pid)
            if hit.type == "segment":
                quoted_turns |= turns
        else:
            quoted.setdefault(pid, set()).add(cand.piece.number)  # type: ignore[union-attr]

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
        left_out=left_out[: tuning.PACK_MAX_LEFT_OUT_LISTED],
        left_out_count=len(left_out),
    )


def _at_least(cand: _Candidate) -> int:
    """Tokens a candidate adds to the pack at the least: its text (a message, or the passage),
    less a tenth for what cleaning may drop (render.clean: control and format characters)."""
    text = cand.piece.text if cand.piece else cand.passage.text
    return (len(text) - len(text) // 10) // tuning.CHARS_PER_TOKEN - 1


def message_bonus(piece: Piece | None) -> float:
    """What a message's own rank adds to its passage's priority: PACK_MESSAGE_WEIGHT /
    (PACK_RRF_K + its rank among the candidate messages by vector); 0 for a whole passage."""
    if piece is None:
        return 0.0
    return tuning.PACK_MESSAGE_WEIGHT / (tuning.PACK_RRF_K + piece.rank)


def _excerpt_with(
    cand: _Candidate, item: ContextItem | None, pieces: list[Piece], quoted: set[int]
) -> tuple[Excerpt, bool]:
    """The excerpt of the candidate's passage once the candidate is quoted: the passage whole,
    or its messages quoted so far plus this one, in order (marked cut until all are). Returns
    it and whether it is the whole passage. An excerpt that quotes a match stays a match when
    a message of the same passage joins it as a neighbour."""
    passage = cand.passage
    earlier = next((e for e in (item.excerpts if item else []) if e.passage_id == passage.id), None)
    neighbour = cand.neighbour and (earlier is None or earlier.neighbour)
    if cand.piece is None:
        return _excerpt(passage, neighbour), True
    chosen = quoted | {cand.piece.number}
    if chosen >= {p.number for p in pieces}:
        return _excerpt(passage, neighbour), True
    text = _joined([p for p in pieces if p.number in chosen])
    return _excerpt(passage, neighbour, text), False


def _best_first(
    candidates: list[_Candidate], items: dict[int, ContextItem]
) -> Iterator[_Candidate]:
    """Candidates by priority, those of a memory already in the pack (`items`, which the
    caller fills as it goes) weighted by PACK_OPEN_ITEM_BONUS: another excerpt of a packed
    memory costs no title or provenance lines."""

    def key(c: _Candidate) -> tuple[float, int, bool, int, int]:
        return (-c.priority, c.hit_index, c.neighbour, c.passage.ordinal, _number(c))

    closed = [(key(c), n, c) for n, c in enumerate(candidates)]
    heapq.heapify(closed)
    opened: list[tuple[tuple[float, int, bool, int, int], int, _Candidate]] = []
    moved: set[int] = set()
    while closed or opened:
        # Move the candidates of memories packed since the last step to the boosted queue.
        if new := items.keys() - moved:
            moved |= new
            for _, n, c in (e for e in closed if e[2].hit_index in new):
                heapq.heappush(
                    opened, ((-c.priority * tuning.PACK_OPEN_ITEM_BONUS, *key(c)[1:]), n, c)
                )
            closed = [e for e in closed if e[2].hit_index not in new]
            heapq.heapify(closed)
        if opened and (not closed or opened[0][0] <= closed[0][0]):
            yield heapq.heappop(opened)[2]
        else:
            yield heapq.heappop(closed)[2]


# Memories whose passages are raw text (a conversation's turns, an inbox document's sections):
# ranked by their own substance, not as a distilled memory's one sentence.
RAW_KINDS = ("segment", "source")


def _number(c: _Candidate) -> int:
    return c.piece.number if c.piece else -1


def excerpt_priority(passage: PassageMatch, hit_index: int, kind: str = "segment") -> float:
    """Reciprocal Rank Fusion of the passage's own ranks (BM25 and vectors, among passages)
    and its memory's rank in the search (which carries the rerank), the latter weighted; a
    distilled memory's passage (a sentence drawn from a turn) at PACK_DISTILLED_SHARE of it."""
    k = tuning.PACK_RRF_K
    score = tuning.PACK_HIT_WEIGHT / (k + hit_index + 1)
    for rank in (passage.bm25_rank, passage.vector_rank):
        if rank is not None:
            score += 1 / (k + rank)
    return score if kind in RAW_KINDS else score * tuning.PACK_DISTILLED_SHARE


def substance(text: str, kind: str = "segment") -> float:
    """How much a segment's turn or message says, as a factor of its priority (1 for
    PACK_SUBSTANCE_TYPICAL_WORDS distinct content words, more for more); 1 for a distilled
    memory (short by design: a decision says what it must)."""
    if kind not in RAW_KINDS:
        return 1.0
    words = len(tokens(text)) + tuning.PACK_SUBSTANCE_OFFSET
    return (words / (tuning.PACK_SUBSTANCE_TYPICAL_WORDS + tuning.PACK_SUBSTANCE_OFFSET)) ** (
        tuning.PACK_SUBSTANCE_EXPONENT
    )


_CURRENT_STATE = re.compile(
    r"\b(?:" + "|".join(re.escape(c) for c in tuning.PACK_CURRENT_STATE_CUES) + r")\b", re.I
)


_CHANGE_TOKENS = frozenset(tokens(" ".join(tuning.PACK_CHANGE_CUES)))


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
    return [pid for _, pid in ranked[: tuning.PACK_UPDATE_CANDIDATES]]


def passage_vectors(
    conn: psycopg.Connection, passage_ids: list[str], space: str | None = _UNKNOWN
) -> dict[str, np.ndarray]:
    """The passages' unit vectors in the serving space (none before a space is complete);
    `space`: its name when the caller read it."""
    if space is _UNKNOWN or space is None:
        found = serving_space(conn)
        space = found[0] if found else None
    if space is None or not passage_ids:
        return {}
    rows = conn.execute(  # pgvector Vectors (db.connection registers the type)
        "SELECT passage_id::text, embedding FROM passage_embeddings"
        " WHERE space = %s AND passage_id = ANY(%s::uuid[])",
        [space, passage_ids],
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
    top = set(order[: tuning.PACK_UPDATE_CANDIDATES])
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
            if len(common) >= tuning.PACK_SAME_FACT_SHARE * len(query_words) or _close(
                vectors, matched[newer][1], matched[older][1]
            ):
                priority[newer] = max(priority[newer], priority[older] * tuning.PACK_NEWER_STEP)
    return [(i, p, priority.get(n, prio)) for n, (i, p, prio) in enumerate(matched)]


def _close(vectors: dict[str, np.ndarray] | None, a: PassageMatch, b: PassageMatch) -> bool:
    """Whether two passages say nearly the same thing by their vectors (PACK_SAME_FACT_COSINE)."""
    va, vb = (vectors or {}).get(str(a.id)), (vectors or {}).get(str(b.id))
    return va is not None and vb is not None and float(va @ vb) >= tuning.PACK_SAME_FACT_COSINE


@functools.lru_cache(maxsize=4096)
def _normal(text: str) -> str:
    """The text with its whitespace collapsed, casefolded. Cached: packing compares each
    packed excerpt's text again for every later candidate."""
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
            cite=hit.cite,
        )
    # The passage's excerpt takes the place of the messages of it quoted so far.
    kept = [e for e in item.excerpts if e.passage_id != excerpt.passage_id]
    return item.model_copy(update={"excerpts": [*kept, excerpt]})


def _cut_to_fit(hit: SearchHit, excerpt: Excerpt, budget: int) -> ContextItem | None:
    """The item with its excerpt's head, as much as the budget leaves after the item's lines."""
    empty = pack_item_text(_with_excerpt(hit, None, excerpt.model_copy(update={"text": ""})))
    room = budget * tuning.CHARS_PER_TOKEN - len(empty) - len(_ELLIPSIS)
    while room > 0:
        cut = excerpt.model_copy(
            update={"text": excerpt.text[:room].rstrip() + _ELLIPSIS, "truncated": True}
        )
        item = _with_excerpt(hit, None, cut)
        if tokens_of(pack_item_text(item)) <= budget:
            return item
        room -= tuning.CHARS_PER_TOKEN * 4  # cleaning or escaping made it longer: try shorter
    return None
