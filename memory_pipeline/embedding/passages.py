"""Cutting memories into passages: the units search ranks and context packs quote.

Why passages: a segment memory holds several turns (thousands of characters), but MiniLM reads
only its first 256 tokens, so most of a segment was invisible to the vector channel, and a
context pack could only quote a segment's head. A passage fits the active embedder's window, so
every part of a memory has its own vector and its own full-text entry, and a pack can quote the
turn that matched.

- A segment (a memory with its turns as provenance) is cut at turn boundaries: each passage holds
  up to PASSAGE_MAX_TURNS whole turns within the token limit; a turn too long for the limit is cut
  at sentence boundaries (a sentence too long at word boundaries, a word at characters).
- Any other memory (decision, insight, correction) is one passage headed by its title, cut like a
  long turn only if it does not fit.
- The limit is min(PASSAGE_MAX_TOKENS, the embedder's window), counted by the embedder's own
  tokenizer, heading and special tokens included. Pieces are exact substrings of the source.

Passages are rewritten only when what they were cut from changed (`source_sha256`), in place by
ordinal, so unchanged passages keep their ids and vectors. After a space switch, passages cut for
another space are re-measured and cut again only if one does not fit the new model's window. Work is
claimed with row locks (FOR UPDATE SKIP LOCKED) and re-checked under the lock, so two runs over
the same days never cut the same memory twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any
from uuid import UUID

import psycopg

from memory_pipeline import tuning
from memory_pipeline.embedding.embedder import Embedder

Counter = Callable[[Sequence[str]], list[int]]

# Sentence ends: ., !, ? or … followed by space, or a line break. Spans between them are units.
_SENTENCE = re.compile(r".+?(?:[.!?…]+(?=\s)|\n|$)", re.S)
_WORD = re.compile(r"\S+\s*")


@dataclass(frozen=True)
class Unit:
    """A piece a passage is built from: one turn of a segment, or a whole short memory."""

    text: str
    turn_ids: tuple[UUID, ...] = ()


@dataclass(frozen=True)
class PassageDraft:
    ordinal: int
    heading: str
    text: str
    turn_ids: tuple[UUID, ...]
    whole: bool = False  # whole units (turns), not a cut of one

    @property
    def embed_text(self) -> str:
        return embed_text(self.heading, self.text)


def embed_text(heading: str, text: str) -> str:
    """What is embedded for a passage (the SQL in store.py computes the same string)."""
    return f"{heading}\n{text}" if heading else text


# The same string in SQL over memory_passages p, for hashing the embedded text.
EMBED_TEXT_SQL = "CASE WHEN p.heading = '' THEN p.text ELSE p.heading || E'\\n' || p.text END"


def turn_messages(
    prompt_speaker: str | None, prompt: str, outcome_speaker: str | None, outcome: str
) -> list[str]:
    """A turn's messages as its passage renders them (`Speaker: text`; PIECES_FROM in SQL);
    a turn without an answer (an imported conversation's last, unanswered message) has one."""
    out = [f"{prompt_speaker or 'User'}: {prompt}"]
    if outcome:
        out.append(f"{outcome_speaker or 'Agent'}: {outcome}")
    return out


def turn_text(
    prompt_speaker: str | None, prompt: str, outcome_speaker: str | None, outcome: str
) -> str:
    """One turn as a segment memory renders it (semantic/store.py render_turns): its messages
    on their own lines."""
    return "\n".join(turn_messages(prompt_speaker, prompt, outcome_speaker, outcome))


def message_spans(messages: Sequence[str]) -> list[tuple[int, int]]:
    """Where each message lies in their turn's text (`turn_text`): [start, end) characters."""
    spans, start = [], 0
    for message in messages:
        spans.append((start, start + len(message)))
        start += len(message) + 1
    return spans


# The messages of a passage that quotes its turns whole ("pieces", memory_passages.whole_turns,
# set when it is cut), as `turn_text` renders them: over PIECES_FROM (memory_passages p, its turns
# a, their sides s), a piece is numbered PIECE_NUMBER (2 * the turn's place in the passage + side)
# and holds s.text, for the rows PIECES_WHERE keeps. A passage of one message (a turn nobody
# answered: its own vector is the message's), or of part of a turn (a long turn cut at sentence
# boundaries), has none. The embedding step gives each piece its own vector
# (passage_piece_embeddings): its own tokens pooled in its turn's forward pass (PIECE_TURN_TEXT,
# the span PIECE_START to PIECE_END: `message_spans`), so a reply is read as the answer to its
# question; a context pack ranks and quotes them one by one (serving/context_pack.py).
PIECES_FROM = """memory_passages p
CROSS JOIN LATERAL unnest(p.turn_ids) WITH ORDINALITY AS u(turn_id, n)
JOIN agent_turns a ON a.id = u.turn_id
CROSS JOIN LATERAL (SELECT
    coalesce(a.prompt_speaker, 'User') || ': ' || a.prompt AS asked,
    CASE WHEN a.outcome <> '' THEN coalesce(a.outcome_speaker, 'Agent') || ': ' || a.outcome
    END AS answered
) AS t
CROSS JOIN LATERAL (VALUES (0, t.asked, 0), (1, t.answered, length(t.asked) + 1))
    AS s(side, text, start)"""
PIECE_NUMBER = "2 * (u.n - 1) + s.side"
PIECES_WHERE = "p.whole_turns AND s.text IS NOT NULL AND s.text <> p.text"
PIECE_TURN_TEXT = "t.asked || coalesce(E'\\n' || t.answered, '')"
PIECE_START = "s.start"
PIECE_END = "s.start + length(s.text)"


def token_limit(embedder: Embedder) -> int:
    return min(tuning.PASSAGE_MAX_TOKENS, embedder.window_tokens)


def cut(
    units: Sequence[Unit],
    heading: str,
    limit: int,
    count: Counter,
    max_units: int = tuning.PASSAGE_MAX_TURNS,
) -> list[PassageDraft]:
    """Passages of at most `max_units` whole units each whose embedded text fits `limit` tokens;
    a unit that does not fit alone is cut at sentence, then word, then character boundaries."""
    base = count([""])[0]  # tokens every text carries ([CLS] and [SEP] for MiniLM)
    if heading and count([heading + "\n"])[0] - base > limit // 2:
        heading = ""  # a heading that would crowd out the text is left out of the passages
    budget = limit - (count([heading + "\n"])[0] if heading else base)
    costs = [c - base for c in count([u.text for u in units])] if units else []
    pieces: list[tuple[str, tuple[UUID, ...], bool]] = []  # (text, turns, whole units)
    group: list[Unit] = []
    used = 0

    def flush() -> None:
        nonlocal group, used
        if group:
            ids = tuple(dict.fromkeys(i for u in group for i in u.turn_ids))
            pieces.append(("\n\n".join(u.text for u in group), ids, True))
        group, used = [], 0

    for unit, cost in zip(units, costs, strict=True):
        if not unit.text.strip():
            continue
        if cost > budget:
            flush()
            pieces.extend(
                (p, unit.turn_ids, False) for p in split_long(unit.text, budget, count, base)
            )
            continue
        if group and (len(group) >= max_units or used + cost + 1 > budget):
            flush()
        group.append(unit)
        used += cost + (1 if len(group) > 1 else 0)
    flush()
    if not pieces:  # nothing but whitespace: one empty passage keeps the memory findable by title
        pieces.append(("", tuple(dict.fromkeys(i for u in units for i in u.turn_ids)), False))
    # Token counts are nearly additive; check the joined passages and split any that overran.
    out: list[tuple[str, tuple[UUID, ...], bool]] = []
    for (text, ids, whole), n in zip(
        pieces, count([embed_text(heading, t) for t, *_ in pieces]) if pieces else [], strict=True
    ):
        if n <= limit:
            out.append((text, ids, whole))
        else:
            out.extend((p, ids, False) for p in split_long(text, budget, count, base))
    return [PassageDraft(i, heading, *piece) for i, piece in enumerate(out)]


def split_long(text: str, budget: int, count: Counter, base: int) -> list[str]:
    """Exact substrings of `text`, each within `budget` tokens (special tokens not counted):
    whole sentences where they fit, else whole words, else characters."""
    spans = [m.span() for m in _SENTENCE.finditer(text) if m.group().strip()]
    return _pack_spans(text, spans, budget, count, base, level=0)


def _pack_spans(
    text: str,
    spans: list[tuple[int, int]],
    budget: int,
    count: Counter,
    base: int,
    level: int,
) -> list[str]:
    costs = [c - base for c in count([text[a:b] for a, b in spans])] if spans else []
    out: list[str] = []
    start: int | None = None
    end = 0
    used = 0
    for (a, b), cost in zip(spans, costs, strict=True):
        if cost > budget:
            if start is not None:
                out.append(text[start:end].strip())
                start, used = None, 0
            out.extend(_finer(text, a, b, budget, count, base, level))
            continue
        if start is not None and used + cost > budget:
            out.append(text[start:end].strip())
            start, used = None, 0
        if start is None:
            start = a
        end = b
        used += cost
    if start is not None:
        out.append(text[start:end].strip())
    # Verify (counts of joined spans can exceed their sum by a token or two) and cut again.
    checked: list[str] = []
    for piece, n in zip(out, count(out) if out else [], strict=True):
        if n - base <= budget or len(piece) <= 1:
            checked.append(piece)
        else:
            half = _cut_point(piece)
            checked.extend(
                _pack_spans(piece, [(0, half), (half, len(piece))], budget, count, base, 2)
            )
    return [p for p in checked if p]


def _finer(
    text: str, a: int, b: int, budget: int, count: Counter, base: int, level: int
) -> list[str]:
    """A span that does not fit: its words, or (a single long word) fixed character chunks."""
    if level == 0:
        words = [(a + m.start(), a + m.end()) for m in _WORD.finditer(text[a:b])]
        if len(words) > 1:
            return _pack_spans(text, words, budget, count, base, level=1)
    # One word longer than the budget: characters, in chunks that fit.
    out = []
    pos = a
    while pos < b:
        lo, hi = pos + 1, b
        while lo < hi:  # the longest chunk from pos that fits
            mid = (lo + hi + 1) // 2
            if count([text[pos:mid]])[0] - base <= budget:
                lo = mid
            else:
                hi = mid - 1
        out.append(text[pos:lo])
        pos = lo
    return out


def _cut_point(piece: str) -> int:
    """Where to halve a piece that overran: the whitespace nearest its middle."""
    mid = len(piece) // 2
    left = piece.rfind(" ", 0, mid)
    return left if left > 0 else mid


# --- storage ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Source:
    """What a memory's passages are cut from."""

    memory_id: UUID
    type: str
    title: str
    content: str
    questions: list[str]
    turn_ids: list[UUID]

    @property
    def sha256(self) -> str:
        key = [
            tuning.PASSAGE_SPLITTER_VERSION,
            tuning.PASSAGE_MAX_TOKENS,
            tuning.PASSAGE_MAX_TURNS,
            self.type,
            self.title,
            self.content,
            self.questions,
            [str(t) for t in self.turn_ids],
        ]
        return hashlib.sha256(json.dumps(key).encode()).hexdigest()

    @property
    def is_segment(self) -> bool:
        return self.type == "segment" and bool(self.turn_ids)


@dataclass
class PassageReport:
    memories_cut: int = 0  # memories whose passages were (re)written
    rechecked: int = 0  # memories whose passages were re-measured for a new space and kept


_SOURCES_SQL = """
SELECT m.id, m.type, m.title, m.content, m.metadata -> 'questions',
       coalesce((SELECT array_agg(p.turn_id ORDER BY a.ordinal, p.turn_id)
                 FROM memory_provenance p JOIN agent_turns a ON a.id = p.turn_id
                 WHERE p.memory_id = m.id), ARRAY[]::uuid[]),
       ps.shas, ps.spaces
FROM memories m
LEFT JOIN LATERAL (
    SELECT array_agg(DISTINCT source_sha256) AS shas, array_agg(DISTINCT cut_for) AS spaces
    FROM memory_passages WHERE memory_id = m.id
) ps ON true
WHERE {where}
ORDER BY m.id
"""


def _questions(value: Any) -> list[str]:
    return [q for q in value if isinstance(q, str)] if isinstance(value, list) else []


def _sources(
    conn: psycopg.Connection, where: str, params: list[Any]
) -> list[tuple[_Source, list[str] | None, list[str] | None]]:
    rows = conn.execute(_SOURCES_SQL.format(where=where), params).fetchall()
    return [
        (_Source(r[0], r[1], r[2], r[3], _questions(r[4]), list(r[5])), r[6], r[7]) for r in rows
    ]


def sync_passages(
    conn: psycopg.Connection, embedder: Embedder, start: date, end: date
) -> PassageReport:
    """Make the passages of the window's memories current for the active embedder."""
    report = PassageReport()
    sources = _sources(conn, "m.partition_day >= %s AND m.partition_day < %s", [start, end])
    stale: list[UUID] = []
    recheck: list[UUID] = []
    for src, shas, spaces in sources:
        if shas != [src.sha256]:
            stale.append(src.memory_id)
        elif spaces != [embedder.space]:
            recheck.append(src.memory_id)
    if recheck:
        report.rechecked, too_long = _recheck(conn, embedder, recheck)
        stale.extend(too_long)
    for i in range(0, len(stale), tuning.EMBED_BATCH_SIZE):
        report.memories_cut += _cut_claimed(conn, embedder, stale[i : i + tuning.EMBED_BATCH_SIZE])
    return report


def _recheck(
    conn: psycopg.Connection, embedder: Embedder, memory_ids: list[UUID]
) -> tuple[int, list[UUID]]:
    """Passages cut for another space: keep those the new model reads whole (its window, not
    the tighter cutting limit, is what matters), return the memories whose passages do not."""
    rows = conn.execute(
        f"SELECT p.memory_id, {EMBED_TEXT_SQL} FROM memory_passages p"
        " WHERE p.memory_id = ANY(%s) ORDER BY p.memory_id, p.ordinal",
        [memory_ids],
    ).fetchall()
    limit = embedder.window_tokens
    too_long = {
        mid
        for (mid, _), n in zip(rows, embedder.count_tokens([r[1] for r in rows]), strict=True)
        if n > limit
    }
    fit = [m for m in memory_ids if m not in too_long]
    if fit:
        conn.execute(
            "UPDATE memory_passages SET cut_for = %s WHERE memory_id = ANY(%s)",
            [embedder.space, fit],
        )
    return len(fit), sorted(too_long)


def _cut_claimed(conn: psycopg.Connection, embedder: Embedder, memory_ids: list[UUID]) -> int:
    """Cut the memories this run can lock (another run holds the rest) and that are still
    stale once locked; returns how many were written."""
    written = 0
    with conn.transaction():
        claimed = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM memories WHERE id = ANY(%s) ORDER BY id FOR UPDATE SKIP LOCKED",
                [memory_ids],
            ).fetchall()
        ]
        if not claimed:
            return 0
        limit = token_limit(embedder)
        for src, shas, spaces in _sources(conn, "m.id = ANY(%s)", [claimed]):
            if shas == [src.sha256] and spaces == [embedder.space]:
                continue  # a concurrent run cut it before we locked it
            drafts = cut(
                _units(conn, src),
                src.title if not src.is_segment else "",
                limit,
                embedder.count_tokens,
            )
            _write(conn, src, drafts, embedder.space)
            written += 1
    return written


