"""Benchmark the numpy MiniLM embedder (a benchmark, not a test).

Prints texts/s of memory_pipeline.embedding.minilm.MiniLMEmbedder on 200 synthetic
memory-like texts of ~60-120 tokens at batch sizes 8/16/32. When torch and
sentence-transformers are importable (they are not project dependencies; use a throwaway venv
with the repo on PYTHONPATH), runs the same texts through SentenceTransformer side by side and
prints the throughput ratio and the minimum cosine between the two outputs.

    .venv/bin/python scripts/bench_minilm.py
    PYTHONPATH=. /tmp/torchvenv/bin/python scripts/bench_minilm.py
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import numpy as np

from memory_pipeline.embedding.minilm import MiniLMEmbedder, default_model_dir

# Vocabulary for synthetic note-like texts (technical words plus filler).
_VOCAB = """
agent user session memory chunk vector index query postgres pgvector dagster asset partition
sensor schedule retry timeout embedding cosine similarity tokenizer config migration schema
table column function returns error warning fixed prefers always never the a of to in for
with when after before because so that this it we they should must build test deploy commit
branch merge rebase docker compose python numpy module class def import path file directory
cache lock thread process server client request response
"""
_WORDS = _VOCAB.split()
_PUNCT = (".", ",", ";", ":", " (see logs).", " -> ok.", "!", "?")


def make_texts(n: int, seed: int = 7) -> list[str]:
    """Deterministic note-like texts, 40-80 words each (~60-120 WordPiece tokens)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(40, 80))]
        for i in range(8, len(words), rng.randint(7, 14)):
            words[i] += rng.choice(_PUNCT)
        texts.append(" ".join(words).capitalize())
    return texts


def throughput(fn: Callable[[list[str]], np.ndarray], texts: list[str], repeats: int) -> float:
    """Best-of-`repeats` texts/s (after one warm-up call on a slice)."""
    fn(texts[:16])
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="number of texts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 16, 32])
    args = parser.parse_args()

    texts = make_texts(args.n)
    ours = MiniLMEmbedder()
    lengths = [len(e.ids) for e in ours._tokenizer.encode_batch(texts)]
    print(
        f"{len(texts)} texts, tokens incl. [CLS]/[SEP]: min {min(lengths)}, "
        f"mean {np.mean(lengths):.0f}, max {max(lengths)}"
    )

    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        st = None
        print("torch / sentence-transformers not importable: numpy embedder only")
    else:
        st = SentenceTransformer(str(default_model_dir()), device="cpu")
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    for bs in args.batch_sizes:
        ours.batch_size = bs
        ours_rate = throughput(ours.embed, texts, args.repeats)
        line = f"batch {bs:>3}: numpy {ours_rate:6.1f} texts/s"
        if st is not None:

            def st_embed(batch: list[str], bs: int = bs) -> np.ndarray:
                return st.encode(batch, batch_size=bs, normalize_embeddings=True)

            st_rate = throughput(st_embed, texts, args.repeats)
            min_cos = float(np.min(np.sum(ours.embed(texts) * st_embed(texts), axis=1)))
            line += (
                f" | torch {st_rate:6.1f} texts/s | numpy/torch {ours_rate / st_rate:.2f}"
                f" | min cosine {min_cos:.7f}"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
