"""search, context and the MCP server when the database cannot serve them (issue 13).

Each failure is one line that says whether trying again can help: a server that is down is
temporary, a missing role or database or a schema older than the code is not, and says what to run.
Under load, MCP tool calls wait in line for a connection, and "busy" is said only while the
database answers. (A refused password needs a server that asks for one:
memory_pipeline_tests/external/ covers it.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from mcp import Client

from memory_pipeline.db.migrate import discover, migrate
from memory_pipeline_tests.conftest import create_database, drop_database
from memory_pipeline_tests.external.cluster import free_port
from memory_pipeline_tests.support.memories import add_memory
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

pytestmark = pytest.mark.anyio
CLI = str(Path(sys.executable).parent / "memory-pipeline")


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


async def call(pool: ReaderPool, embedder: QueryEmbedder, tool: str, args: dict) -> str:
    async with Client(build_server(pool=pool, embedder=embedder)) as c:
        r = await c.call_tool(tool, args)
    assert r.is_error is True
    return r.content[0].text  # type: ignore[union-attr]


@pytest.fixture
def old_schema_url(pg_server, admin_url: str, tmp_path: Path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """memory_reader's URL of a database migrated only up to 012 (an older release's schema)."""
    older = tmp_path / "sql"
    older.mkdir()
    for m in discover():
        if m.version <= "012":
            shutil.copy(m.path, older / m.filename)
    name = create_database(admin_url)
    migrate(pg_server.uri(name), sql_dir=older)
    yield pg_server.uri(name, user="memory_reader")
    drop_database(admin_url, name)


def test_search_against_a_server_that_is_down_is_one_line() -> None:
    # Finding 5: a traceback used to end `search` here.
    port = free_port()
    result = cli("search", "token bucket", DATABASE_URL=f"postgresql://me@127.0.0.1:{port}/memory")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(
        f"error: cannot reach the memory database at 127.0.0.1:{port} (Connection refused)"
    )
    assert "try again" in result.stderr and len(result.stderr.splitlines()) == 1


def test_search_with_a_role_that_does_not_exist_says_what_to_fix(reader_url: str) -> None:
    url = reader_url.replace("memory_reader@", "nobody_here@")
    result = cli("search", "token bucket", MEMORY_READER_URL=url)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert 'error: role "nobody_here" does not exist on that server' in result.stderr
    assert "point MEMORY_READER_URL at the read-only role memory_reader" in result.stderr


def test_a_schema_older_than_the_code_is_named_with_the_command_that_fixes_it(
    old_schema_url: str,
) -> None:
    first_missing = next(m.filename for m in discover() if m.version > "012")
    for command in (["search", "token bucket"], ["context", "rate limits"]):
        result = cli(*command, MEMORY_READER_URL=old_schema_url)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith(
            f"error: the memory database's schema is older than this program ({first_missing}"
        )
        assert "run `memory-pipeline db migrate`" in result.stderr


async def test_mcp_tells_permanent_from_temporary_at_once(
    old_schema_url: str, reader_url: str, embedder: QueryEmbedder
) -> None:
    # A schema too old: permanent, with the command; not "try again later".
    text = await call(ReaderPool(old_schema_url), embedder, "memory_search", {"query": "x"})
    assert "the memory database cannot be used: the memory database's schema is older" in text
    assert "try again" not in text

    # A role that does not exist: permanent, and said at once (the pool used to retry for 10 s
    # and then call it "unavailable right now").
    started = time.monotonic()
    missing = reader_url.replace("memory_reader@", "nobody_here@")
    text = await call(ReaderPool(missing), embedder, "memory_list", {})
    assert "cannot be used: the serving role does not exist" in text
    assert "nobody_here" not in text
    # A server that is down: temporary.
    down = f"postgresql://memory_reader@127.0.0.1:{free_port()}/memory"
    text = await call(ReaderPool(down), embedder, "memory_list", {})
    assert text.endswith(
        "the memory database is unavailable right now: the database server does not answer "
        "(unreachable); check that the server is running, then try again"
    )
    assert time.monotonic() - started < 5


async def test_busy_only_while_the_database_answers(
    reader_url: str, conn: psycopg.Connection, embedder: QueryEmbedder
) -> None:
    add_memory(conn, "Token bucket", "We rate limit with a token bucket in PostgreSQL.")
    pool = ReaderPool(reader_url, max_size=1, timeout=0.5)
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with pool.connection():
            held.set()
            release.wait(10)

    try:
        server = build_server(pool=pool, embedder=embedder)
        async with Client(server) as c:
            await c.call_tool("memory_list", {})  # opens the pool
            holder = threading.Thread(target=hold)
            holder.start()
            held.wait(5)
            r = await c.call_tool("memory_list", {})
            assert r.is_error is True
            text = r.content[0].text  # type: ignore[union-attr]
            assert "the memory server is busy (all 1 connections stayed in use for 0s)" in text
            assert "unavailable" not in text
            release.set()
            holder.join(5)
            # A call that has to wait, waits (up to the pool's timeout), then answers.
            release.clear()
            held.clear()
            holder = threading.Thread(target=hold)
            holder.start()
            held.wait(5)
            threading.Timer(0.2, release.set).start()
            r = await c.call_tool("memory_list", {})
            assert r.is_error is False
            holder.join(5)
    finally:
        release.set()
        pool.close()
