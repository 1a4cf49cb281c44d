"""A real local HTTP server speaking the parts of Ollama's API the `ollama` Python client calls.

    with running_fake_ollama(embed_dims={"bge-m3": 1024}) as fake:
        fake.script_chat('{"segments": []}', Delay(5), HttpError(500, "boom"))
        client = ollama.Client(host=fake.host, timeout=1)

Endpoints: `POST /api/chat` (answers from a per-test script), `GET /api/tags`, `POST /api/show`,
`GET /api/version`, `GET /api/ps`, `POST /api/embed` (deterministic L2-normalized vectors derived
from a hash of each input, dimension per model) and `HEAD/GET /` ("Ollama is running").

Every request is recorded (`fake.requests`, `fake.chat_requests`, `fake.embed_requests`) with its
parsed JSON body, so tests can assert the `format` schema or the number of calls. Scripts:
`script_chat(...)` / `script_embed(...)` queue entries consumed one per request: a `str` (chat
content), `Delay(seconds, then=...)` (sleep, then answer), or `HttpError(status, message)`. With
an empty chat script the server answers HTTP 500; with an empty embed script it embeds normally.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DEFAULT_CHAT_MODEL = "qwen2.5:7b-instruct"
DEFAULT_EMBED_MODEL = "bge-m3:latest"


@dataclass(frozen=True)
class Delay:
    """Sleep `seconds` before answering; then answer with `then` (chat content, an HttpError, or
    None = the normal answer for embed / HTTP 500 for chat)."""

    seconds: float
    then: str | HttpError | None = None


@dataclass(frozen=True)
class HttpError:
    """Answer with this HTTP status and Ollama's error body `{"error": message}`."""

    status: int
    message: str = "internal error"


ScriptEntry = str | Delay | HttpError


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any  # parsed JSON body, or None


@dataclass
class FakeOllama:
    """State of one running fake server (thread-safe)."""

    chat_models: list[str] = field(default_factory=lambda: [DEFAULT_CHAT_MODEL])
    embed_dims: dict[str, int] = field(default_factory=lambda: {DEFAULT_EMBED_MODEL: 1024})
    version: str = "0.12.6"
    host: str = ""
    requests: list[RecordedRequest] = field(default_factory=list)
    _chat_script: deque[ScriptEntry] = field(default_factory=deque)
    _embed_script: deque[ScriptEntry] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)

    # --- scripting -------------------------------------------------------------------------

    def script_chat(self, *entries: ScriptEntry) -> None:
        with self._lock:
            self._chat_script.extend(entries)

    def script_embed(self, *entries: ScriptEntry) -> None:
        with self._lock:
            self._embed_script.extend(entries)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == "/api/chat"]

    @property
    def embed_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == "/api/embed"]

    def pending_chat(self) -> int:
        with self._lock:
            return len(self._chat_script)

    # --- internals -------------------------------------------------------------------------

    def _record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append(RecordedRequest(method, path, body))

    def _next(self, script: deque[ScriptEntry]) -> ScriptEntry | None:
        with self._lock:
            return script.popleft() if script else None

    def _all_models(self) -> list[str]:
        return [*self.chat_models, *self.embed_dims]

    def _find_model(self, name: str) -> str | None:
        def norm(n: str) -> str:
            return n if ":" in n else f"{n}:latest"

        for m in self._all_models():
            if norm(m) == norm(name):
                return m
        return None

    def embed_dim(self, model: str) -> int | None:
        found = self._find_model(model)
        return self.embed_dims.get(found) if found else None


