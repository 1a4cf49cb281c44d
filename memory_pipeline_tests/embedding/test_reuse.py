"""Ingest runs the model once per turn: the passage step reuses the semantic pass's vectors."""

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
from memory_pipeline.embedding.passages import turn_text
from memory_pipeline.embedding.reuse import VectorCache, embed_reusing
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
    turns = [
        turn_text(*row)
        for row in conn.execute(
            "SELECT prompt_speaker, prompt, outcome_speaker, outcome FROM agent_turns"
        ).fetchall()
    ]
    semantic_calls = len(embedder.texts)
    assert len(turns) == 12 and semantic_calls == 12  # segmentation embeds each turn once

    embed_window(conn, embedder, start, end)
    passage_step = embedder.texts[semantic_calls:]
    assert not set(turns) & set(passage_step), "a turn was embedded a second time"
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


def test_vector_cache_is_bounded_least_recently_used_first() -> None:
    cache = VectorCache(2)
    for key in (b"a", b"b"):
        cache.put(key, np.zeros(2, dtype=np.float32))
    assert cache.get(b"a") is not None  # "a" is now the most recently used
    cache.put(b"c", np.zeros(2, dtype=np.float32))
    assert len(cache) == 2 and cache.get(b"b") is None and cache.get(b"a") is not None
    assert tuning.EMBED_REUSE_MAX_VECTORS >= 10_000  # a 10,000-turn ingest reuses every turn
