"""The MCP server over its real transports: stdio as a subprocess, streamable HTTP in process
(bearer token, Host and Origin checks), and the token file and bind rules behind them."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

import httpx2
import psycopg
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.passages import sync_passages
from memory_pipeline.errors import UserError
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline_tests.support.memories import add_memory
from serving.mcp.auth import TOKEN_FILE, load_or_create_token
from serving.mcp.http import http_app, transport_security
from serving.mcp.pool import ReaderPool
from serving.mcp.run import mcp_command
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8765"
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
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def memory_id(conn: psycopg.Connection) -> str:
    mid = add_memory(conn, "Stdio works", "The memory server answers over stdio and HTTP.")
    # Its passage, as the embedding asset cuts it (keyword search needs no vectors).
    sync_passages(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    return mid


# --- stdio -------------------------------------------------------------------------------------
async def test_stdio_subprocess(reader_url: str, memory_id: str, tmp_path: Path) -> None:
    # Exactly what the README tells Claude Code and Codex to launch.
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "memory-pipeline"),
        args=["mcp"],
        cwd=str(REPO_ROOT),
        # stdio_client passes only HOME, PATH, ...: the database settings go explicitly.
        env={"MEMORY_HOME": str(tmp_path), "MEMORY_READER_URL": reader_url},
    )
    async with Client(params) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert "memory_search" in names and "memory_read" in names
        r = await c.call_tool("memory_read", {"memory_id": memory_id})
        assert r.is_error is False
        assert r.structured_content["title"] == "Stdio works"
        assert f'<memory id="{memory_id}"' in r.content[0].text
        r = await c.call_tool("memory_search", {"query": "memory server stdio"})
        assert [h["id"] for h in r.structured_content["results"]] == [memory_id]
        r = await c.call_tool("memory_read", {"memory_id": "00000000-0000-0000-0000-000000000000"})
        assert r.is_error is True and "not found" in r.content[0].text


# --- streamable HTTP ---------------------------------------------------------------------------
@pytest.fixture
async def http(pool: ReaderPool, memory_id: str) -> AsyncIterator[tuple[object, str]]:
    token = "t" * 43
    server = build_server(pool=pool, embedder=QueryEmbedder("http://127.0.0.1:9"), token=token)
    app = http_app(server)
    async with server.session_manager.run():  # what the app's lifespan does under uvicorn
        yield app, token


async def test_http_requires_token_and_checks_host_and_origin(http) -> None:  # type: ignore[no-untyped-def]
    app, token = http
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        r = await client.post("/mcp", json=INIT, headers=HEADERS)
        assert r.status_code == 401
        assert r.headers["www-authenticate"].startswith("Bearer")
        wrong = {"Authorization": "Bearer " + "x" * 43}
        assert (await client.post("/mcp", json=INIT, headers=HEADERS | wrong)).status_code == 401
        r = await client.post("/mcp", json=INIT, headers=HEADERS | auth | {"Host": "evil.example"})
        assert r.status_code == 421
        r = await client.post(
            "/mcp", json=INIT, headers=HEADERS | auth | {"Origin": "http://evil.example"}
        )
        assert r.status_code == 403
        r = await client.post("/mcp", json=INIT, headers=HEADERS | auth)
        assert r.status_code == 200
        r = await client.post(
            "/mcp", json=INIT, headers=HEADERS | auth | {"Origin": "http://localhost:6274"}
        )
        assert r.status_code == 200


async def test_http_client_calls_tools_with_the_token(http, memory_id: str) -> None:  # type: ignore[no-untyped-def]
    app, token = http
    client = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app),
        base_url=BASE,
        headers={"Authorization": f"Bearer {token}"},
    )
    async with client, Client(streamable_http_client(f"{BASE}/mcp", http_client=client)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["memory_list"].annotations.read_only_hint is True
        r = await c.call_tool("memory_list", {})
        assert r.is_error is False
        assert [i["id"] for i in r.structured_content["items"]] == [memory_id]


async def test_remote_bind_keeps_the_checks(pool: ReaderPool, memory_id: str) -> None:
    token = "r" * 43
    server = build_server(pool=pool, embedder=QueryEmbedder("http://127.0.0.1:9"), token=token)
    app = http_app(server, "0.0.0.0", allow_remote=True, allowed_hosts=["mem.example"])
    auth = HEADERS | {"Authorization": f"Bearer {token}"}
    async with (
        server.session_manager.run(),
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url="http://mem.example:8765"
        ) as client,
    ):
        assert (await client.post("/mcp", json=INIT, headers=HEADERS)).status_code == 401
        assert (await client.post("/mcp", json=INIT, headers=auth)).status_code == 200
        r = await client.post("/mcp", json=INIT, headers=auth | {"Host": "evil.example:8765"})
        assert r.status_code == 421
        r = await client.post("/mcp", json=INIT, headers=auth | {"Origin": "https://evil.example"})
        assert r.status_code == 403
        r = await client.post("/mcp", json=INIT, headers=auth | {"Origin": "https://mem.example"})
        assert r.status_code == 200


def test_binds_beyond_loopback_must_be_asked_for() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        settings = transport_security(host)
        assert settings.enable_dns_rebinding_protection is True
        assert "evil.example" not in settings.allowed_hosts
    with pytest.raises(UserError, match="--allow-remote"):
        transport_security("0.0.0.0")
    with pytest.raises(UserError, match="--allowed-host"):
        transport_security("0.0.0.0", allow_remote=True)
    with pytest.raises(UserError, match="not a host name"):
        transport_security("0.0.0.0", allow_remote=True, allowed_hosts=["evil/ path"])
    settings = transport_security("192.168.1.5", allow_remote=True, allowed_hosts=["mem.lan"])
    assert settings.enable_dns_rebinding_protection is True
    assert {"mem.lan", "mem.lan:*"} <= set(settings.allowed_hosts)
    # The command refuses before it binds anything.
    with pytest.raises(UserError, match="--allow-remote"):
        mcp_command("http", "0.0.0.0", 8765, False, [])
    with pytest.raises(UserError, match="unknown transport"):
        mcp_command("sse", "127.0.0.1", 8765, False, [])


# --- the token file ------------------------------------------------------------------------------
def test_token_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    token = load_or_create_token(tmp_path)
    path = tmp_path / TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) >= 32 and path.read_text().strip() == token
    assert load_or_create_token(tmp_path) == token


def test_a_readable_or_linked_token_file_is_refused(tmp_path: Path) -> None:
    load_or_create_token(tmp_path)
    path = tmp_path / TOKEN_FILE
    path.chmod(0o644)
    with pytest.raises(UserError, match="chmod 600"):
        load_or_create_token(tmp_path)
    path.chmod(0o600)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    os.symlink(path, elsewhere / TOKEN_FILE)
    with pytest.raises(UserError, match="cannot read"):
        load_or_create_token(elsewhere)
    path.write_text("short\n")
    with pytest.raises(UserError, match="not hold a valid token"):
        load_or_create_token(tmp_path)