def fake_vector(text: str, dims: int) -> list[float]:
    """The deterministic unit vector the fake server returns for `text`."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    vec = np.random.default_rng(seed).standard_normal(dims)
    vec /= np.linalg.norm(vec)
    return [float(x) for x in vec]


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _model_entry(name: str, embed: bool) -> dict[str, Any]:
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 4_683_087_332 if not embed else 1_157_672_605,
        "digest": digest,
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": "bert" if embed else "qwen2",
            "families": ["bert"] if embed else ["qwen2"],
            "parameter_size": "566.70M" if embed else "7.6B",
            "quantization_level": "F16" if embed else "Q4_K_M",
        },
    }


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeOllama/1.0"
    fake: FakeOllama  # set on the subclass created per server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # --- plumbing --------------------------------------------------------------------------

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw.decode("utf-8", "replace")

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": message})

    def _delay(self, entry: ScriptEntry | None) -> tuple[bool, ScriptEntry | None]:
        """Apply Delay entries; returns (still_connected, the entry to answer with)."""
        while isinstance(entry, Delay):
            if self.fake._stopping.wait(entry.seconds):
                return False, None
            entry = entry.then
        return True, entry

    # --- routes ----------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self.fake._record("HEAD", self.path, None)
        self._send(200, b"Ollama is running", "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        self.fake._record("GET", self.path, None)
        fake = self.fake
        if self.path in ("/", ""):
            self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
        elif self.path == "/api/version":
            self._send(200, {"version": fake.version})
        elif self.path == "/api/tags":
            models = [_model_entry(m, False) for m in fake.chat_models]
            models += [_model_entry(m, True) for m in fake.embed_dims]
            self._send(200, {"models": models})
        elif self.path == "/api/ps":
            self._send(200, {"models": []})
        else:
            self._error(404, "404 page not found")

    def do_POST(self) -> None:
        body = self._body()
        self.fake._record("POST", self.path, body)
        if not isinstance(body, dict):
            self._error(400, "invalid request body")
            return
        if self.path == "/api/chat":
            self._chat(body)
        elif self.path == "/api/embed":
            self._embed(body)
        elif self.path == "/api/show":
            self._show(body)
        else:
            self._error(404, "404 page not found")

    def _chat(self, body: dict[str, Any]) -> None:
        fake = self.fake
        model = str(body.get("model") or "")
        if fake._find_model(model) is None or model in fake.embed_dims:
            self._error(404, f"model '{model}' not found")
            return
        connected, entry = self._delay(fake._next(fake._chat_script))
        if not connected:
            return
        if entry is None:
            self._error(500, "fake ollama: no scripted chat answer left")
            return
        if isinstance(entry, HttpError):
            self._error(entry.status, entry.message)
            return
        content = str(entry)
        final = {
            "model": model,
            "created_at": _now(),
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_234_567_890,
            "load_duration": 12_345_678,
            "prompt_eval_count": 321,
            "prompt_eval_duration": 123_456_789,
            "eval_count": max(1, len(content) // 4),
            "eval_duration": 987_654_321,
        }
        if body.get("stream", True) is False:
            self._send(200, final)
            return
        chunk = {**final, "done": False, "message": {"role": "assistant", "content": content}}
        for key in ("done_reason", "total_duration", "load_duration", "prompt_eval_count"):
            chunk.pop(key, None)
        for key in ("prompt_eval_duration", "eval_count", "eval_duration"):
            chunk.pop(key, None)
        last = {**final, "message": {"role": "assistant", "content": ""}}
        lines = (json.dumps(chunk) + "\n" + json.dumps(last) + "\n").encode("utf-8")
        self._send(200, lines, "application/x-ndjson")

    def _embed(self, body: dict[str, Any]) -> None:
        fake = self.fake
        model = str(body.get("model") or "")
        dims = fake.embed_dim(model)
        connected, entry = self._delay(fake._next(fake._embed_script))
        if not connected:
            return
        if isinstance(entry, HttpError):
            self._error(entry.status, entry.message)
            return
        if dims is None:
            self._error(404, f'model "{model}" not found, try pulling it first')
            return
        inputs = body.get("input", "")
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if body.get("dimensions"):
            dims = int(body["dimensions"])
        self._send(
            200,
            {
                "model": model,
                "embeddings": [fake_vector(str(t), dims) for t in texts],
                "total_duration": 14_143_917,
                "load_duration": 1_019_500,
                "prompt_eval_count": sum(max(1, len(str(t)) // 4) for t in texts),
            },
        )

    def _show(self, body: dict[str, Any]) -> None:
        fake = self.fake
        model = str(body.get("model") or body.get("name") or "")
        found = fake._find_model(model)
        if found is None:
            self._error(404, f"model '{model}' not found")
            return
        embed = found in fake.embed_dims
        entry = _model_entry(found, embed)
        arch = "bert" if embed else "qwen2"
        info: dict[str, Any] = {"general.architecture": arch}
        if embed:
            info[f"{arch}.embedding_length"] = fake.embed_dims[found]
        self._send(
            200,
            {
                "license": "Apache License 2.0",
                "modelfile": f"FROM {found}\n",
                "parameters": "temperature 0.7" if not embed else "",
                "template": "{{ .Prompt }}",
                "details": entry["details"],
                "model_info": info,
                "capabilities": ["embedding"] if embed else ["completion", "tools"],
                "modified_at": "2025-01-01T00:00:00Z",
            },
        )


@contextlib.contextmanager
def running_fake_ollama(
    chat_models: list[str] | None = None,
    embed_dims: dict[str, int] | None = None,
) -> Iterator[FakeOllama]:
    """Start a fake Ollama on 127.0.0.1 (random port) in a thread; stop it on exit."""
    fake = FakeOllama()
    if chat_models is not None:
        fake.chat_models = list(chat_models)
    if embed_dims is not None:
        fake.embed_dims = dict(embed_dims)
    handler = type("FakeOllamaHandler", (_Handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    fake.host = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-ollama", daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        fake._stopping.set()  # wake any handler sleeping in a Delay
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
