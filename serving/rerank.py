"""The utility rerank: each term a small pure function, the total a weighted sum.

Weights and constants come from `memory_pipeline/tuning/retrieval.py`; the formula is documented
there.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from datetime import datetime

from memory_pipeline import tuning
from serving.text import overlap, tokens


@dataclass(frozen=True)
class Candidate:
    """A fused candidate with what the rerank needs to know about it."""

    id: str
    type: str
    title: str
    content: str
    encoding_context: str | None
    project: str | None
    mem_class: str | None
    status: str
    depth_score: float | None
    access_count: int
    created_at: datetime
    last_accessed_at: datetime | None
    rrf: float
    task_id: str | None


def rrf_scores(*rankings: list[str], k: int = tuning.RRF_K) -> dict[str, float]:
    """Reciprocal Rank Fusion: sum over channels of 1 / (k + rank), rank starting at 1."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return scores


def rrf_normalized(rrf: float, channels: int = 2, k: int = tuning.RRF_K) -> float:
    """RRF scaled to 0..1: 1.0 means rank 1 in every channel."""
    return rrf / (channels / (k + 1))


def recency(created_at: datetime, access_count: int, now: datetime) -> float:
    """Power-law decay of age; stability grows with retrieval, so used memories fade slower."""
    age_days = max(0.0, (now - created_at).total_seconds() / 86400)
    stability = tuning.RECENCY_BASE_STABILITY_DAYS * (1 + math.log1p(max(access_count, 0)))
    return (1 + age_days / stability) ** -tuning.RECENCY_DECAY


def length_score(text: str) -> float:
    words = len(text.split())
    low, high = tuning.LENGTH_IDEAL_WORDS
    if words < low:
        return words / low
    if words <= high:
        return 1.0
    return 1.0 / (1.0 + (words - high) / tuning.LENGTH_LONG_HALF_WORDS)


def spacing_bonus(created_at: datetime, last_accessed_at: datetime | None) -> float:
    if last_accessed_at is None:
        return 1.0
    span_days = max(0.0, (last_accessed_at - created_at).total_seconds() / 86400)
    return 1.0 + tuning.SPACING_MAX_EXTRA * min(1.0, span_days / tuning.SPACING_FULL_DAYS)


def reinforcement(
    access_count: int, created_at: datetime, last_accessed_at: datetime | None
) -> float:
    if access_count <= 0:
        return 0.0
    return (
        tuning.REINFORCEMENT_WEIGHT
        * math.log1p(access_count)
        * spacing_bonus(created_at, last_accessed_at)
    )


def is_stale(created_at: datetime, last_accessed_at: datetime | None, now: datetime) -> bool:
    """Not retrieved for STALE_AFTER_DAYS (counting from creation when never retrieved)."""
    last = last_accessed_at or created_at
    return (now - last).days > tuning.STALE_AFTER_DAYS


def score(
    c: Candidate,
    query_tokens: frozenset[str],
    context_tokens: frozenset[str],
    project_context: str | None,
    now: datetime,
) -> tuple[float, dict[str, float]]:
    """The rerank score of one candidate and each of its terms (rounded for display)."""
    parts = terms(c, query_tokens, context_tokens, project_context, now)
    return sum(parts.values()), rounded(parts)


def rounded(parts: dict[str, float]) -> dict[str, float]:
    """Terms as a hit reports them."""
    return {k: round(v, 6) for k, v in parts.items()}


def terms(
    c: Candidate,
    query_tokens: frozenset[str],
    context_tokens: frozenset[str],
    project_context: str | None,
    now: datetime,
    text_overlap: float | None = None,
) -> dict[str, float]:
    """Each rerank term of one candidate, unrounded; the score is their sum. Search ranks ~190
    candidates and reports a dozen, so it rounds only those (`rounded`).

    `text_overlap` stands in for the share of query tokens in the whole text (1.0 gives an
    upper bound of the score without tokenizing the content: `top_results`)."""
    if text_overlap is None:
        text_overlap = overlap(query_tokens, tokens(f"{c.title} {c.content}"))
    parts = {
        "rrf": tuning.W_RRF * rrf_normalized(c.rrf),
        "token_overlap": tuning.W_TOKEN_OVERLAP * text_overlap,
        "title_overlap": tuning.W_TITLE_OVERLAP * overlap(query_tokens, tokens(c.title)),
        "context_overlap": tuning.W_CONTEXT_OVERLAP
        * overlap(context_tokens, tokens(c.encoding_context or "")),
        "recency": tuning.W_RECENCY * recency(c.created_at, c.access_count, now),
        "length": tuning.W_LENGTH * length_score(c.content),
        "depth": tuning.W_DEPTH * (c.depth_score or 0.0),
        "type_boost": tuning.TYPE_BOOST.get(c.type, 0.0),
        "mem_class_boost": tuning.MEM_CLASS_BOOST.get(c.mem_class or "", 0.0),
        "reinforcement": reinforcement(c.access_count, c.created_at, c.last_accessed_at),
        "project_penalty": tuning.PROJECT_PENALTY
        if project_context and c.project and c.project.casefold() != project_context.casefold()
        else 0.0,
        "superseded_penalty": tuning.SUPERSEDED_PENALTY if c.status == "superseded" else 0.0,
        "staleness_penalty": tuning.STALENESS_PENALTY
        if is_stale(c.created_at, c.last_accessed_at, now)
        else 0.0,
    }
    return parts


