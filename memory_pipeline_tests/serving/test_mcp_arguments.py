"""What every MCP tool does with arguments it cannot use (issue 31, must-have 7), through the SDK's
real client in process (which hands strings over as they are, lone surrogates included), on a real
database.

- Query text (memory_search `query`, memory_context `task`) with a NUL byte or a lone surrogate
  is searched with U+FFFD in their place; every other text argument (ids, cursors, filter values,
  projects) is refused in one line naming the argument. Today both crash: a traceback in the log
  and a bare "Error executing tool".
- An argument the tool does not take (`tokens=300`) is refused with the names it does take.
- `sources` lists the values that work (every registered source, then dream_cycle) and an
  unknown one (`codex_task`) is refused with that list.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.passages import sync_passages
from memory_pipeline.models.sources import MEMORY_SOURCES
from memory_pipeline_tests.support.memories import add_memory
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

pytestmark = pytest.mark.anyio

SOURCES = list(MEMORY_SOURCES)
assert {"codex", "claude_code", "chat_import", "dream_cycle", "article"} <= set(SOURCES)
QUERY_TEXT = {("memory_search", "query"), ("memory_context", "task")}
BAD = {"NUL": "token\x00bucket", "surrogate": "token\ud800bucket"}


@pytest.fixture
def ids(conn: psycopg.Connection) -> dict[str, str]:
    found = {
        "codex": add_memory(
            conn,
            "Rate limits use a token bucket",
            "We decided on a token bucket in Postgres for API rate limits.",
            type="decision",
            project="api",
            source_type="codex",
        ),
        "claude_code": add_memory(
            conn,
            "Token bucket refill",
            "The token bucket refills ten tokens a second.",
            project="api",
            source_type="claude_code",
        ),
    }
    sync_passages(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    return found


@pytest.fixture
async def client(pool: ReaderPool, embedder: QueryEmbedder) -> AsyncIterator[Client]:
    async with Client(build_server(pool=pool, embedder=embedder)) as c:
        yield c


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def required(tool: str, ids: dict[str, str]) -> dict[str, Any]:
    """The least a call of each tool needs to pass validation."""
    return {
        "memory_search": {"query": "token bucket"},
        "memory_context": {"task": "token bucket"},
        "memory_read": {"memory_id": ids["codex"]},
        "memory_graph": {"memory_id": ids["codex"]},
        "memory_timeline": {"project": "api"},
    }.get(tool, {})


def takes_text(schema: dict[str, Any]) -> tuple[bool, bool]:
    """(accepts a string, accepts a list of strings) by a property's JSON schema."""
    options = schema.get("anyOf", [schema])
    single = any(o.get("type") == "string" for o in options)
    listed = any(o.get("type") == "array" and o["items"].get("type") == "string" for o in options)
    return single, listed


def free_text(schema: dict[str, Any]) -> bool:
    """A string the tool takes as text, not one of fixed values or a date."""
    options = schema.get("anyOf", [schema])
    items = [o.get("items", o) for o in options if o.get("type") in ("string", "array")]
    return any("enum" not in i and "format" not in i and "$ref" not in i for i in items)


def assert_one_line_error(result: Any, tool: str) -> str:
    assert result.is_error is True
    text = text_of(result)
    assert "\n" not in text, text
    assert text.startswith(f"Error executing tool {tool}: "), text
    assert len(text) > len(f"Error executing tool {tool}: ") + 10, text
    return text


def assert_no_crash_logged(caplog: pytest.LogCaptureFixture) -> None:
    crashes = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not crashes, [r.getMessage() for r in crashes]


