"""Vectors computed once per process and reused by the next ingest step.

Why: the semantic pass embeds every turn for segmentation, and the passage step then embedded
the same turn again as its passage, so ingest ran the model twice per turn (about 40% of its
time). A segment's passage is one turn rendered by `passages.turn_text`, with no heading, so the
semantic pass now embeds exactly that text, and both steps embed through `embed_reusing`: the
passage step finds the turn's vector here instead of running the model a second time. What a
passage vector embeds does not change.

The cache belongs to one embedder object (the process-wide MiniLM of `get_minilm`), keyed by the
text's SHA-256, so a vector is only reused for the same text in the same model. It lives only in
this process (the ingest job runs its steps in one process: `in_process_executor`) and is bounded
(least recently used out first, EMBED_REUSE_MAX_VECTORS); a miss just embeds. `embedder.embed`
itself never caches, so throughput benchmarks still measure the model.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from memory_pipeline import tuning
from memory_pipeline.embedding.embedder import Embedder


class VectorCache:
    """A bounded least-recently-used map from a text's SHA-256 to its vector."""

    def __init__(self, max_vectors: int) -> None:
        self.max_vectors = max_vectors
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, key: bytes) -> np.ndarray | None:
        with self._lock:
            vector = self._vectors.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._vectors.move_to_end(key)
            self.hits += 1
            return vector

    def put(self, key: bytes, vector: np.ndarray) -> None:
        if self.max_vectors <= 0:
            return
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.max_vectors:
                self._vectors.popitem(last=False)


_caches: weakref.WeakKeyDictionary[object, VectorCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def cache_of(embedder: Embedder) -> VectorCache:
    """The cache of this embedder object (created on first use)."""
    with _caches_lock:
        cache = _caches.get(embedder)
        if cache is None:
            cache = _caches[embedder] = VectorCache(tuning.EMBED_REUSE_MAX_VECTORS)
        return cache


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def embed_reusing(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """`embedder.embed(texts)`, running the model only for texts it has not embedded lately.

    Returns float32 (len(texts), dims) in input order; repeated texts are embedded once.
    """
    if isinstance(texts, str):
        raise TypeError("embed_reusing() takes a sequence of strings, not a single string")
    cache = cache_of(embedder)
    out = np.empty((len(texts), embedder.dims), dtype=np.float32)
    keys = [_key(text) for text in texts]
    missing: dict[bytes, list[int]] = {}
    for i, key in enumerate(keys):
        vector = cache.get(key)
        if vector is None:
            missing.setdefault(key, []).append(i)
        else:
            out[i] = vector
    if missing:
        firsts = [rows[0] for rows in missing.values()]
        vectors = np.asarray(embedder.embed([texts[i] for i in firsts]), dtype=np.float32)
        if vectors.shape != (len(firsts), embedder.dims):
            raise ValueError(
                f"{embedder.space} returned vectors of shape {vectors.shape} for {len(firsts)} "
                "texts"
            )
        for (key, rows), vector in zip(missing.items(), vectors, strict=True):
            out[rows] = vector
            cache.put(key, vector.copy())
    return out
