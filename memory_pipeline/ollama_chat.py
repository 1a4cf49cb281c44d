"""The one structured chat call every stage's Ollama backend makes, and the model check before it.

Semantic pass, entities, relationships judge, dream cycle and briefing editor each ask Ollama for
one JSON object matching a pydantic schema (Ollama's `format` field). `chat_json` sends it and
returns the response, or raises `OllamaCallFailed` with a one-line reason (what failed, where);
each backend wraps that reason in its own error and records the batch as failed.
"""

from __future__ import annotations

from typing import Any

import httpx
import ollama
from pydantic import ValidationError


class OllamaCallFailed(Exception):
    """No usable answer: timeout, unreachable server, HTTP error, truncated or empty reply."""


def chat_json(
    client: ollama.Client,
    *,
    host: str,
    model: str,
    messages: list[dict[str, str]],
    schema: dict[str, Any],
    options: dict[str, Any],
    timeout_s: float,
) -> ollama.ChatResponse:
    """One chat call constrained to `schema`; the reply's content is non-empty and complete."""
    try:
        response = client.chat(model=model, messages=messages, format=schema, options=options)
    except httpx.TimeoutException as exc:
        raise OllamaCallFailed(f"no answer within {timeout_s:g}s ({type(exc).__name__})") from exc
    except ollama.ResponseError as exc:
        raise OllamaCallFailed(f"HTTP {exc.status_code} from {host}: {exc.error}") from exc
    except ollama.RequestError as exc:  # the client refused to send the request
        raise OllamaCallFailed(f"invalid request: {exc.error}") from exc
    except (ConnectionError, httpx.HTTPError) as exc:
        raise OllamaCallFailed(f"cannot reach Ollama at {host}: {exc}") from exc
    except (ValidationError, ValueError) as exc:  # a reply that is not a chat response
        raise OllamaCallFailed(f"unexpected reply from Ollama: {exc}") from exc
    if response.done_reason == "length":
        raise OllamaCallFailed(
            "answer truncated at the context/prediction limit (done_reason=length)"
        )
    if not (response.message.content or "").strip():
        raise OllamaCallFailed("empty answer")
    return response


def ollama_model_available(host: str, model: str, timeout_s: float) -> bool:
    """True when Ollama at `host` answers and has `model` installed as a chat-capable model.

    Uses `/api/tags` (the installed models; `name` and `name:latest` are the same model) and then
    `/api/show` to check the model can complete text (an embedding-only model cannot chat).
    Never raises: an unreachable or misbehaving server means "not available".
    """
    try:
        with ollama.Client(host=host, timeout=timeout_s) as client:
            listed = client.list()
            if not any(_same_model(m.model or "", model) for m in listed.models):
                return False
            shown = client.show(model)
    except (ollama.ResponseError, ConnectionError, httpx.HTTPError, ValidationError, ValueError):
        return False
    caps = shown.capabilities
    return caps is None or "completion" in caps


def _same_model(a: str, b: str) -> bool:
    def norm(name: str) -> str:
        return name if ":" in name else f"{name}:latest"

    return norm(a) == norm(b)
