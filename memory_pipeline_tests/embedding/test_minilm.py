"""The numpy MiniLM embedder against stored sentence-transformers (torch) vectors.

data/minilm_reference.json comes from data/make_minilm_reference.py, run once in a venv with
torch + sentence-transformers; neither is needed here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.embedding.embedder import Embedder, space_dims
from memory_pipeline.embedding.minilm import MiniLMEmbedder, get_minilm
from memory_pipeline.embedding.passages import message_spans

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    items = json.loads(REFERENCE.read_text(encoding="utf-8"))["items"]
    return [item["text"] for item in items], np.array(
        [item["vector"] for item in items], dtype=np.float32
    )


def _with_batch_size(embedder: MiniLMEmbedder, batch_size: int) -> MiniLMEmbedder:
    # A shallow copy shares the loaded weights, so this costs nothing.
    other = copy.copy(embedder)
    other.batch_size = batch_size
    return other


def test_reference_set_covers_the_edge_cases(reference: tuple[list[str], np.ndarray]) -> None:
    texts, _ = reference
    items = json.loads(REFERENCE.read_text(encoding="utf-8"))["items"]
    assert "" in texts
    assert any("\n" in t for t in texts)
    assert max(item["tokens_untruncated"] for item in items) > 256


def test_matches_sentence_transformers(
    embedder: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    texts, expected = reference
    cosines = np.sum(embedder.embed(texts) * expected, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.999, (
        f"min cosine vs torch reference {cosines.min():.6f} for text #{worst} "
        f"{texts[worst][:60]!r}; all: {np.round(cosines, 6).tolist()}"
    )


def test_shape_dtype_and_normalization(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["one", "two words", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vectors).all()


def test_empty_input(embedder: MiniLMEmbedder) -> None:
    for empty in ([], ()):
        vectors = embedder.embed(empty)
        assert vectors.shape == (0, 384)
        assert vectors.dtype == np.float32


def test_implements_embedder_protocol(embedder: MiniLMEmbedder) -> None:
    as_protocol: Embedder = embedder
    assert as_protocol.space == "local:all-minilm-l6-v2:384"
    assert space_dims(as_protocol.space) == as_protocol.dims == 384


def test_order_preserved_across_very_different_lengths(
    embedder: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    texts, expected = reference
    # Long, short, empty, medium interleaved: internal length-sorting must be undone.
    permutation = np.random.default_rng(3).permutation(len(texts))
    together = embedder.embed([texts[i] for i in permutation])
    np.testing.assert_allclose(together, expected[permutation], atol=1e-4)
    for row, i in enumerate(permutation):
        np.testing.assert_allclose(together[row], embedder.embed([texts[i]])[0], atol=1e-5)


def test_batch_size_does_not_change_vectors(
    embedder: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    texts, _ = reference
    texts = texts + [f"note {i}: " + "word " * (i * 7) for i in range(20)]
    one = _with_batch_size(embedder, 1).embed(texts)
    sixteen = _with_batch_size(embedder, 16).embed(texts)
    np.testing.assert_allclose(one, sixteen, atol=1e-5)


def test_text_beyond_256_tokens_is_truncated(embedder: MiniLMEmbedder) -> None:
    long = "the pipeline embeds every chunk of the transcript " * 60  # ~480 tokens
    a, b = embedder.embed([long, long + " and then something completely different"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_paraphrase_is_closer_than_unrelated(embedder: MiniLMEmbedder) -> None:
    anchor, paraphrase, unrelated = embedder.embed(
        [
            "The database connection was refused because Postgres is not running.",
            "Could not connect to PostgreSQL: the server isn't up.",
            "My grandmother bakes apple pie every Sunday afternoon.",
        ]
    )
    assert anchor @ paraphrase > anchor @ unrelated + 0.3


def test_missing_model_files_name_the_package(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"requirements-nodeps\.txt") as excinfo:
        MiniLMEmbedder(model_dir=tmp_path)
    assert "model.safetensors" in str(excinfo.value)


def test_rejects_a_bare_string(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_get_minilm_is_a_shared_instance() -> None:
    assert get_minilm() is get_minilm()


def test_a_span_is_read_in_the_context_of_its_text(embedder: MiniLMEmbedder) -> None:
    # The same short reply to two questions: pooled in its turn, it says what it answers.
    reply = "Jonas: Yes, every Sunday."
    turns = [
        f"Mara: Do you still go climbing at the quarry?\n{reply}",
        f"Mara: Is the bakery on Elm Street open on weekends?\n{reply}",
    ]
    vectors, (climbing, bakery) = embedder.embed_spans(
        turns, [[(len(t) - len(reply), len(t))] for t in turns]
    )
    np.testing.assert_allclose(vectors, embedder.embed(turns), atol=1e-6)  # the texts' own
    assert climbing.shape == (1, 384) and abs(float(np.linalg.norm(climbing[0])) - 1) < 1e-5
    question = embedder.embed(["How often does Jonas go climbing?"])[0]
    assert climbing[0] @ question > bakery[0] @ question + 0.1


def test_a_span_outside_the_window_or_blank_gets_a_zero_vector(embedder: MiniLMEmbedder) -> None:
    long = "the pipeline embeds every chunk of the transcript " * 60  # ~480 tokens
    _, (spans,) = embedder.embed_spans([long], [[(0, 50), (len(long) - 50, len(long)), (3, 3)]])
    assert float(np.linalg.norm(spans[0])) > 0.99
    assert not spans[1].any() and not spans[2].any()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(messages=st.lists(st.text(min_size=0, max_size=120), min_size=1, max_size=3))
def test_any_turn_s_messages_get_a_vector_each_in_context(
    embedder: MiniLMEmbedder, messages: list[str]
) -> None:
    # Whatever the messages hold (control characters, emoji, combining marks, nothing), each
    # one's span is exactly that message in the turn's text, and its vector is a unit vector
    # of finite numbers, or a zero row when no word token of it lies in the window.
    text = "\n".join(messages)
    spans = message_spans(messages)
    assert [text[a:b] for a, b in spans] == messages
    vectors, (of_spans,) = embedder.embed_spans([text], [spans])
    np.testing.assert_allclose(vectors, embedder.embed([text]), atol=1e-6)
    assert np.isfinite(of_spans).all()
    norms = np.linalg.norm(of_spans, axis=1)
    assert all(abs(n - 1) < 1e-4 or n == 0 for n in norms)
