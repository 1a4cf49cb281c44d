"""Each stage of the retrieval arithmetic on hand-made inputs where the right answer is known."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline import tuning
from memory_pipeline_tests.support.memories import NOW
from serving.rerank import (
    Candidate,
    dedup_exact,
    diversify,
    length_score,
    recency,
    reinforcement,
    rrf_normalized,
    rrf_scores,
    score,
    spacing_bonus,
    terms,
    top_results,
)
from serving.text import tokens

BASE = Candidate(
    id="m",
    type="segment",
    title="Rate limiter storage",
    content=" ".join(["word"] * 50),
    encoding_context="Codex CLI · task: billing",
    project=None,
    mem_class="episodic",
    status="active",
    depth_score=0.0,
    access_count=0,
    created_at=NOW,
    last_accessed_at=NOW,
    rrf=0.0,
    task_id=None,
)


def parts(c: Candidate, query: str = "", context: str | None = None, project: str | None = None):
    q = tokens(query)
    return score(c, q, tokens(context) if context else q, project, NOW)[1]


def test_rrf_arithmetic() -> None:
    s = rrf_scores(["a", "b", "c"], ["c", "a"])
    assert s["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert s["b"] == pytest.approx(1 / 62)
    assert s["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert rrf_normalized(2 / 61) == pytest.approx(1.0)


def test_token_and_title_overlap() -> None:
    p = parts(BASE, "rate limiter redis")
    assert p["title_overlap"] == pytest.approx(tuning.W_TITLE_OVERLAP * 2 / 3)
    assert p["token_overlap"] == pytest.approx(tuning.W_TOKEN_OVERLAP * 2 / 3)


def test_context_overlap_uses_the_given_context() -> None:
    assert parts(BASE, "anything", context="billing work")["context_overlap"] == pytest.approx(
        tuning.W_CONTEXT_OVERLAP * 0.5
    )
    assert parts(BASE, "anything", context="homelab")["context_overlap"] == 0.0


def test_recency_is_a_power_law_slowed_by_use() -> None:
    fresh = recency(NOW, 0, NOW)
    month = recency(NOW - timedelta(days=30), 0, NOW)
    used = recency(NOW - timedelta(days=30), 10, NOW)
    assert fresh == 1.0 and month < fresh and used > month
    assert month == pytest.approx(
        (1 + 30 / tuning.RECENCY_BASE_STABILITY_DAYS) ** -tuning.RECENCY_DECAY
    )


def test_length_score_prefers_a_paragraph() -> None:
    assert length_score("two words") < length_score(" ".join(["w"] * 100)) == 1.0
    assert length_score(" ".join(["w"] * 5000)) < 1.0


def test_depth_type_and_class_boosts() -> None:
    deep = replace(BASE, depth_score=1.0, type="decision", mem_class="semantic")
    p = parts(deep)
    assert p["depth"] == tuning.W_DEPTH and p["type_boost"] == 0.06 and p["mem_class_boost"] == 0.04
    assert parts(replace(BASE, mem_class="procedural"))["mem_class_boost"] == 0.02
    assert parts(BASE)["type_boost"] == 0.0 and parts(BASE)["mem_class_boost"] == 0.0


def test_reinforcement_grows_with_use_and_spacing() -> None:
    assert reinforcement(0, NOW, None) == 0.0
    same_day = reinforcement(5, NOW, NOW)
    spaced = reinforcement(5, NOW - timedelta(days=60), NOW)
    assert same_day == pytest.approx(tuning.REINFORCEMENT_WEIGHT * math.log1p(5))
    assert spaced == pytest.approx(same_day * (1 + tuning.SPACING_MAX_EXTRA))
    assert spacing_bonus(NOW, None) == 1.0


def test_penalties() -> None:
    assert parts(replace(BASE, project="homelab"), project="billing")["project_penalty"] == -0.15
    assert parts(replace(BASE, project="billing"), project="Billing")["project_penalty"] == 0.0
    assert parts(replace(BASE, project="homelab"))["project_penalty"] == 0.0  # no context
    assert parts(replace(BASE, status="superseded"))["superseded_penalty"] == -0.20
    old = replace(BASE, created_at=NOW - timedelta(days=200), last_accessed_at=None)
    assert parts(old)["staleness_penalty"] == -0.05
    recently_used = replace(old, last_accessed_at=NOW - timedelta(days=3))
    assert parts(recently_used)["staleness_penalty"] == 0.0


def test_total_is_the_sum_of_its_terms() -> None:
    c = replace(BASE, rrf=1 / 61, depth_score=0.7, type="insight", access_count=3)
    total, terms = score(c, tokens("rate limiter"), tokens("billing"), None, NOW)
    assert total == pytest.approx(sum(terms.values()), abs=1e-5)


def test_exact_content_dedup_keeps_the_best() -> None:
    a = replace(BASE, id="a", content="Same  text")
    b = replace(BASE, id="b", content="same text")
    c = replace(BASE, id="c", content="other")
    assert [x.id for x in dedup_exact([a, b, c])] == ["a", "c"]


def test_diversity_is_a_soft_penalty_beyond_two_per_task() -> None:
    ranked = [
        replace(BASE, id="t1a", task_id="t1"),
        replace(BASE, id="t1b", task_id="t1"),
        replace(BASE, id="t1c", task_id="t1"),
        replace(BASE, id="t2a", task_id="t2"),
        replace(BASE, id="none", task_id=None),
    ]
    scores = {"t1a": 0.90, "t1b": 0.85, "t1c": 0.84, "t2a": 0.82, "none": 0.70}
    # The third result of t1 pays 0.05 (0.79): behind t2a, still ahead of a weak one.
    assert [c.id for c in diversify(ranked, scores)] == ["t1a", "t1b", "t2a", "t1c", "none"]
    scores["t2a"] = 0.75  # now the penalised third of t1 (0.79) is still the better result
    assert [c.id for c in diversify(ranked, scores)] == ["t1a", "t1b", "t1c", "t2a", "none"]
    scores["t1c"] = 0.70 + tuning.DIVERSITY_PENALTY  # a tie after the penalty keeps the order
    assert [c.id for c in diversify(ranked, scores)][3:] == ["t1c", "none"]


def _every_candidate_scored(
    pool: list[Candidate], q: frozenset[str], ctx: frozenset[str], limit: int
) -> list[Candidate]:
    """The rerank as it was before top_results: every candidate scored, then dedup, diversity
    and the limit."""
    scores = {c.id: score(c, q, ctx, None, NOW)[0] for c in pool}
    ordered = sorted(pool, key=lambda c: (-scores[c.id], -c.rrf, c.id))
    return diversify(dedup_exact(ordered), scores)[:limit]


_WORDS = ["backup", "deploy", "retry", "policy", "router", "billing", "invoice", "cache"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5),  # title
            st.lists(st.sampled_from(_WORDS), max_size=30),  # content
            st.integers(0, 3),  # task
            st.floats(0, 0.033),  # rrf
            st.integers(0, 400),  # age in days
            st.sampled_from(["segment", "decision", "insight"]),
        ),
        max_size=60,
    ),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
    st.integers(1, 12),
    st.integers(1, 20),
)
def test_top_results_are_what_scoring_every_candidate_gives(rows, query, limit, batch) -> None:  # type: ignore[no-untyped-def]
    """Scoring candidates only until none left can enter the results (upper bounds) chooses
    exactly the results, in the order, that scoring all of them does: ties, duplicates of
    content and the diversity penalty included."""
    pool = [
        replace(
            BASE,
            id=f"m{i:02d}",
            title=" ".join(title),
            content=" ".join(content),
            task_id=f"t{task}" if task else None,
            rrf=rrf,
            type=type_,
            created_at=NOW - timedelta(days=age),
        )
        for i, (title, content, task, rrf, age, type_) in enumerate(rows)
    ]
    q = tokens(" ".join(query))
    got, parts = top_results(pool, q, q, None, NOW, limit, batch)
    assert [c.id for c in got] == [c.id for c in _every_candidate_scored(pool, q, q, limit)]
    for c in got:  # each result reports the terms scoring it alone gives
        assert parts[c.id] == terms(c, q, q, None, NOW)
