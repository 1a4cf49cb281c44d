"""mem_class, depth_score and encoding_context rules."""

from __future__ import annotations

import pytest

from memory_pipeline.semantic.classify import depth_score, encoding_context, mem_class


@pytest.mark.parametrize("memory_type", ["segment", "topic_segment", "correction"])
def test_segments_and_corrections_are_episodic(memory_type):
    assert (
        mem_class(memory_type, "Run `make migrate` first, then restart the worker.") == "episodic"
    )


@pytest.mark.parametrize(
    "text",
    [
        "We decided to use pgvector because it keeps vectors next to the rows they describe.",
        "Use Postgres SKIP LOCKED instead of Redis because we already operate Postgres.",
        "The root cause was a naive datetime in make_token, so tokens expired early on CI.",
    ],
)
def test_choices_and_lessons_are_semantic(text):
    assert mem_class("decision", text) == "semantic"
    assert mem_class("insight", text) == "semantic"


@pytest.mark.parametrize(
    "text",
    [
        "Run `make migrate` before starting the API.",
        "To regenerate the client, run the codegen script from the repo root.",
        "Always restart the worker after changing the queue settings.",
        "Install the hooks with `pre-commit install` after cloning.",
        "1. stop the worker\n2. drop the queue table\n3. start the worker",
        "First build the image, then push it to the registry.",
    ],
)
def test_how_tos_are_procedural(text):
    assert mem_class("insight", text) == "procedural"
    assert mem_class("decision", text) == "procedural"


def test_unknown_type_is_rejected():
    with pytest.raises(ValueError, match="unknown memory type"):
        mem_class("summary", "x")
    with pytest.raises(ValueError):
        depth_score("summary", "x")


def test_depth_is_bounded_and_rounded():
    for memory_type in ("segment", "decision", "insight", "correction"):
        for text in ("", "x", "because " * 500, "`a_b` 1.2.3 ValueError " * 40):
            score = depth_score(memory_type, text)
            assert 0.0 <= score <= 1.0
            assert score == round(score, 3)


def test_a_reason_adds_depth():
    without = depth_score("decision", "We decided to use pgvector for the embeddings table.")
    with_reason = depth_score(
        "decision",
        "We decided to use pgvector for the embeddings table because it keeps vectors in one "
        "database.",
    )
    assert with_reason > without


def test_specifics_add_depth():
    vague = depth_score("insight", "The problem was a setting in the service that was not right.")
    specific = depth_score(
        "insight",
        "The problem was `pool_size=5` in db.py: under 40 workers it raised TimeoutError.",
    )
    assert specific > vague


def test_thin_text_is_shallow_and_type_orders_the_base():
    assert depth_score("decision", "Use Redis.") < depth_score(
        "decision", "We decided to keep the retry budget at three attempts for every job."
    )
    same = "The team looked at the import job and the worker pool during the afternoon."
    assert depth_score("segment", same) < depth_score("correction", same)
    assert depth_score("correction", same) < depth_score("decision", same)
    assert depth_score("decision", same) == depth_score("insight", same)


def test_encoding_context():
    assert encoding_context("codex", "Fix flaky login", "Token clock skew", "Billing") == (
        "Codex CLI · project: Billing · task: Fix flaky login · topic: Token clock skew"
    )
    # Empty parts are skipped and a topic equal to the task is not repeated.
    assert encoding_context("claude_code", "Queue choice", "queue choice", None) == (
        "Claude Code · task: Queue choice"
    )
    assert encoding_context("chat_import", None, None, "  ") == "imported chat"
    long = encoding_context("codex", "word " * 40, None, None)
    assert len(long) < 90 and long.endswith("…")