# --- NUL bytes and lone surrogates -----------------------------------------------------------
async def test_query_text_with_nul_or_a_lone_surrogate_is_searched_with_a_replacement(
    ids: dict[str, str], client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    for kind, text in BAD.items():
        r = await client.call_tool("memory_search", {"query": text.replace("bucket", " bucket")})
        assert r.is_error is False, (kind, text_of(r))
        assert r.structured_content["query"] == "token\ufffd bucket", kind
        found = [h["id"] for h in r.structured_content["results"]]
        assert ids["codex"] in found, kind
        r = await client.call_tool("memory_context", {"task": text.replace("bucket", " bucket")})
        assert r.is_error is False, (kind, text_of(r))
        assert "Rate limits use a token bucket" in text_of(r), kind
    assert_no_crash_logged(caplog)


async def test_every_other_text_argument_refuses_nul_and_lone_surrogates_in_one_line(
    ids: dict[str, str], client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    tools = (await client.list_tools()).tools
    checked = set()
    for tool in tools:
        for name, schema in tool.input_schema["properties"].items():
            single, listed = takes_text(schema)
            if not (single or listed) or (tool.name, name) in QUERY_TEXT:
                continue
            for kind, text in BAD.items():
                value: Any = text if single else ["api", text]
                args = required(tool.name, ids) | {name: value}
                r = await client.call_tool(tool.name, args)
                message = assert_one_line_error(r, tool.name)
                assert name in message, message
                if free_text(schema):
                    word = "NUL byte" if kind == "NUL" else "lone surrogate"
                    assert word in message, message
                checked.add((tool.name, name))
    # Every text argument of every tool was tried (ids, cursor, filters, projects, dates, ...).
    assert {
        ("memory_read", "memory_id"),
        ("memory_graph", "memory_id"),
        ("memory_list", "cursor"),
        ("memory_list", "projects"),
        ("memory_list", "tags"),
        ("memory_search", "sources"),
        ("memory_search", "project_context"),
        ("memory_timeline", "project"),
        ("memory_timeline", "around"),
        ("memory_brief", "day"),
    } <= checked
    assert_no_crash_logged(caplog)


_NASTY = st.text(
    alphabet=st.sampled_from(["\x00", "\ud800", "\udfff", "\x1b", "\u200b", "a", " ", "é", "["]),
    min_size=1,
    max_size=12,
)


async def test_generated_text_with_nul_and_surrogates_never_crashes_a_tool(
    ids: dict[str, str], client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Generated strings in a query and in an id: a result or a one-line error, nothing else."""

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        text=_NASTY,
        call=st.sampled_from(
            [
                ("memory_search", "query"),
                ("memory_context", "task"),
                ("memory_read", "memory_id"),
                ("memory_list", "cursor"),
                ("memory_list", "tags"),
            ]
        ),
    )
    def one(text: str, call: tuple[str, str]) -> None:
        tool, name = call
        value: Any = [text] if name == "tags" else text
        r = anyio.from_thread.run(client.call_tool, tool, {name: value})
        if r.is_error:
            message = assert_one_line_error(r, tool)
            assert message != f"Error executing tool {tool}", message

    await anyio.to_thread.run_sync(one)
    assert_no_crash_logged(caplog)


# --- unknown arguments -----------------------------------------------------------------------
async def test_unknown_arguments_are_refused_with_the_names_the_tool_takes(
    ids: dict[str, str], client: Client
) -> None:
    tools = (await client.list_tools()).tools
    assert len(tools) == 8
    for tool in tools:
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        names = list(tool.input_schema["properties"])
        r = await client.call_tool(tool.name, required(tool.name, ids) | {"tokens": 300})
        message = assert_one_line_error(r, tool.name)
        assert "unknown argument 'tokens'" in message, message
        for name in names:
            assert name in message, (tool.name, name, message)
    r = await client.call_tool("memory_context", {"task": "token bucket", "tokens": 300, "k": 1})
    message = assert_one_line_error(r, "memory_context")
    assert "unknown arguments 'k', 'tokens'" in message and "token_budget" in message, message
    # The names it takes still work.
    r = await client.call_tool("memory_context", {"task": "token bucket", "token_budget": 300})
    assert r.is_error is False, text_of(r)


# --- sources ---------------------------------------------------------------------------------
async def test_sources_lists_the_values_that_work_and_refuses_others(
    ids: dict[str, str], client: Client
) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("memory_search", "memory_context", "memory_list"):
        schema = tools[name].input_schema["properties"]["sources"]
        [listed] = [o for o in schema["anyOf"] if o.get("type") == "array"]
        assert listed["items"]["enum"] == SOURCES, name
        for value in SOURCES:
            assert value in schema["description"], (name, schema["description"])
        assert "codex_task" not in schema["description"]
    for name, args in (
        ("memory_search", {"query": "token bucket"}),
        ("memory_context", {"task": "token bucket"}),
        ("memory_list", {}),
    ):
        r = await client.call_tool(name, args | {"sources": ["codex_task"]})
        message = assert_one_line_error(r, name)
        assert "sources" in message, message
        for value in SOURCES:
            assert f"'{value}'" in message, message
    r = await client.call_tool("memory_list", {"sources": ["claude_code"]})
    assert [m["id"] for m in r.structured_content["items"]] == [ids["claude_code"]]
    r = await client.call_tool("memory_search", {"query": "token bucket", "sources": ["codex"]})
    assert {h["id"] for h in r.structured_content["results"]} == {ids["codex"]}
