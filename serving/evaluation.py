"""Retrieval evaluation against a gold set of queries and the turns that must be found.

Two measures, each over the production code with the weights of
`memory_pipeline/tuning/retrieval.py`:

- **Ranking**: Recall@5, Recall@10 and MRR for BM25 only, vectors only and the full pipeline. A
  result finds a gold item when the item's turn is in the result's provenance (the check
  survives any change to segmentation or distillation). Temporal neighbours are left out.
- **Evidence in the context pack**: the share of gold evidence whose text is in the pack built
  within 1,000 and 2,000 tokens, beside the same figure for a raw-message baseline computed in
  the same run over the same captured turns: every raw message a document, Okapi BM25 (k1 1.2,
  b 0.75, PostgreSQL's English lexemes) and the serving space's vectors, RRF (k 60) of the top
  100 of each, packed in rank order (a message that does not fit is skipped, as the pack skips
  an excerpt), tokens counted as characters / 4 as the project counts them. Each raw message is
  indexed and packed with its speaker ("Walter: ..."; "User" / "Agent" when a turn names none),
  as a person would index a chat. A message is found by the word rule when at least 70% of its
  content words (`serving.text.tokens`) are in the packed text, and verbatim when its whole text
  is (whitespace and case aside). A gold item naming a message is that message; one naming a turn
  is the turn's whole text (all its messages together), so quoting the question without its
  answer does not count.
- **Current value first** (knowledge-update questions): the current statement (the question's
  evidence less the `older` statements it supersedes) is in the pack before any older one: the
  first pack item (a raw message, for the baseline) that holds it by the word rule on its own
  text comes before every item holding an older statement, or it is the same item and the
  shortest prefix of it holding the current statement is the shorter. Words scattered over
  several items place no statement, and a current statement not in the pack at all counts as
  not first.

Messages are recovered from captured turns: a turn's prompt and outcome hold their messages
joined by blank lines, with the native message ids in order; when the pieces do not match the
ids one to one, the prompt and the outcome are one message each. No retrieval events are
recorded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psycopg
from pydantic import BaseModel, model_validator

from memory_pipeline import tuning
from memory_pipeline.embedding.spaces import serving_space
from serving.context_pack import context, tokens_of
from serving.models import SearchHit
from serving.render import clean, pack_item_text
from serving.rerank import rrf_scores
from serving.search import QueryEmbedder, search
from serving.text import tokens

CHANNELS: dict[str, tuple[str, ...]] = {
    "bm25": ("bm25",),
    "vector": ("vector",),
    "full": ("bm25", "vector"),
}
K_VALUES = (5, 10)
# Pack budgets (tokens) at which evidence recall is measured, and the baseline's parameters
# (fixed by the definition of the baseline, not tuning: change them and it is another baseline).
EVIDENCE_BUDGETS = (1000, 2000)
EVIDENCE_MIN_SHARE = 0.7  # share of a message's content words that must be in the packed text
BASELINE_BM25_K1 = 1.2
BASELINE_BM25_B = 0.75
BASELINE_RRF_K = 60
BASELINE_TOP = 100


class GoldTurn(BaseModel):
    source: str
    native_task_id: str
    turn_ordinal: int | None = None
    native_message_id: str | None = None

    @model_validator(mode="after")
    def _one_locator(self) -> GoldTurn:
        if self.turn_ordinal is None and self.native_message_id is None:
            raise ValueError("a gold turn needs turn_ordinal or native_message_id")
        return self


class GoldQuery(BaseModel):
    id: str
    query: str
    relevant: list[GoldTurn]
    kind: str | None = None
    # A knowledge update's superseded statements (the current value is the rest of `relevant`;
    # they may or may not be in `relevant` too).
    older: list[GoldTurn] = []

    @property
    def current(self) -> list[GoldTurn]:
        return [item for item in self.relevant if item not in self.older]


class ChannelScores(BaseModel):
    recall_at_5: float
    recall_at_10: float
    mrr: float


class QueryOutcome(BaseModel):
    id: str
    query: str
    first_hit_rank: dict[str, int | None]  # channel -> rank of the first relevant result


KNOWLEDGE_UPDATE = "knowledge_update"
SIDES = ("pack", "baseline", "pack_verbatim", "baseline_verbatim")


class QueryEvidence(BaseModel):
    """One question's share of its evidence found, by token budget: by the word rule and
    verbatim, in the context pack and in the raw-message baseline; for a knowledge update,
    whether the current statement came before every older one."""

    id: str
    kind: str | None
    pack: dict[int, float]
    baseline: dict[int, float]
    pack_verbatim: dict[int, float] = {}
    baseline_verbatim: dict[int, float] = {}
    current_first: dict[int, bool] | None = None  # pack, knowledge updates only
    current_first_baseline: dict[int, bool] | None = None
    older: int = 0  # older statements named by the gold question


class KindEvidence(BaseModel):
    """The mean found share of one kind of question, per side and budget."""

    n: int
    pack: dict[int, float]
    baseline: dict[int, float]
    pack_verbatim: dict[int, float]
    baseline_verbatim: dict[int, float]


class CurrentFirst(BaseModel):
    """Knowledge-update questions whose current statement came first, as a share by budget."""

    questions: int
    with_older: int  # of which name the older statements (the rest: the current one found)
    pack: dict[int, float]
    baseline: dict[int, float]


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


class EvidenceScores(BaseModel):
    """Share of gold evidence found in the packed text, by token budget."""

    pack: dict[int, float]  # the context pack, word rule
    baseline: dict[int, float]  # raw messages, BM25 + vectors, RRF, packed in rank order
    pack_verbatim: dict[int, float] = {}  # the whole message in the packed text
    baseline_verbatim: dict[int, float] = {}
    messages: int  # raw messages the baseline ranked
    unresolved: int  # gold items that name no captured turn or message (counted as not found)
    per_query: list[QueryEvidence] = []

    def by_kind(self) -> dict[str, KindEvidence]:
        """Per question kind: its questions and the mean found share of each side."""
        groups: dict[str, list[QueryEvidence]] = {}
        for q in self.per_query:
            groups.setdefault(q.kind or "-", []).append(q)
        return {
            kind: KindEvidence(
                n=len(qs),
                **{
                    side: {b: _mean([getattr(q, side).get(b, 0.0) for q in qs]) for b in self.pack}
                    for side in SIDES
                },
            )
            for kind, qs in sorted(groups.items())
        }

    def current_first(self) -> CurrentFirst | None:
        """The current-value check over the knowledge-update questions (None: there are none)."""
        qs = [q for q in self.per_query if q.current_first is not None]
        if not qs:
            return None
        return CurrentFirst(
            questions=len(qs),
            with_older=sum(1 for q in qs if q.older),
            pack={b: _mean([float(q.current_first[b]) for q in qs]) for b in self.pack},  # type: ignore[index]
            baseline={
                b: _mean([float((q.current_first_baseline or {}).get(b, False)) for q in qs])
                for b in self.pack
            },
        )


class EvaluationReport(BaseModel):
    queries: int
    scores: dict[str, ChannelScores]
    per_query: list[QueryOutcome]
    evidence: EvidenceScores | None = None


def load_gold(path: Path) -> list[GoldQuery]:
    queries = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            try:
                queries.append(GoldQuery.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: {exc}") from exc
    return queries


def _matches(hit: SearchHit, item: GoldTurn) -> bool:
    for chain in hit.provenance:
        if (chain.source, chain.native_task_id) != (item.source, item.native_task_id):
            continue
        for turn in chain.turns:
            if item.turn_ordinal is not None and turn.ordinal == item.turn_ordinal:
                return True
            if item.native_message_id and item.native_message_id in turn.native_message_ids:
                return True
    return False


def _found_at(hits: list[SearchHit], item: GoldTurn) -> int | None:
    for rank, hit in enumerate(hits, start=1):
        if _matches(hit, item):
            return rank
    return None


def evaluate(
    conn: psycopg.Connection,
    gold: list[GoldQuery],
    embedder: QueryEmbedder | None,
    *,
    evidence: bool = True,
) -> EvaluationReport:
    depth = max(K_VALUES)
    totals = {name: {"r5": 0.0, "r10": 0.0, "mrr": 0.0} for name in CHANNELS}
    outcomes = []
    for q in gold:
        first: dict[str, int | None] = {}
        for name, channels in CHANNELS.items():
            response = search(
                conn,
                q.query,
                embedder=embedder,
                limit=depth,
                channels=channels,
                temporal_context=False,
                record_surface=None,
            )
            ranks = [_found_at(response.results, item) for item in q.relevant]
            found = [r for r in ranks if r is not None]
            totals[name]["r5"] += sum(r <= 5 for r in found) / len(q.relevant)
            totals[name]["r10"] += sum(r <= 10 for r in found) / len(q.relevant)
            first[name] = min(found) if found else None
            totals[name]["mrr"] += 1.0 / first[name] if first[name] else 0.0
        outcomes.append(QueryOutcome(id=q.id, query=q.query, first_hit_rank=first))
    n = max(len(gold), 1)
    scores = {
        name: ChannelScores(
            recall_at_5=round(t["r5"] / n, 4),
            recall_at_10=round(t["r10"] / n, 4),
            mrr=round(t["mrr"] / n, 4),
        )
        for name, t in totals.items()
    }
    report = EvaluationReport(queries=len(gold), scores=scores, per_query=outcomes)
    if evidence:
        report.evidence = evidence_recall(conn, gold, embedder)
    return report


# --- evidence in the packed text ---------------------------------------------------------------
@dataclass(frozen=True)
class RawMessage:
    source: str
    native_task_id: str
    turn_ordinal: int
    message_id: str | None
    text: str
    speaker: str | None = None

    @property
    def document(self) -> str:
        """The message as the baseline indexes and packs it: with its speaker."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


