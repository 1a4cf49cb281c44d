"""Embedding throughput of the offline default (numpy MiniLM) beside sentence-transformers.

Texts are generated (seeded) at the lengths the pipeline embeds: passages of one turn (most 30 to
120 WordPiece tokens, a tail up to the 256-token window) and short decisions and insights. Both
embedders get the same texts; the reference column runs only where torch and
sentence-transformers are importable (the optional `bench` extra: `pip install -e '.[bench]'`);
without them the figure says so and only our throughput is measured. Throughput is the best of
`repeats` runs after a warm-up, the two embedders taking turns run by run, so a neighbour's burst
of load costs one repeat of one of them, not a whole column.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import numpy as np

from memory_pipeline.bench.report import Figure

Progress = Callable[[str], None]

_VOCAB = [
    "agent",
    "user",
    "session",
    "memory",
    "chunk",
    "vector",
    "index",
    "query",
    "postgres",
    "pgvector",
    "dagster",
    "asset",
    "partition",
    "sensor",
    "schedule",
    "retry",
    "timeout",
    "embedding",
    "cosine",
    "similarity",
    "tokenizer",
    "config",
    "migration",
    "schema",
    "table",
    "column",
    "function",
    "returns",
    "error",
    "warning",
    "fixed",
    "prefers",
    "always",
    "never",
    "the",
    "a",
    "of",
    "to",
    "in",
    "for",
    "with",
    "when",
    "after",
    "before",
    "because",
    "so",
    "that",
    "this",
    "it",
    "we",
    "they",
    "should",
    "must",
    "build",
    "test",
    "deploy",
    "commit",
    "branch",
    "merge",
    "rebase",
    "docker",
    "compose",
    "python",
    "numpy",
    "module",
    "class",
    "def",
    "import",
    "path",
    "file",
    "directory",
    "cache",
    "lock",
    "thread",
    "process",
    "server",
    "client",
    "request",
    "response",
    "latency",
    "throughput",
    "budget",
    "rollout",
    "feature",
    "flag",
    "review",
    "decided",
    "instead",
    "keep",
    "drop",
    "move",
    "rename",
    "split",
    "invoice",
    "customer",
    "billing",
]
_PUNCT = (".", ",", ";", ":", " (see logs).", " -> ok.", "!", "?", " `make test`.", " 42 ms.")

MIN_COSINE = 0.999  # issue 12: identical vectors
TARGET_RATIO = 1.0  # at least the reference's texts/s on the same machine


def make_texts(n: int, seed: int = 7) -> list[str]:
    """Deterministic passage-like texts: 70% one turn (25-90 words), 20% a short decision or
    insight (8-24 words), 10% a long turn (120-220 words, cut by the 256-token window)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.2:
            count = rng.randint(8, 24)
        elif roll < 0.9:
            count = rng.randint(25, 90)
        else:
            count = rng.randint(120, 220)
        words = [rng.choice(_VOCAB) for _ in range(count)]
        for i in range(6, len(words), rng.randint(7, 14)):
            words[i] += rng.choice(_PUNCT)
        texts.append(" ".join(words).capitalize())
    return texts


def throughput(fn: Callable[[list[str]], np.ndarray], texts: list[str], repeats: int) -> float:
    """Best-of-`repeats` texts/s after one warm-up call on a slice."""
    fn(texts[:16])
    best = float("inf")
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def reference_embedder() -> Callable[[list[str]], np.ndarray] | None:
    """sentence-transformers on the same model files, or None when it is not installed."""
    try:
        import torch  # noqa: F401
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    from memory_pipeline.embedding.minilm import default_model_dir

    model = SentenceTransformer(str(default_model_dir()), device="cpu")

    def embed(texts: list[str]) -> np.ndarray:
        return model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True
        ).astype(np.float32)

    return embed


def run(scale: int, progress: Progress, repeats: int = 3) -> list[Figure]:
    """`scale` is the number of texts (capped at 2,000: throughput settles long before)."""
    from memory_pipeline.embedding.minilm import get_minilm

    n = max(16, min(scale, 2_000))
    texts = make_texts(n)
    ours = get_minilm()
    lengths = ours.count_tokens(texts)
    progress(
        f"{n} texts, WordPiece tokens: median {int(np.median(lengths))}, "
        f"p90 {int(np.percentile(lengths, 90))}, max {max(lengths)} (window {ours.window_tokens})"
    )
    reference = reference_embedder()
    if reference is None:
        ours_rate = throughput(ours.embed, texts, repeats)
        progress(f"numpy MiniLM: {ours_rate:.1f} texts/s")
        figures = [Figure("numpy MiniLM throughput", round(ours_rate, 1), "texts/s")]
        progress(
            "torch / sentence-transformers not installed: reference column skipped "
            "(pip install -e '.[bench]' to measure it)"
        )
        figures.append(Figure("sentence-transformers (not installed: skipped)", 0, "texts/s"))
        return figures
    ours_rate = ref_rate = 0.0
    for _ in range(max(1, repeats)):  # alternate, so both see the same spells of load
        ours_rate = max(ours_rate, throughput(ours.embed, texts, 1))
        ref_rate = max(ref_rate, throughput(reference, texts, 1))
        progress(f"numpy MiniLM {ours_rate:.1f}, sentence-transformers {ref_rate:.1f} texts/s")
    cosines = np.sum(ours.embed(texts) * reference(texts), axis=1)
    ratio = ours_rate / ref_rate
    progress(f"sentence-transformers: {ref_rate:.1f} texts/s; ratio {ratio:.2f}")
    figures = [
        Figure("numpy MiniLM throughput", round(ours_rate, 1), "texts/s"),
        Figure("sentence-transformers + torch throughput", round(ref_rate, 1), "texts/s"),
        Figure(
            "numpy / torch throughput",
            round(ratio, 2),
            "x",
            f">= {TARGET_RATIO:g}x",
            ratio >= TARGET_RATIO,
        ),
        Figure(
            "min cosine numpy vs torch",
            round(float(cosines.min()), 6),
            "",
            f">= {MIN_COSINE}",
            bool(cosines.min() >= MIN_COSINE),
        ),
    ]
    return figures
