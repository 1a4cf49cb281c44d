"""Ingest runs the model once per turn: the passage step reuses the semantic pass's vectors,
those of the turns and of their messages."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import psycopg

from memory_pipeline import tuning
from memory_pipeline.bench.ingest import _START, generate
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import SourceRoots
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.passages import turn_messages, turn_text
from memory_pipeline.embedding.reuse import VectorCache, embed_reusing, span_vectors_reusing
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
from memory_pipeline.semantic.process import process_window

SENTENCES = [
    "The rate limiter keeps its token buckets in a Postgres table now.",
    "Redis was only used for the limiter, so it can be dropped.",
    "Backups are encrypted with age before they leave the host.",
    "The nightly dump takes four minutes on the staging database.",
    "We moved the invoice rendering into a background worker.",
    "WeasyPrint blocked the web process for several seconds per PDF.",
    "The flaky test was a race between two fixtures sharing a port.",
    "Pinning the port per worker fixed the race in continuous integration.",
]


class CountingEmbedder:
    """The real MiniLM, recording every text the model is asked to embed."""

    def __init__(self) -> None:
        self.inner = get_minilm()
        self.space = self.inner.space
        self.dims = self.inner.dims
        self.texts: list[str] = []

    @property
    def window_tokens(self) -> int:
        return self.inner.window_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        self.texts.extend(texts)
        return self.inner.embed_spans(texts, spans)


def test_passage_step_reuses_the_semantic_pass_vectors(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    imports = tmp_path / "imports"
    imports.mkdir()
    generate(imports, 12, SENTENCES)
    roots = SourceRoots(
        codex_home=tmp_path / "no-codex",
        claude_home=tmp_path / "no-claude",
        import_dir=imports,
        kind="real",
    )
    start, end = _START.date(), _START.date() + timedelta(days=90)
    capture_window(conn, roots.connectors(), start, end)
    embedder = CountingEmbedder()
    process_window(conn, OfflineRulesBackend(embedder=embedder), start, end, 0)
    rows = conn.execute(
        "SELECT prompt_speaker, prompt, outcome_speaker, outcome FROM agent_turns"
    ).fetchall()
    turns = [turn_text(*row) for row in rows]
    messages = {m for row in rows for m in turn_messages(*row)}
    semantic_calls = len(embedder.texts)
    assert len(turns) == 12 and semantic_calls == 12  # segmentation embeds each turn once

    report = embed_window(conn, embedder, start, end)
    passage_step = embedder.texts[semantic_calls:]
    assert not set(turns) & set(passage_step), "a turn was embedded a second time"
    # The messages' vectors came out of the same runs of the model.
    assert report.pieces_embedded == 24 and not messages & set(passage_step)
    # ...and every turn became one passage whose stored vector is the model's for its text.
    rows = conn.execute(
        "SELECT p.text, e.embedding FROM memory_passages p"
        " JOIN passage_embeddings e ON e.passage_id = p.id WHERE p.heading = ''"
    ).fetchall()
    assert sorted(text for text, _ in rows) == sorted(turns)
    fresh = get_minilm().embed([text for text, _ in rows])
    stored = np.vstack([vector.to_numpy() for _, vector in rows])
    assert np.min(np.sum(fresh * stored, axis=1)) > 0.9999


class Model:
    space, dims = "test:model:2", 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)


def test_embed_reusing_runs_the_model_only_for_new_texts() -> None:
    model = Model()
    first = embed_reusing(model, ["aa", "b", "aa"])
    assert model.calls == [["aa", "b"]]  # a repeated text is embedded once
    assert first.tolist() == [[2.0, 1.0], [1.0, 1.0], [2.0, 1.0]]
    again = embed_reusing(model, ["b", "ccc"])
    assert model.calls[1:] == [["ccc"]]
    assert again.tolist() == [[1.0, 1.0], [3.0, 1.0]]
    assert embed_reusing(Model(), ["b"]).tolist() == [[1.0, 1.0]]  # each embedder its own cache


class SpanModel(Model):
    """A model that pools spans in context: a span's vector is (its length, the text's); one
    past its "window" of 8 characters gets a zero row."""

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        self.calls.append(list(texts))
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32), [
            np.asarray(
                [[float(b - a), float(len(t))] if b <= 8 else [0.0, 0.0] for a, b in s],
                dtype=np.float32,
            )
            for t, s in zip(texts, spans, strict=True)
        ]


def test_span_vectors_come_from_the_run_that_embedded_their_text() -> None:
    model = SpanModel()
    embed_reusing(model, ["ab cd"], [[(0, 2), (3, 5)]])
    assert span_vectors_reusing(model, [("ab cd", (3, 5)), ("ab cd", (0, 2))]).tolist() == [
        [2.0, 5.0],
        [2.0, 5.0],
    ]
    assert model.calls == [["ab cd"]]  # no second run of the model
    # A span not seen before: its text is run once for all its spans asked for together.
    got = span_vectors_reusing(model, [("xyz w", (0, 3)), ("ab cd", (0, 2)), ("xyz w", (4, 5))])
    assert got.tolist() == [[3.0, 5.0], [2.0, 5.0], [1.0, 5.0]]
    assert model.calls[1:] == [["xyz w"]]
    # A span the model could not read in its text (past its window) is read alone.
    assert span_vectors_reusing(model, [("long text", (5, 9))]).tolist() == [[4.0, 1.0]]
    assert model.calls[2:] == [["long text"], ["text"]]


def test_a_span_past_the_window_is_read_alone_after_its_text_was_cached() -> None:
    """The semantic pass caches a turn's span vectors; one past the window came back as a zero
    row, and the passage step must read that span alone, not store the zero row."""
    model = SpanModel()
    embed_reusing(model, ["long text"], [[(0, 4), (5, 9)]])
    got = span_vectors_reusing(model, [("long text", (5, 9)), ("long text", (0, 4))])
    assert got.tolist() == [[4.0, 1.0], [4.0, 9.0]]
    assert model.calls == [["long text"], ["text"]]
    assert span_vectors_reusing(model, [("long text", (5, 9))]).tolist() == [[4.0, 1.0]]
    assert model.calls[2:] == []  # read alone once, then cached


def test_an_embedder_that_cannot_pool_spans_embeds_each_span_alone() -> None:
    model = Model()  # like Ollama: one vector per text
    got = span_vectors_reusing(model, [("ab cde", (3, 6)), ("ab cde", (0, 2))])
    assert got.tolist() == [[3.0, 1.0], [2.0, 1.0]]
    assert model.calls == [["cde", "ab"]]


def test_vector_cache_is_bounded_least_recently_used_first() -> None:
    cache = VectorCache(2)
    for key in (b"a", b"b"):
        cache.put(key, np.zeros(2, dtype=np.float32))
    assert cache.get(b"a") is not None  # "a" is now the most recently used
    cache.put(b"c", np.zeros(2, dtype=np.float32))
    assert len(cache) == 2 and cache.get(b"b") is None and cache.get(b"a") is not None
    # A 10,000-turn ingest reuses every turn and its two messages.
    assert tuning.EMBED_REUSE_MAX_VECTORS >= 30_000
