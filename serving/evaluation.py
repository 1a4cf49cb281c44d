"""Retrieval evaluation: Recall@5, Recall@10 and MRR for BM25 only, vectors only and the full
pipeline, against a gold set of queries and the turns that must be found.

A gold item names a captured turn (source, native task id, and a turn ordinal or a native
message id), not a memory: the check survives any change to segmentation or distillation. A
result counts as finding an item when the item's turn is in the result's provenance. The search
is the production one, with the weights of `serving/rerank_weights.py`; temporal neighbours are
left out (they are context, not ranked results), and no retrieval events are recorded.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from pydantic import BaseModel, model_validator

from serving.models import SearchHit
from serving.search import QueryEmbedder, search

CHANNELS: dict[str, tuple[str, ...]] = {
    "bm25": ("bm25",),
    "vector": ("vector",),
    "full": ("bm25", "vector"),
}
K_VALUES = (5, 10)


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


class EvaluationReport(BaseModel):
    queries: int
    scores: dict[str, ChannelScores]
    per_query: list[QueryOutcome]


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
    conn: psycopg.Connection, gold: list[GoldQuery], embedder: QueryEmbedder | None
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
    return EvaluationReport(queries=len(gold), scores=scores, per_query=outcomes)


def report_table(report: EvaluationReport) -> str:
    lines = [
        f"{report.queries} queries",
        f"{'channel':<8} {'Recall@5':>9} {'Recall@10':>10} {'MRR':>7}",
    ]
    for name, s in report.scores.items():
        lines.append(f"{name:<8} {s.recall_at_5:>9.3f} {s.recall_at_10:>10.3f} {s.mrr:>7.3f}")
    missed = [o for o in report.per_query if o.first_hit_rank.get("full") is None]
    if missed:
        lines.append("not found by the full pipeline in the top 10:")
        lines.extend(f"  {o.id}: {o.query}" for o in missed)
    return "\n".join(lines)
