"""The MCP server over streamable HTTP, in process: exact Host/Origin checks, every JSON-RPC id
answered, and concurrent tool calls that all answer (issue 13, finding 7).

scripts/bench_mcp_load.py runs the 200-call version against a real server and prints p50/p95.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_pipeline_tests.support.memories import add_memory
from serving.mcp.http import http_app, transport_security
from serving.mcp.http_guard import HostPolicy, parse_host, parse_origin
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8765"
TOKEN = "h" * 43
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@pytest.fixture
def pool(reader_url: str, conn: psycopg.Connection) -> Iterator[ReaderPool]:
    for i in range(12):
        add_memory(conn, f"Rate limits {i}", f"Token bucket number {i} lives in PostgreSQL.")
    p = ReaderPool(reader_url)  # the defaults: tuning.MCP_POOL_*
    yield p
    p.close()


@pytest.fixture
async def app(pool: ReaderPool, embedder: QueryEmbedder) -> AsyncIterator[object]:
    server = build_server(pool=pool, embedder=embedder, token=TOKEN)
    application = http_app(server)
    async with server.session_manager.run():
        yield application


def client(app: object) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE)


# --- Host and Origin ----------------------------------------------------------------------------
def test_headers_are_parsed_before_they_are_compared() -> None:
    assert parse_host("localhost:8765") == ("localhost", 8765)
    assert parse_host("[::1]:8765") == ("[::1]", 8765)
    assert parse_host("localhost:18765.evil.com") is None
    assert parse_host("localhost:99999") is None
    assert parse_host("evil.com@localhost") is None
    assert parse_origin("http://localhost:1@evil.com") is None
    assert parse_origin("HTTP://LocalHost:6274") == ("http", "localhost", 6274)
    assert parse_origin("http://localhost:6274/path") is None
    policy = HostPolicy.from_patterns(["localhost:*", "mem.lan"], ["https://mem.lan"])
    assert policy.host_allowed("localhost:1") and policy.host_allowed("MEM.LAN")
    assert not policy.host_allowed("localhost") and not policy.host_allowed("mem.lan:8765")
    assert policy.origin_allowed("https://mem.lan") and policy.origin_allowed(None)
    assert not policy.origin_allowed("http://mem.lan") and not policy.origin_allowed("null")


async def test_host_and_origin_are_matched_exactly(app: object) -> None:
    async with client(app) as http:
        ok = await http.post("/mcp", json=INIT, headers=HEADERS)
        assert ok.status_code == 200
        r = await http.post(
            "/mcp", json=INIT, headers=HEADERS | {"Host": "localhost:18765.evil.com"}
        )
        assert r.status_code == 421
        r = await http.post(
            "/mcp", json=INIT, headers=HEADERS | {"Origin": "http://localhost:1@evil.com"}
        )
        assert r.status_code == 403
        r = await http.post(
            "/mcp", json=INIT, headers=HEADERS | {"Origin": "http://localhost:6274"}
        )
        assert r.status_code == 200
        r = await http.post("/mcp", json=INIT, headers=HEADERS | {"Origin": "https://localhost:1"})
        assert r.status_code == 403  # the scheme counts too


def test_allowed_hosts_for_a_remote_bind_are_exact() -> None:
    security = transport_security("0.0.0.0", allow_remote=True, allowed_hosts=["mem.lan"])
    policy = HostPolicy.from_patterns(security.allowed_hosts, security.allowed_origins)
    assert policy.host_allowed("mem.lan:8765") and policy.host_allowed("mem.lan")
    assert not policy.host_allowed("mem.lan.evil.com:8765")
    assert not policy.host_allowed("mem.lan:8765.evil.com")
    assert policy.origin_allowed("https://mem.lan") and policy.origin_allowed("http://mem.lan:80")
    assert not policy.origin_allowed("https://mem.lan.evil.com")


# --- JSON-RPC ids -------------------------------------------------------------------------------
async def _session(http: httpx2.AsyncClient) -> dict[str, str]:
    r = await http.post("/mcp", json=INIT, headers=HEADERS)
    assert r.status_code == 200
    headers = HEADERS | {
        "mcp-session-id": r.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post("/mcp", json=note, headers=headers)).status_code == 202
    return headers


def _messages(response: httpx2.Response) -> list[dict]:
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    return [
        json.loads(line[5:])
        for line in response.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


@pytest.mark.parametrize(
    ("request_id", "status", "answered_id", "error"),
    [
        ("abc-1", 200, "abc-1", None),
        (7, 200, 7, None),
        (2**40, 200, 2**40, None),
        (7.0, 200, 7, None),  # an integral number is that integer
        (7.5, 400, 7.5, "a fractional id is not supported"),
        ({"a": 1}, 400, None, "the id must be a string or a number"),
        ([1], 400, None, "the id must be a string or a number"),
        (True, 400, None, "the id must be a string or a number"),
        (None, 400, None, "the id must be a string or a number"),
    ],
)
async def test_every_request_id_gets_an_answer(
    app: object, request_id: object, status: int, answered_id: object, error: str | None
) -> None:
    async with client(app) as http:
        headers = await _session(http)
        body = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
        r = await http.post("/mcp", content=json.dumps(body), headers=headers)
        assert r.status_code == status, r.text
        [message] = _messages(r)
        assert message["jsonrpc"] == "2.0" and message["id"] == answered_id
        if error is None:
            assert "result" in message
        else:
            assert message["error"]["code"] == -32600 and error in message["error"]["message"]


async def test_an_unauthenticated_request_with_a_bad_id_still_gets_401(app: object) -> None:
    async with client(app) as http:
        body = {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}
        anonymous = {k: v for k, v in HEADERS.items() if k != "Authorization"}
        r = await http.post("/mcp", content=json.dumps(body), headers=anonymous)
        assert r.status_code == 401


# --- load ---------------------------------------------------------------------------------------
async def test_fifty_concurrent_searches_over_http_all_answer(app: object) -> None:
    http = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app),
        base_url=BASE,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=120,
    )
    results: list[object] = []

    async with http, Client(streamable_http_client(f"{BASE}/mcp", http_client=http)) as c:

        async def one(i: int) -> None:
            r = await c.call_tool("memory_search", {"query": f"token bucket {i}", "limit": 5})
            results.append(r)

        async with anyio.create_task_group() as group:
            for i in range(50):
                group.start_soon(one, i)
    errors = [r.content[0].text for r in results if r.is_error]  # type: ignore[attr-defined]
    assert len(results) == 50 and errors == []