def turn_messages(prompt: str, outcome: str, ids: Sequence[str]) -> list[tuple[str | None, str]]:
    """(native message id, text) of each message of a captured turn (see the module doc)."""
    return [(msg_id, text) for msg_id, text, _ in _turn_pieces(prompt, outcome, ids)]


def _turn_pieces(
    prompt: str, outcome: str, ids: Sequence[str]
) -> list[tuple[str | None, str, bool]]:
    """turn_messages, and whether each message is on the outcome side."""
    pieces = [(p, False) for p in prompt.split("\n\n") if p.strip()]
    pieces += [(p, True) for p in outcome.split("\n\n") if p.strip()]
    if ids and len(pieces) == len(ids):
        return [(i, t, side) for i, (t, side) in zip(ids, pieces, strict=True)]
    sides = [(t, side) for t, side in ((prompt, False), (outcome, True)) if t.strip()]
    if len(ids) == len(sides):
        return [(i, t, side) for i, (t, side) in zip(ids, sides, strict=True)]
    return [(None, t, side) for t, side in sides]


def load_messages(
    conn: psycopg.Connection,
) -> tuple[list[RawMessage], dict[tuple[str, str, str], int]]:
    """Every raw message of the captured turns, each once (an appended turn that repeats an
    unanswered question repeats its message); and the turn of every native message id."""
    rows = conn.execute(
        "SELECT t.source, t.native_id, a.ordinal, a.prompt, a.outcome, a.native_message_ids,"
        " coalesce(a.prompt_speaker, 'User'), coalesce(a.outcome_speaker, 'Agent')"
        " FROM agent_turns a JOIN captured_tasks t ON t.id = a.task_id"
        " ORDER BY t.source, t.native_id, a.ordinal"
    ).fetchall()
    out: list[RawMessage] = []
    turn_of: dict[tuple[str, str, str], int] = {}
    seen: set[tuple[str, str, str]] = set()
    for source, native_id, ordinal, prompt, outcome, ids, asks, answers in rows:
        for msg_id in ids or []:
            turn_of.setdefault((source, native_id, msg_id), ordinal)
        for msg_id, text, answer in _turn_pieces(prompt, outcome, list(ids or [])):
            key = (source, native_id, msg_id or " ".join(text.split()))
            if key not in seen:
                seen.add(key)
                speaker = answers if answer else asks
                out.append(RawMessage(source, native_id, ordinal, msg_id, text, speaker))
    return out, turn_of


