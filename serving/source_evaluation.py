"""Retrieval evaluation of the inbox's sources (issue 33): questions whose evidence sits in
documents and video transcripts, not in agent turns.

Gold set: `memory_pipeline/demo/sources_gold.jsonl`, 44 questions written before any run over
the demo inbox (`memory_pipeline/demo/documents/`, written for this project, Apache-2.0). Each
names the document (`source`: its URL or file name), its kind and `evidence`: a phrase of the
document that answers it. A result finds it when it is a `source` memory of that kind whose
passage holds the phrase (whitespace normalised), so the measure survives any change of chunking
that keeps the answer in one passage.

Measures, over the production search of `serving.search` with the weights of tuning/retrieval.py:
Recall@5, Recall@10 and MRR per channel (BM25, vectors, full), and the share of questions whose
evidence phrase is in the context pack built within 1,000 and 2,000 tokens.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from pydantic import BaseModel

from serving.context_pack import context
from serving.evaluation import CHANNELS, EVIDENCE_BUDGETS, K_VALUES, ChannelScores
from serving.models import SearchHit
from serving.render import pack_item_text
from serving.search import QueryEmbedder, search


class SourceQuestion(BaseModel):
    id: str
    query: str
    kind: str  # article | document | video
    source: str  # the document's URL or file name
    evidence: str


class SourceOutcome(BaseModel):
    id: str
    kind: str
    first_hit_rank: dict[str, int | None]
    in_pack: dict[int, bool]


class SourceReport(BaseModel):
    questions: int
    scores: dict[str, ChannelScores]
    pack_found: dict[int, float]  # share of questions whose evidence is in the pack
    by_kind: dict[str, dict[str, float]]  # kind -> full-pipeline R@10, MRR and pack@2000
    per_query: list[SourceOutcome]


def load_questions(path: Path) -> list[SourceQuestion]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            try:
                out.append(SourceQuestion.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: {exc}") from exc
    return out


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def found(hit: SearchHit, q: SourceQuestion) -> bool:
    return (
        hit.type == "source"
        and hit.source_type == q.kind
        and _norm(q.evidence) in _norm(hit.content)
    )


def evaluate_sources(
    conn: psycopg.Connection, questions: list[SourceQuestion], embedder: QueryEmbedder | None
) -> SourceReport:
    depth = max(K_VALUES)
    totals = {name: {"r5": 0.0, "r10": 0.0, "mrr": 0.0} for name in CHANNELS}
    packs = dict.fromkeys(EVIDENCE_BUDGETS, 0)
    outcomes = []
    for q in questions:
        first: dict[str, int | None] = {}
        for name, channels in CHANNELS.items():
            if name == "vector" and embedder is None:
                first[name] = None
                continue
            response = search(
                conn,
                q.query,
                embedder=embedder if "vector" in channels else None,
                limit=depth,
                channels=channels,
                temporal_context=False,
                record_surface=None,
            )
            rank = next((i for i, h in enumerate(response.results, start=1) if found(h, q)), None)
            first[name] = rank
            if rank is not None:
                totals[name]["r5"] += rank <= 5
                totals[name]["r10"] += rank <= 10
                totals[name]["mrr"] += 1.0 / rank
        in_pack = {}
        for budget in EVIDENCE_BUDGETS:
            pack = context(conn, q.query, budget, embedder=embedder)
            text = _norm("\n".join(pack_item_text(i) for i in pack.items))
            in_pack[budget] = _norm(q.evidence) in text
            packs[budget] += in_pack[budget]
        outcomes.append(SourceOutcome(id=q.id, kind=q.kind, first_hit_rank=first, in_pack=in_pack))
    n = max(len(questions), 1)
    scores = {
        name: ChannelScores(
            recall_at_5=round(t["r5"] / n, 4),
            recall_at_10=round(t["r10"] / n, 4),
            mrr=round(t["mrr"] / n, 4),
        )
        for name, t in totals.items()
    }
    by_kind: dict[str, dict[str, float]] = {}
    for kind in sorted({o.kind for o in outcomes}):
        mine = [o for o in outcomes if o.kind == kind]
        ranks = [o.first_hit_rank["full"] for o in mine]
        by_kind[kind] = {
            "questions": len(mine),
            "recall_at_10": round(sum(r is not None and r <= 10 for r in ranks) / len(mine), 4),
            "mrr": round(sum(1.0 / r for r in ranks if r) / len(mine), 4),
            "pack_2000": round(sum(o.in_pack[max(EVIDENCE_BUDGETS)] for o in mine) / len(mine), 4),
        }
    return SourceReport(
        questions=len(questions),
        scores=scores,
        pack_found={b: round(v / n, 4) for b, v in packs.items()},
        by_kind=by_kind,
        per_query=outcomes,
    )


def report_lines(report: SourceReport) -> list[str]:
    lines = [f"sources gold set: {report.questions} questions (documents and transcripts)"]
    lines.append(f"{'channel':8} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for name, s in report.scores.items():
        lines.append(f"{name:8} {s.recall_at_5:6.3f} {s.recall_at_10:6.3f} {s.mrr:6.3f}")
    packs = ", ".join(f"{b} tokens {v:.3f}" for b, v in report.pack_found.items())
    lines.append(f"evidence in the context pack: {packs}")
    for kind, k in report.by_kind.items():
        lines.append(
            f"  {kind:8} {int(k['questions']):3} questions  R@10 {k['recall_at_10']:.3f}"
            f"  MRR {k['mrr']:.3f}  pack@2000 {k['pack_2000']:.3f}"
        )
    return lines
