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

The same holds for the vector of each message of a turn (`span_vectors_reusing`): the MiniLM
pools a message's own tokens out of its turn's forward pass (`MiniLMEmbedder.embed_spans`), so
the semantic pass, which runs that pass anyway, caches them too and the passage step's message
vectors cost no model run either.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

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


Span = tuple[int, int]  # [start, end) in characters of a text


def _span_key(text_key: bytes, span: Span) -> bytes:
    return text_key + b"[%d:%d]" % span


@runtime_checkable
class SpanEmbedder(Protocol):
    """An embedder that can pool a part of a text in the text's own forward pass (the MiniLM).
    One that cannot (Ollama's API returns one vector per text) embeds each part alone."""

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[Span]]
    ) -> tuple[np.ndarray, list[np.ndarray]]: ...


def embed_reusing(
    embedder: Embedder, texts: Sequence[str], spans: Sequence[Sequence[Span]] | None = None
) -> np.ndarray:
    """`embedder.embed(texts)`, running the model only for texts it has not embedded lately.
    With `spans` (character spans of each text), a SpanEmbedder's vectors of them from the
    same run are cached too, for `span_vectors_reusing`.

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
        pools = spans is not None and isinstance(embedder, SpanEmbedder)
        wanted = [list(spans[i]) if pools else [] for i in firsts]  # type: ignore[index]
        vectors, span_vectors = _run(embedder, [texts[i] for i in firsts], wanted)
        for (key, rows), vector, text_spans, of_spans in zip(
            missing.items(), vectors, wanted, span_vectors, strict=True
        ):
            out[rows] = vector
            cache.put(key, vector.copy())
            for span, span_vector in zip(text_spans, of_spans, strict=True):
                cache.put(_span_key(key, span), span_vector.copy())
    return out


def span_vectors_reusing(embedder: Embedder, wanted: Sequence[tuple[str, Span]]) -> np.ndarray:
    """The vector of each (text, span): cached by an earlier `embed_reusing(..., spans)` or
    `span_vectors_reusing`, else computed with every span of that text asked for here in one
    run of the model. An embedder that is no SpanEmbedder embeds each span's text alone, and
    so does the MiniLM for a span past its window. Returns float32 (len(wanted), dims) in
    input order."""
    if not isinstance(embedder, SpanEmbedder):
        return embed_reusing(embedder, [text[a:b] for text, (a, b) in wanted])
    cache = cache_of(embedder)
    out = np.empty((len(wanted), embedder.dims), dtype=np.float32)
    missing: dict[str, dict[Span, list[int]]] = {}
    for i, (text, span) in enumerate(wanted):
        vector = cache.get(_span_key(_key(text), span))
        if vector is None:
            missing.setdefault(text, {}).setdefault(span, []).append(i)
        else:
            out[i] = vector
    if missing:
        texts = list(missing)
        _, span_vectors = _run(embedder, texts, [list(missing[t]) for t in texts])
        for text, of_spans in zip(texts, span_vectors, strict=True):
            key = _key(text)
            for (span, rows), vector in zip(missing[text].items(), of_spans, strict=True):
                out[rows] = vector
                cache.put(_span_key(key, span), vector.copy())
    # A zero row, computed now or cached by the semantic pass: no token of the span was inside
    # the model's window. Read it alone, once, and cache that instead.
    unread = [i for i in range(len(wanted)) if not out[i].any()]
    if unread:
        parts = [wanted[i] for i in unread]
        alone = embed_reusing(embedder, [text[a:b] for text, (a, b) in parts])
        for i, (text, span), vector in zip(unread, parts, alone, strict=True):
            out[i] = vector
            cache.put(_span_key(_key(text), span), vector.copy())
    return out


def _run(
    embedder: Embedder, texts: list[str], spans: list[list[Span]]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """One run of the model over `texts`, pooling `spans` too (a SpanEmbedder), shapes
    checked."""
    if any(spans):
        vectors, span_vectors = embedder.embed_spans(texts, spans)  # type: ignore[attr-defined]
    else:
        vectors, span_vectors = embedder.embed(texts), [np.zeros((0, embedder.dims))] * len(texts)
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dims) or any(
        np.shape(v) != (len(s), embedder.dims) for v, s in zip(span_vectors, spans, strict=True)
    ):
        raise ValueError(
            f"{embedder.space} returned vectors of shape {vectors.shape} for {len(texts)} texts"
        )
    return vectors, [np.asarray(v, dtype=np.float32) for v in span_vectors]