class EvidenceIndex:
    """Raw messages by task, to find the text a gold item names."""

    def __init__(self, messages: list[RawMessage]) -> None:
        self.by_task: dict[tuple[str, str], list[RawMessage]] = {}
        for m in messages:
            self.by_task.setdefault((m.source, m.native_task_id), []).append(m)

    def text(self, item: GoldTurn, turn_ids: dict[tuple[str, str, str], int]) -> str | None:
        """The named message's text; for a turn (or a message that could not be told apart
        from its turn's others), the whole turn's text."""
        task = self.by_task.get((item.source, item.native_task_id), [])
        ordinal = item.turn_ordinal
        if item.native_message_id is not None:
            exact = [m.text for m in task if m.message_id == item.native_message_id]
            if exact:
                return exact[0]
            ordinal = turn_ids.get((item.source, item.native_task_id, item.native_message_id))
        if ordinal is None:
            return None
        texts = [m.text for m in task if m.turn_ordinal == ordinal]
        return "\n\n".join(texts) if texts else None


def found_in(evidence: str, packed: set[str], packed_text: str) -> bool:
    """At least EVIDENCE_MIN_SHARE of the message's content words are in the packed text."""
    words = tokens(evidence)
    if not words:
        return found_verbatim(evidence, packed_text)
    return len(words & packed) / len(words) >= EVIDENCE_MIN_SHARE


