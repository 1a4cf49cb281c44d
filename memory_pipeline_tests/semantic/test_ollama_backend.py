"""The Ollama backend with the real `ollama` client against a local fake Ollama HTTP server."""

from __future__ import annotations

import json
import socket
import time

import pytest

from memory_pipeline.ollama_chat import ollama_model_available
from memory_pipeline.semantic.errors import SemanticPassError
from memory_pipeline.semantic.models import PassInput, PassResult, TurnInput
from memory_pipeline.semantic.ollama_backend import OllamaBackend, pass_result_schema
from memory_pipeline_tests.support.fake_ollama import (
    DEFAULT_CHAT_MODEL,
    Delay,
    HttpError,
    running_fake_ollama,
)

MODEL = DEFAULT_CHAT_MODEL


def _turn(ordinal: int, prompt: str, outcome: str) -> TurnInput:
    return TurnInput(ordinal=ordinal, prompt=prompt, outcome=outcome)


def _input(first: int = 0, tail: int = 0) -> PassInput:
    """A pass with `tail` tail-context turns followed by three new turns starting at `first`."""
    tail_turns = [
        _turn(first - tail + i, f"tail prompt {i}", f"tail outcome {i}") for i in range(tail)
    ]
    new = [
        _turn(first, "Why is the login test flaky?", "The token expiry uses the local clock."),
        _turn(first + 1, "Fix it with UTC.", "make_token now uses datetime.now(UTC)."),
        _turn(first + 2, "Unrelated: pick a queue.", "Postgres SKIP LOCKED fits."),
    ]
    return PassInput(
        task_title="Flaky login", source="codex", tail_context=tail_turns, new_turns=new
    )


def _answer(first: int = 0) -> dict:
    return {
        "segments": [
            {
                "first_ordinal": first,
                "last_ordinal": first + 1,
                "title": "Flaky login test caused by local clock",
                "memories": [
                    {
                        "type": "insight",
                        "title": "Token expiry used the local clock",
                        "content": "The login test was flaky because make_token computed token "
                        "expiry with the local clock instead of UTC.",
                        "supporting_ordinals": [first, first + 1],
                    }
                ],
            },
            {
                "first_ordinal": first + 2,
                "last_ordinal": first + 2,
                "title": "Queue choice for the email worker",
            },
        ],
        "corrections": [],
    }


@pytest.fixture
def fake():
    with running_fake_ollama() as server:
        yield server


def test_valid_answer_becomes_a_pass_result(fake):
    fake.script_chat(json.dumps(_answer()))
    backend = OllamaBackend(host=fake.host, model=MODEL, timeout_s=5)
    result = backend.run(_input())
    assert result == PassResult.model_validate(_answer())
    assert backend.name == f"ollama:{MODEL}"


def test_request_carries_schema_options_and_rendered_turns(fake):
    fake.script_chat(json.dumps(_answer(first=5)))
    backend = OllamaBackend(host=fake.host, model=MODEL, timeout_s=5)
    backend.run(_input(first=5, tail=2))
    [req] = fake.chat_requests
    body = req.body
    assert body["model"] == MODEL
    assert body["format"] == PassResult.model_json_schema() == pass_result_schema()
    assert body["stream"] is False
    assert body["options"]["temperature"] == 0
    system, user = body["messages"]
    assert system["role"] == "system" and "continues_tail" in system["content"]
    assert "standalone" in system["content"] and "WHY" in system["content"]
    assert user["role"] == "user"
    content = user["content"]
    # Tail turns are rendered as context, before the new turns, each with its ordinal.
    assert "PRIOR TAIL SEGMENT (turns 3-4)" in content
    assert content.index("[turn 3]") < content.index("NEW TURNS") < content.index("[turn 5]")
    assert "[turn 7]" in content and "first_ordinal=3" in content
    assert "Why is the login test flaky?" in content


def test_tail_continuation_answer_is_accepted(fake):
    answer = _answer(first=5)
    answer["segments"][0].update(first_ordinal=3, continues_tail=True)
    fake.script_chat(json.dumps(answer))
    result = OllamaBackend(fake.host, MODEL, 5).run(_input(first=5, tail=2))
    assert result.segments[0].continues_tail and result.segments[0].first_ordinal == 3


def _run_expecting_error(fake, *script, timeout_s: float = 5) -> SemanticPassError:
    fake.script_chat(*script)
    backend = OllamaBackend(host=fake.host, model=MODEL, timeout_s=timeout_s)
    with pytest.raises(SemanticPassError) as info:
        backend.run(_input())
    assert len(fake.chat_requests) == 1, "no internal retries"
    return info.value


def test_malformed_json_fails_the_pass(fake):
    err = _run_expecting_error(fake, '{"segments": [{"first_ordinal": 0,')
    assert "malformed JSON" in str(err)
    assert err.__cause__ is not None and err.cause is err.__cause__


def test_missing_field_fails_the_pass(fake):
    answer = _answer()
    del answer["segments"][0]["title"]
    err = _run_expecting_error(fake, json.dumps(answer))
    assert "schema" in str(err) and "title" in str(err)


def test_wrong_type_fails_the_pass(fake):
    answer = _answer()
    answer["segments"][0]["first_ordinal"] = "the first one"
    err = _run_expecting_error(fake, json.dumps(answer))
    assert "schema" in str(err)


