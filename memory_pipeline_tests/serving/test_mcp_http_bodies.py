"""Malformed request bodies over the real streamable HTTP transport (uvicorn on a free port, the
app `memory-pipeline mcp --transport http` serves): every one gets a 4xx JSON-RPC error, never a
5xx (issue 31, must-have 7).

JSON nested deeper than the server parses (100,000 `[`) used to end in a RecursionError and a
500; hypothesis then throws generated junk (bytes, broken JSON, deep nesting, JSON-RPC look-alikes
with odd ids, methods and params) at an open session.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx2
import psycopg
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline import tuning
from memory_pipeline_tests.serving.test_mcp_http import HEADERS, INIT, TOKEN
from memory_pipeline_tests.support.memories import add_memory
from serving.mcp.http import MCP_PATH, http_app
from serving.mcp.http_guard import nested_deeper_than
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

PARSE_ERROR = -32700


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def url(reader_url: str, conn: psycopg.Connection, embedder: QueryEmbedder) -> Iterator[str]:
    add_memory(conn, "Rate limits", "Token bucket in PostgreSQL.")
    pool = ReaderPool(reader_url)
    port = _free_port()
    app = http_app(build_server(pool=pool, embedder=embedder, token=TOKEN))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", server_header=False)
    )
    thread = threading.Thread(target=server.run, name="mcp-http-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the MCP server did not start within 30 s"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}{MCP_PATH}"
    finally:
        server.should_exit = True
        thread.join(30)
        pool.close()


def _session(http: httpx2.Client, url: str) -> dict[str, str]:
    r = http.post(url, json=INIT, headers=HEADERS)
    assert r.status_code == 200, r.text
    headers = HEADERS | {
        "mcp-session-id": r.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert http.post(url, json=note, headers=headers).status_code == 202
    return headers


def _error(r: httpx2.Response) -> dict:
    assert r.headers["content-type"].startswith("application/json"), r.text[:300]
    message = r.json()
    assert message["jsonrpc"] == "2.0" and "error" in message, message
    return message["error"]


def test_json_nested_deeper_than_the_server_parses_is_a_400_parse_error(url: str) -> None:
    deep = b"[" * 100_000
    with httpx2.Client(timeout=60) as http:
        headers = _session(http, url)
        cases = {
            "bare": deep,
            "closed": deep + b"]" * 100_000,
            "objects": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
            "in the arguments": (
                b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"memory_search",'
                b'"arguments":{"query":' + deep + b"}}}"
            ),
        }
        for name, body in cases.items():
            for with_session in (headers, HEADERS):  # before and after a session exists
                r = http.post(url, content=body, headers=with_session)
                assert r.status_code == 400, (name, r.status_code, r.text[:300])
                error = _error(r)
                assert error["code"] == PARSE_ERROR, (name, error)
                assert f"nested deeper than {tuning.MCP_JSON_MAX_DEPTH}" in error["message"]
        # Nesting the server accepts still works: a search whose query is a nested list is an
        # argument error from the tool, not a transport failure.
        nested = {"query": json.loads("[" * 20 + "]" * 20)}
        body = {"jsonrpc": "2.0", "id": 6, "method": "tools/call"}
        body["params"] = {"name": "memory_search", "arguments": nested}
        r = http.post(url, json=body, headers=headers)
        assert r.status_code == 200, r.text[:300]
        assert '"isError":true' in r.text.replace(" ", "")


_LEAF = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
_JSON = st.recursive(
    _LEAF,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
_METHODS = st.sampled_from(
    ["tools/call", "tools/list", "ping", "initialize", "resources/list", "nope", ""]
) | st.text(max_size=12)
_TOOLS = st.sampled_from(
    ["memory_search", "memory_read", "memory_list", "memory_context", "memory_timeline", "x"]
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


_BRACKETY_TEXT = st.text(alphabet='[]{}"\\\\ax', max_size=12)
_NESTED = st.recursive(
    _LEAF | _BRACKETY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_BRACKETY_TEXT, inner, max_size=3),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None, database=None)
@given(value=_NESTED, limit=st.integers(min_value=0, max_value=8), ascii_only=st.booleans())
def test_the_depth_scan_counts_brackets_outside_strings(
    value: object, limit: int, ascii_only: bool
) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert nested_deeper_than(body, limit) == (_depth(value) > limit)


@st.composite
def _rpc(draw: st.DrawFn) -> bytes:
    message: dict[str, object] = {"jsonrpc": draw(st.sampled_from(["2.0", "1.0", 2]))}
    if draw(st.booleans()):
        message["id"] = draw(_JSON)
    message["method"] = draw(_METHODS)
    if draw(st.booleans()):
        message["params"] = draw(
            st.fixed_dictionaries({"name": _TOOLS, "arguments": _JSON}) | _JSON
        )
    return json.dumps(message).encode()


@st.composite
def _deep(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(min_value=tuning.MCP_JSON_MAX_DEPTH - 2, max_value=5_000))
    opener = draw(st.sampled_from([b"[", b'{"k":']))
    closed = draw(st.booleans())
    closer = (b"]" if opener == b"[" else b"}") * depth if closed else b""
    return opener * depth + b"0" + closer


def _mangle(body: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(min_value=0, max_value=max(len(body) - 1, 0)).map(
        lambda i: body[:i] + b'\x00\xff"\\ud800[' + body[i:]
    )


_BODIES = (
    st.binary(max_size=200)
    | _JSON.map(lambda v: json.dumps(v).encode())
    | _rpc()
    | _rpc().flatmap(_mangle)
    | _deep()
    | st.sampled_from(
        [
            b"",
            b"{",
            b'{"jsonrpc":"2.0","id":1,"method":"ping"',
            b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_search",'
            b'"arguments":{"query":"a\\ud800b\\u0000"}}}',
            b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
            b"\xef\xbb\xbf{}",
        ]
    )
)


def test_generated_malformed_bodies_never_get_a_5xx(url: str) -> None:
    with httpx2.Client(timeout=60) as http:
        headers = _session(http, url)

        @settings(
            max_examples=400,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            database=None,
        )
        @given(body=_BODIES, session=st.booleans())
        def post(body: bytes, session: bool) -> None:
            r = http.post(url, content=body, headers=headers if session else HEADERS)
            assert r.status_code < 500, (body[:200], r.status_code, r.text[:300])

        post()