def _normal(text: str) -> str:
    return " ".join(clean(text).split()).casefold()


def found_verbatim(evidence: str, packed_text: str) -> bool:
    """The whole message is in the packed text (whitespace and case aside, and cleaned as the
    pack cleans what it quotes); for a turn, each of its messages (paragraphs)."""
    packed = _normal(packed_text)
    pieces = [p for p in evidence.split("\n\n") if p.strip()] or [evidence]
    return all(_normal(p) in packed for p in pieces)


def found_at(evidence: str, packed_text: str) -> int | None:
    """The length of the shortest prefix of the packed text in which the message is found by
    the word rule; None when the whole text does not hold it."""
    if not found_in(evidence, tokens(packed_text), packed_text):
        return None
    low, high = 0, len(packed_text)
    while low < high:  # more text never holds fewer of the message's words
        mid = (low + high) // 2
        prefix = packed_text[:mid]
        if found_in(evidence, tokens(prefix), prefix):
            high = mid
        else:
            low = mid + 1
    return low


def placed_at(evidence: str, items: Sequence[str]) -> tuple[int, int] | None:
    """Where a message is in a pack: (the first item that holds it by the word rule on that
    item's text alone, the shortest prefix of that item holding it); None when no item does.
    Words scattered over several items do not place a message."""
    for n, text in enumerate(items):
        at = found_at(evidence, text)
        if at is not None:
            return n, at
    return None


def current_first(
    packed: str | Sequence[str], current: Sequence[str], older: Sequence[str]
) -> bool:
    """A current statement is in the pack (`packed`: its items' texts in order, or one text),
    before every older statement that is."""
    items = [packed] if isinstance(packed, str) else list(packed)
    now = [at for at in (placed_at(e, items) for e in current) if at is not None]
    if not now:
        return False
    before = [at for at in (placed_at(e, items) for e in older) if at is not None]
    return not before or min(now) < min(before)