def _units(conn: psycopg.Connection, src: _Source) -> list[Unit]:
    if not src.is_segment:
        return [Unit(src.content, tuple(src.turn_ids))]
    rows = conn.execute(
        "SELECT id, prompt_speaker, prompt, outcome_speaker, outcome FROM agent_turns"
        " WHERE id = ANY(%s) ORDER BY task_id, ordinal",
        [src.turn_ids],
    ).fetchall()
    return [Unit(turn_text(r[1], r[2], r[3], r[4]), (r[0],)) for r in rows]


def _write(conn: psycopg.Connection, src: _Source, drafts: list[PassageDraft], space: str) -> None:
    """Upsert by ordinal (an unchanged passage keeps its id and vectors), drop the rest."""
    questions = " ".join(src.questions) if not src.is_segment else ""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memory_passages (memory_id, ordinal, heading, text, turn_ids,"
            " whole_turns, search_vector, source_sha256, cut_for) VALUES (%s, %s, %s, %s, %s,"
            " %s, setweight(to_tsvector('english', %s), 'A')"
            " || setweight(to_tsvector('english', %s), 'A')"
            " || setweight(to_tsvector('english', %s), 'B'), %s, %s)"
            " ON CONFLICT (memory_id, ordinal) DO UPDATE SET heading = EXCLUDED.heading,"
            " text = EXCLUDED.text, turn_ids = EXCLUDED.turn_ids,"
            " whole_turns = EXCLUDED.whole_turns,"
            " search_vector = EXCLUDED.search_vector, source_sha256 = EXCLUDED.source_sha256,"
            " cut_for = EXCLUDED.cut_for, updated_at = now()",
            [
                (
                    src.memory_id,
                    d.ordinal,
                    d.heading,
                    d.text,
                    list(d.turn_ids),
                    d.whole and src.is_segment,  # a segment's units are its turns
                    d.heading,
                    questions,
                    d.text,
                    src.sha256,
                    space,
                )
                for d in drafts
            ],
        )
    conn.execute(
        "DELETE FROM memory_passages WHERE memory_id = %s AND ordinal >= %s",
        [src.memory_id, len(drafts)],
    )