def dedup_exact(ranked: list[Candidate], keys: dict[str, str] | None = None) -> list[Candidate]:
    """Collapse candidates with the same content (whitespace-insensitive), keeping the best.
    `keys` caches each candidate's normalised content across calls (top_results' batches)."""
    keys = {} if keys is None else keys
    seen: set[str] = set()
    out = []
    for c in ranked:
        key = keys.get(c.id)
        if key is None:
            key = keys[c.id] = " ".join(c.content.split()).casefold()
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
    return out


def diversify(
    ranked: list[Candidate],
    scores: dict[str, float],
    per_task: int = tuning.MAX_RESULTS_PER_TASK,
    penalty: float = tuning.DIVERSITY_PENALTY,
) -> list[Candidate]:
    """Soft lineage diversity: the best results of a task are free, further ones pay a price.

    Greedy: each next result is the candidate with the highest score after subtracting
    `penalty` for every result its task already has beyond `per_task - 1`. A strong third
    result from one task still beats a weak result from another; an equal one does not.
    Ties keep the incoming order, so the outcome is deterministic.
    """
    counts: dict[str, int] = {}
    out: list[Candidate] = []

    def effective(c: Candidate) -> float:
        extra = counts.get(c.task_id, 0) - (per_task - 1) if c.task_id else 0
        return scores[c.id] - penalty * max(0, extra)

    # Lazy greedy over a heap keyed (-effective, incoming position): a candidate's effective
    # score only ever drops (when its task gains a result), so a popped entry whose key is
    # still current is the best remaining one. Same choices as rescanning every candidate
    # each step, in O(n log n) instead of O(n^2).
    heap = [(-effective(c), i) for i, c in enumerate(ranked)]
    heapq.heapify(heap)
    while heap:
        key, i = heapq.heappop(heap)
        current = -effective(ranked[i])
        if current != key:
            heapq.heappush(heap, (current, i))
            continue
        chosen = ranked[i]
        if chosen.task_id:
            counts[chosen.task_id] = counts.get(chosen.task_id, 0) + 1
        out.append(chosen)
    return out


def top_results(
    candidates: list[Candidate],
    query_tokens: frozenset[str],
    context_tokens: frozenset[str],
    project_context: str | None,
    now: datetime,
    limit: int,
    batch: int = tuning.RERANK_BATCH,
) -> tuple[list[Candidate], dict[str, dict[str, float]]]:
    """The best `limit` candidates after the rerank, dedup and diversity, and the terms of each
    candidate it scored: exactly what scoring every candidate would give.

    Tokenizing each candidate's whole text was most of the rerank's time. The overlap with it
    is at most 1, so every other term gives each candidate an upper bound of its score;
    candidates are scored in order of their bounds, in batches, until the `limit`-th result
    (with its diversity penalty) scores above every bound left. The greedy diversity choice
    never gives a result more than the one before it, so no candidate left unscored could
    have been chosen among the first `limit`, nor changed a choice before them.
    """
    # Every term with the whole-text overlap at its maximum; scoring a candidate then only
    # replaces that term (the same terms, in the same order, as terms() gives).
    bounded = {
        c.id: terms(c, query_tokens, context_tokens, project_context, now, 1.0) for c in candidates
    }
    bounds = {mid: sum(parts.values()) for mid, parts in bounded.items()}
    order = sorted(candidates, key=lambda c: (-bounds[c.id], -c.rrf, c.id))
    scored: dict[str, dict[str, float]] = {}
    totals: dict[str, float] = {}
    keys: dict[str, str] = {}  # normalised contents, computed once for every batch's dedup
    done = 0
    while True:
        step = batch if done else limit + batch
        for c in order[done : done + step]:
            text = tokens(f"{c.title} {c.content}")
            parts = bounded[c.id] | {
                "token_overlap": tuning.W_TOKEN_OVERLAP * overlap(query_tokens, text)
            }
            scored[c.id] = parts
            totals[c.id] = sum(parts.values())
        done = min(len(order), done + step)
        pool = sorted(order[:done], key=lambda c: (-totals[c.id], -c.rrf, c.id))
        chosen = diversify(dedup_exact(pool, keys), totals)[:limit]
        if done == len(order):
            return chosen, scored
        # (A margin, though a sum of the same terms with one no larger is never larger.)
        if len(chosen) == limit and bounds[order[done].id] + 1e-9 < _last_effective(chosen, totals):
            return chosen, scored


def _last_effective(
    chosen: list[Candidate],
    scores: dict[str, float],
    per_task: int = tuning.MAX_RESULTS_PER_TASK,
    penalty: float = tuning.DIVERSITY_PENALTY,
) -> float:
    """The lowest score after its diversity penalty at which a result of `chosen` was taken."""
    counts: dict[str | None, int] = {}
    lowest = math.inf
    for c in chosen:
        extra = counts.get(c.task_id, 0) - (per_task - 1) if c.task_id else 0
        lowest = min(lowest, scores[c.id] - penalty * max(0, extra))
        counts[c.task_id] = counts.get(c.task_id, 0) + 1
    return lowest