@dataclass
class RawBaseline:
    """The raw-message baseline (see the module doc), indexed once for a whole gold set."""

    messages: list[RawMessage]
    postings: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # lexeme -> (doc, tf)
    lengths: list[int] = field(default_factory=list)
    vectors: np.ndarray | None = None

    @classmethod
    def build(
        cls,
        conn: psycopg.Connection,
        messages: list[RawMessage],
        embed: Callable[[list[str]], np.ndarray] | None,
    ) -> RawBaseline:
        base = cls(messages, lengths=[0] * len(messages))
        rows = conn.execute(
            "SELECT d.n - 1, u.lexeme, coalesce(array_length(u.positions, 1), 1)"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS d(text, n),"
            " unnest(to_tsvector('english', d.text)) AS u",
            [[m.document for m in messages]],
        ).fetchall()
        for doc, lexeme, tf in rows:
            base.postings.setdefault(lexeme, []).append((doc, tf))
            base.lengths[doc] += tf
        if embed is not None and messages:
            base.vectors = embed([m.document for m in messages])
        return base

    def bm25(self, lexemes: list[str]) -> list[int]:
        n = len(self.messages)
        avgdl = max(sum(self.lengths) / n, 1.0) if n else 1.0
        k1, b = BASELINE_BM25_K1, BASELINE_BM25_B
        scores: dict[int, float] = {}
        for lex in set(lexemes):
            postings = self.postings.get(lex, [])
            idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for doc, tf in postings:
                norm = tf + k1 * (1 - b + b * self.lengths[doc] / avgdl)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (k1 + 1) / norm
        return sorted(scores, key=lambda d: (-scores[d], d))[:BASELINE_TOP]

    def nearest(self, query_vector: np.ndarray | None) -> list[int]:
        if self.vectors is None or query_vector is None or not len(self.vectors):
            return []
        sims = self.vectors @ query_vector
        order = np.lexsort((np.arange(len(sims)), -sims))
        return [int(i) for i in order[:BASELINE_TOP]]

    def rank(self, lexemes: list[str], query_vector: np.ndarray | None) -> list[int]:
        fused = rrf_scores(self.bm25(lexemes), self.nearest(query_vector), k=BASELINE_RRF_K)
        return sorted(fused, key=lambda d: (-fused[d], d))

    def pack(self, ranked: list[int], budget: int) -> str:
        """The messages in rank order, each that fits the remaining budget."""
        return "\n\n".join(self.packed(ranked, budget))

    def packed(self, ranked: list[int], budget: int) -> list[str]:
        """The packed messages, one text each, in rank order."""
        used = 0
        texts = []
        for doc in ranked:
            text = self.messages[doc].document
            cost = tokens_of(text)
            if used + cost <= budget:
                used += cost
                texts.append(text)
        return texts


def query_lexemes(conn: psycopg.Connection, query: str) -> list[str]:
    return conn.execute(
        "SELECT ARRAY(SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector('english', %s)))"
        " AS l ORDER BY 1)",
        [query],
    ).fetchone()[0]  # type: ignore[index]


def evidence_recall(
    conn: psycopg.Connection,
    gold: list[GoldQuery],
    embedder: QueryEmbedder | None,
    budgets: Sequence[int] = EVIDENCE_BUDGETS,
) -> EvidenceScores:
    """Evidence found within each budget: the context pack beside the raw-message baseline."""
    messages, turn_of = load_messages(conn)
    index = EvidenceIndex(messages)
    space = serving_space(conn) if embedder is not None else None
    embed = None
    if space is not None and embedder is not None:
        name = space[0]
        embed = lambda texts: embedder.embed_many(name, texts)  # noqa: E731
    baseline = RawBaseline.build(conn, messages, embed)
    per_query = []
    unresolved = 0
    for q in gold:
        evidence = [index.text(item, turn_of) for item in q.relevant]
        unresolved += sum(1 for e in evidence if e is None)
        update = q.kind == KNOWLEDGE_UPDATE
        current = [t for t in (index.text(i, turn_of) for i in q.current) if t is not None]
        older = [t for t in (index.text(i, turn_of) for i in q.older) if t is not None]
        qvec = embedder.embed(space[0], q.query) if space and embedder else None
        ranked = baseline.rank(query_lexemes(conn, q.query), qvec)
        found: dict[str, dict[int, float]] = {side: {} for side in SIDES}
        first: dict[str, dict[int, bool]] = {"pack": {}, "baseline": {}}
        for budget in budgets:
            pack = context(conn, q.query, budget, embedder=embedder, record_surface=None)
            parts = {
                "pack": [pack_item_text(i) for i in pack.items],
                "baseline": baseline.packed(ranked, budget),
            }
            texts = {"pack": "\n".join(parts["pack"]), "baseline": "\n\n".join(parts["baseline"])}
            for side, text in texts.items():
                words = tokens(text)
                hits = sum(e is not None and found_in(e, words, text) for e in evidence)
                whole = sum(e is not None and found_verbatim(e, text) for e in evidence)
                found[side][budget] = hits / len(q.relevant)
                found[f"{side}_verbatim"][budget] = whole / len(q.relevant)
                if update:
                    first[side][budget] = current_first(parts[side], current, older)
        per_query.append(
            QueryEvidence(
                id=q.id,
                kind=q.kind,
                **found,
                current_first=first["pack"] if update else None,
                current_first_baseline=first["baseline"] if update else None,
                older=len(q.older),
            )
        )
    means = {
        side: {b: _mean([getattr(q, side)[b] for q in per_query]) for b in budgets}
        for side in SIDES
    }
    return EvidenceScores(
        **means,
        messages=len(messages),
        unresolved=unresolved,
        per_query=per_query,
    )