def test_unknown_memory_type_fails_the_pass(fake):
    answer = _answer()
    answer["segments"][0]["memories"][0]["type"] = "summary"
    _run_expecting_error(fake, json.dumps(answer))


def test_segments_not_covering_the_turns_fail_the_pass(fake):
    answer = _answer()
    del answer["segments"][1]  # turn 2 is left uncovered
    err = _run_expecting_error(fake, json.dumps(answer))
    assert "structurally invalid" in str(err) and "expected 2" in str(err)


def test_memory_citing_a_turn_outside_its_segment_fails(fake):
    answer = _answer()
    answer["segments"][0]["memories"][0]["supporting_ordinals"] = [2]
    _run_expecting_error(fake, json.dumps(answer))


def test_timeout_fails_the_pass(fake):
    started = time.monotonic()
    err = _run_expecting_error(fake, Delay(3, json.dumps(_answer())), timeout_s=0.5)
    assert time.monotonic() - started < 2.5
    assert "no answer within 0.5s" in str(err)


def test_http_500_fails_the_pass(fake):
    err = _run_expecting_error(fake, HttpError(500, "llama runner process has terminated"))
    assert "HTTP 500" in str(err) and "llama runner" in str(err)


def test_unknown_model_fails_the_pass(fake):
    backend = OllamaBackend(host=fake.host, model="nope:1b", timeout_s=5)
    with pytest.raises(SemanticPassError, match="HTTP 404"):
        backend.run(_input())


def test_connection_error_fails_the_pass():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OllamaBackend(host=f"http://127.0.0.1:{port}", model=MODEL, timeout_s=2)
    with pytest.raises(SemanticPassError, match="cannot reach Ollama"):
        backend.run(_input())


def test_empty_answer_fails_the_pass(fake):
    _run_expecting_error(fake, "   ")


def test_error_mid_batch_fails_only_that_revision(fake):
    """Three task revisions, one chat call each; the second one's failure is its own."""
    fake.script_chat(
        json.dumps(_answer(first=0)),
        HttpError(500, "out of memory"),
        json.dumps(_answer(first=10)),
    )
    backend = OllamaBackend(host=fake.host, model=MODEL, timeout_s=5)
    outcomes: list[PassResult | SemanticPassError] = []
    for first in (0, 5, 10):
        try:
            outcomes.append(backend.run(_input(first=first)))
        except SemanticPassError as exc:
            outcomes.append(exc)
    assert isinstance(outcomes[0], PassResult) and outcomes[0].segments[0].first_ordinal == 0
    assert isinstance(outcomes[1], SemanticPassError) and "out of memory" in str(outcomes[1])
    assert isinstance(outcomes[2], PassResult) and outcomes[2].segments[0].first_ordinal == 10
    requests = fake.chat_requests
    assert len(requests) == 3, "exactly one chat call per revision"
    assert ["[turn 0]" in r.body["messages"][1]["content"] for r in requests] == [
        True,
        False,
        False,
    ]
    assert all(r.body["format"] == pass_result_schema() for r in requests)
    assert fake.pending_chat() == 0


def test_model_availability(fake):
    assert ollama_model_available(fake.host, MODEL, timeout_s=2)
    assert ollama_model_available(fake.host, "bge-m3", timeout_s=2) is False  # embedding only
    assert ollama_model_available(fake.host, "llama3.2:3b", timeout_s=2) is False
    paths = [r.path for r in fake.requests]
    assert "/api/tags" in paths and "/api/show" in paths


def test_model_availability_tag_normalization():
    with running_fake_ollama(chat_models=["llama3.2:latest"]) as fake:
        assert ollama_model_available(fake.host, "llama3.2", timeout_s=2)


def test_model_availability_when_server_is_down():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert ollama_model_available(f"http://127.0.0.1:{port}", MODEL, timeout_s=1) is False


def test_model_availability_with_no_models_installed():
    with running_fake_ollama(chat_models=[], embed_dims={}) as fake:
        assert ollama_model_available(fake.host, MODEL, timeout_s=1) is False


def test_fake_server_embed_endpoint_for_embedding_tests():
    """/api/embed gives deterministic unit vectors of the model's dimension (bge-m3: 1024)."""
    import numpy as np
    import ollama

    with running_fake_ollama(embed_dims={"bge-m3": 1024, "tiny": 8}) as fake:
        client = ollama.Client(host=fake.host, timeout=2)
        first = client.embed(model="bge-m3", input=["alpha", "beta"]).embeddings
        again = client.embed(model="bge-m3:latest", input="alpha").embeddings
        assert len(first) == 2 and len(first[0]) == 1024
        assert first[0] == again[0] and first[0] != first[1]
        assert abs(np.linalg.norm(first[1]) - 1.0) < 1e-9
        assert len(client.embed(model="tiny", input="x").embeddings[0]) == 8
        fake.script_embed(HttpError(503, "busy"))
        with pytest.raises(ollama.ResponseError) as info:
            client.embed(model="bge-m3", input="x")
        assert info.value.status_code == 503
        with pytest.raises(ollama.ResponseError):
            client.embed(model="missing", input="x")
        assert len(fake.embed_requests) == 5
