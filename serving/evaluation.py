"""Retrieval evaluation against a gold set of queries and the turns that must be found.

Two measures, each over the production code with the weights of `memory_pipeline/tuning.py`:

- **Ranking**: Recall@5, Recall@10 and MRR for BM25 only, vectors only and the full pipeline. A
  result finds a gold item when the item's turn is in the result's provenance (the check
  survives any change to segmentation or distillation). Temporal neighbours are left out.
- **Evidence in the context pack**: the share of gold evidence whose text is in the pack built
  within 1,000 and 2,000 tokens, beside the same figure for a raw-message baseline computed in
  the same run over the same captured turns: every raw message a document, Okapi BM25 (k1 1.2,
  b 0.75, PostgreSQL's English lexemes) and the serving space's vectors, RRF (k 60) of the top
  100 of each, packed in rank order (a message that does not fit is skipped, as the pack skips
  an excerpt), tokens counted as characters / 4 as the project counts them. A message is found
  when at least 70% of its content words (`serving.text.tokens`) are in the packed text. A gold
  item naming a message is that message; one naming a turn is the turn's whole text (all its
  messages together), so quoting the question without its answer does not count.

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
from serving.render import pack_item_text
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


class ChannelScores(BaseModel):
    recall_at_5: float
    recall_at_10: float
    mrr: float


class QueryOutcome(BaseModel):
    id: str
    query: str
    first_hit_rank: dict[str, int | None]  # channel -> rank of the first relevant result


class QueryEvidence(BaseModel):
    """One question's share of its evidence found, by token budget."""

    id: str
    kind: str | None
    pack: dict[int, float]
    baseline: dict[int, float]


class EvidenceScores(BaseModel):
    """Share of gold evidence found in the packed text, by token budget."""

    pack: dict[int, float]  # the context pack
    baseline: dict[int, float]  # raw messages, BM25 + vectors, RRF, packed in rank order
    messages: int  # raw messages the baseline ranked
    unresolved: int  # gold items that name no captured turn or message (counted as not found)
    per_query: list[QueryEvidence] = []

    def by_kind(self) -> dict[str, tuple[int, dict[int, float], dict[int, float]]]:
        """Per question kind: its questions and the mean found share of pack and baseline."""
        groups: dict[str, list[QueryEvidence]] = {}
        for q in self.per_query:
            groups.setdefault(q.kind or "-", []).append(q)
        return {
            kind: (
                len(qs),
                {b: round(sum(q.pack[b] for q in qs) / len(qs), 4) for b in self.pack},
                {b: round(sum(q.baseline[b] for q in qs) / len(qs), 4) for b in self.baseline},
            )
            for kind, qs in sorted(groups.items())
        }


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


def turn_messages(prompt: str, outcome: str, ids: Sequence[str]) -> list[tuple[str | None, str]]:
    """(native message id, text) of each message of a captured turn (see the module doc)."""
    pieces = [p for p in prompt.split("\n\n") if p.strip()]
    pieces += [p for p in outcome.split("\n\n") if p.strip()]
    if ids and len(pieces) == len(ids):
        return list(zip(ids, pieces, strict=True))
    sides = [t for t in (prompt, outcome) if t.strip()]
    if len(ids) == len(sides):
        return list(zip(ids, sides, strict=True))
    return [(None, t) for t in sides]


def load_messages(
    conn: psycopg.Connection,
) -> tuple[list[RawMessage], dict[tuple[str, str, str], int]]:
    """Every raw message of the captured turns, each once (an appended turn that repeats an
    unanswered question repeats its message); and the turn of every native message id."""
    rows = conn.execute(
        "SELECT t.source, t.native_id, a.ordinal, a.prompt, a.outcome, a.native_message_ids"
        " FROM agent_turns a JOIN captured_tasks t ON t.id = a.task_id"
        " ORDER BY t.source, t.native_id, a.ordinal"
    ).fetchall()
    out: list[RawMessage] = []
    turn_of: dict[tuple[str, str, str], int] = {}
    seen: set[tuple[str, str, str]] = set()
    for source, native_id, ordinal, prompt, outcome, ids in rows:
        for msg_id in ids or []:
            turn_of.setdefault((source, native_id, msg_id), ordinal)
        for msg_id, text in turn_messages(prompt, outcome, list(ids or [])):
            key = (source, native_id, msg_id or " ".join(text.split()))
            if key not in seen:
                seen.add(key)
                out.append(RawMessage(source, native_id, ordinal, msg_id, text))
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
        return " ".join(evidence.split()).casefold() in " ".join(packed_text.split()).casefold()
    return len(words & packed) / len(words) >= EVIDENCE_MIN_SHARE


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
            [[m.text for m in messages]],
        ).fetchall()
        for doc, lexeme, tf in rows:
            base.postings.setdefault(lexeme, []).append((doc, tf))
            base.lengths[doc] += tf
        if embed is not None and messages:
            base.vectors = embed([m.text for m in messages])
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
        used = 0
        texts = []
        for doc in ranked:
            cost = tokens_of(self.messages[doc].text)
            if used + cost <= budget:
                used += cost
                texts.append(self.messages[doc].text)
        return "\n\n".join(texts)


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
        qvec = embedder.embed(space[0], q.query) if space and embedder else None
        ranked = baseline.rank(query_lexemes(conn, q.query), qvec)
        pack_found: dict[int, float] = {}
        base_found: dict[int, float] = {}
        for budget in budgets:
            pack = context(conn, q.query, budget, embedder=embedder, record_surface=None)
            pack_text = "\n".join(pack_item_text(i) for i in pack.items)
            base_text = baseline.pack(ranked, budget)
            for text, found in ((pack_text, pack_found), (base_text, base_found)):
                words = tokens(text)
                hits = sum(e is not None and found_in(e, words, text) for e in evidence)
                found[budget] = hits / len(q.relevant)
        per_query.append(QueryEvidence(id=q.id, kind=q.kind, pack=pack_found, baseline=base_found))
    n = max(len(gold), 1)
    return EvidenceScores(
        pack={b: round(sum(q.pack[b] for q in per_query) / n, 4) for b in budgets},
        baseline={b: round(sum(q.baseline[b] for q in per_query) / n, 4) for b in budgets},
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
        e = report.evidence
        lines.append(
            f"evidence found in the packed text ({tuning.CHARS_PER_TOKEN} characters per token;"
            f" baseline: {e.messages} raw messages, BM25 + vectors, RRF)"
        )
        lines.append(f"{'budget':<8} {'pack':>9} {'baseline':>10}")
        for budget in e.pack:
            lines.append(f"{budget:<8} {e.pack[budget]:>9.3f} {e.baseline[budget]:>10.3f}")
        kinds = e.by_kind()
        if len(kinds) > 1:
            budgets = " ".join(f"{'pack@' + str(b):>10} {'base@' + str(b):>10}" for b in e.pack)
            lines.append(f"{'kind':<24} {'n':>4} {budgets}")
            for kind, (n, pack, base) in kinds.items():
                cells = " ".join(f"{pack[b]:>10.3f} {base[b]:>10.3f}" for b in e.pack)
                lines.append(f"{kind:<24} {n:>4} {cells}")
        if e.unresolved:
            lines.append(f"{e.unresolved} gold items name no captured message (not found)")
    missed = [o for o in report.per_query if o.first_hit_rank.get("full") is None]
    if missed:
        lines.append("not found by the full pipeline in the top 10:")
        lines.extend(f"  {o.id}: {o.query}" for o in missed)
    return "\n".join(lines)