def report_table(report: EvaluationReport) -> str:
    lines = [
        f"{report.queries} queries",
        f"{'channel':<8} {'Recall@5':>9} {'Recall@10':>10} {'MRR':>7}",
    ]
    for name, s in report.scores.items():
        lines.append(f"{name:<8} {s.recall_at_5:>9.3f} {s.recall_at_10:>10.3f} {s.mrr:>7.3f}")
    if report.evidence:
        lines += evidence_lines(report.evidence)
    missed = [o for o in report.per_query if o.first_hit_rank.get("full") is None]
    if missed:
        lines.append("not found by the full pipeline in the top 10:")
        lines.extend(f"  {o.id}: {o.query}" for o in missed)
    return "\n".join(lines)


def evidence_lines(e: EvidenceScores) -> list[str]:
    """The evidence figures as a table: each cell `word rule / verbatim`, the larger budget
    first; per kind when there are several; then the current-value check."""
    budgets = sorted(e.pack, reverse=True)

    def cell(found: dict[int, float], whole: dict[int, float], b: int) -> str:
        return f"{found[b]:.3f}/{whole.get(b, 0.0):.3f}"

    lines = [
        f"evidence found in the packed text ({tuning.CHARS_PER_TOKEN} characters per token;"
        f" baseline: {e.messages} raw messages with their speakers, BM25 + vectors, RRF);"
        f" each cell: word rule ({EVIDENCE_MIN_SHARE:.0%} of a message's content words) / verbatim",
        f"{'budget':<8} {'pack':>13} {'baseline':>13}",
    ]
    for b in budgets:
        lines.append(
            f"{b:<8} {cell(e.pack, e.pack_verbatim, b):>13}"
            f" {cell(e.baseline, e.baseline_verbatim, b):>13}"
        )
    kinds = e.by_kind()
    if len(kinds) > 1:
        head = " ".join(f"{'pack@' + str(b):>13} {'base@' + str(b):>13}" for b in budgets)
        lines.append(f"{'kind':<24} {'n':>4} {head}")
        for kind, k in kinds.items():
            pack = [cell(k.pack, k.pack_verbatim, b) for b in budgets]
            base = [cell(k.baseline, k.baseline_verbatim, b) for b in budgets]
            cells = " ".join(f"{p:>13} {r:>13}" for p, r in zip(pack, base, strict=True))
            lines.append(f"{kind:<24} {k.n:>4} {cells}")
    if e.unresolved:
        lines.append(f"{e.unresolved} gold items name no captured message (not found)")
    first = e.current_first()
    if first is not None:
        at = lambda side: ", ".join(f"@{b} {side[b]:.3f}" for b in budgets)  # noqa: E731
        lines.append(
            f"current value first ({first.questions} knowledge-update questions, "
            f"{first.with_older} naming the older statements): pack {at(first.pack)};"
            f" baseline {at(first.baseline)}"
        )
        late = [q.id for q in e.per_query if q.current_first and not all(q.current_first.values())]
        if late:
            lines.append(f"  not first in the pack: {' '.join(late)}")
    return lines
