"""The private tier: inherited from the task by MEMORY_PRIVATE rules, and hidden from search,
context packs, listings, timelines, the CLI and every MCP tool unless the caller opts in."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from mcp import Client
from typer.testing import CliRunner

from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.cli import app
from memory_pipeline.db.connection import connect
from memory_pipeline_tests.forget.data import GONE, World, build
from memory_pipeline_tests.forget.test_capture import ALL, chat, src, turns
from serving import browse
from serving.context_pack import context
from serving.models import SearchFilters
from serving.search import search

QUERY = "which passage text"


@pytest.fixture
def world(conn: psycopg.Connection) -> World:
    return build(conn, private_a=True)


def private_ids(conn: psycopg.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM memories WHERE private")}


def test_memories_inherit_the_tier_from_their_task_and_what_they_rest_on(
    conn: psycopg.Connection, world: World
) -> None:
    # Segment and decision rest on A's turns; both dreams rest on the decision.
    assert private_ids(conn) == {
        world.a.segment_memory,
        world.decision_a,
        world.dream_a,
        world.dream_ab,
    }
    conn.execute("UPDATE captured_tasks SET private = false WHERE id = %s", [world.a.id])
    assert private_ids(conn) == {world.dream_a, world.dream_ab}  # derived: stay until forgotten


def test_capture_sets_the_tier_by_rule_and_follows_a_changed_rule(
    conn: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat(tmp_path / "imports" / "a.jsonl", "chat-a", turns("word", 1))
    monkeypatch.setenv("MEMORY_PRIVATE", "source:chat_import")
    capture_window(conn, src(tmp_path).connectors(), *ALL)
    task_id, turn_id = conn.execute(
        "SELECT t.id, a.id FROM captured_tasks t JOIN agent_turns a ON a.task_id = t.id"
        " WHERE t.private"
    ).fetchone()  # type: ignore[misc]
    memory = conn.execute(
        "INSERT INTO memories (type, title, content, partition_day)"
        " VALUES ('segment', 't', 'c', '2026-10-05') RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    segment = conn.execute(
        "INSERT INTO topic_segments (task_id, first_ordinal, last_ordinal, title, memory_id)"
        " VALUES (%s, 0, 0, 't', %s) RETURNING id",
        [task_id, memory],
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
        " VALUES (%s, %s, %s, %s, 'segment')",
        [memory, turn_id, segment, task_id],
    )
    assert private_ids(conn) == {str(memory)}
    monkeypatch.setenv("MEMORY_PRIVATE", "")
    capture_window(conn, src(tmp_path).connectors(), *ALL)
    assert private_ids(conn) == set()


def test_search_context_listing_and_timeline_leave_private_memories_out(
    world: World, reader_url: str
) -> None:
    hidden = {world.a.segment_memory, world.decision_a, world.dream_a, world.dream_ab}
    with connect(reader_url, autocommit=True) as conn:
        for opt_in in (False, True):
            filters = SearchFilters(include_private=opt_in, statuses=["active"])
            response = search(conn, QUERY, embedder=None, limit=50, filters=filters)
            found = {str(h.id) for h in response.results}
            pack = context(conn, QUERY, 4000, embedder=None, filters=filters)
            listed = {str(m.id) for m in browse.list_memories(conn, filters, limit=50).items}
            tl = browse.timeline(
                conn,
                around=datetime(2026, 11, 30, 12, tzinfo=UTC),
                window_hours=48,
                filters=filters,
            )
            seen = found | listed | {str(m.id) for m in tl.items}
            text = pack.model_dump_json().lower()
            if opt_in:
                assert hidden <= seen and GONE in text
            else:
                assert not hidden & seen and GONE not in text
                assert world.b.segment_memory in found and world.b.segment_memory in listed


def test_every_mcp_tool_hides_the_private_tier_unless_the_server_opts_in(
    world: World, reader_url: str
) -> None:
    closed = anyio.run(mcp_outputs, reader_url, world, False)
    for tool, (error, text) in closed.items():
        if tool in ("memory_read private", "memory_graph private"):
            assert error and "not found" in text.lower(), (tool, text)
        else:
            assert not error and GONE not in text.lower(), (tool, text)
    assert "keepalive" in closed["memory_search"][1].lower()
    opened = anyio.run(mcp_outputs, reader_url, world, True)
    for tool in ("memory_search", "memory_list", "memory_read private", "memory_graph public"):
        assert GONE in opened[tool][1].lower(), tool


async def mcp_outputs(reader_url: str, world: World, include_private: bool) -> dict[str, Any]:
    from serving.mcp.pool import ReaderPool
    from serving.mcp.tools import build_server
    from serving.search import QueryEmbedder

    pool = ReaderPool(reader_url)
    out: dict[str, Any] = {}
    try:
        server = build_server(
            pool=pool, embedder=QueryEmbedder("http://127.0.0.1:9"), include_private=include_private
        )
        async with Client(server) as client:
            calls = {
                "memory_search": ("memory_search", {"query": QUERY, "limit": 50}),
                "memory_context": ("memory_context", {"task": QUERY, "token_budget": 4000}),
                "memory_list": ("memory_list", {"limit": 50}),
                "memory_timeline": (
                    "memory_timeline",
                    {"around": "2026-11-30T12:00:00Z", "window_hours": 48},
                ),
                "memory_read private": ("memory_read", {"memory_id": world.decision_a}),
                "memory_read public": ("memory_read", {"memory_id": world.b.segment_memory}),
                "memory_graph private": ("memory_graph", {"memory_id": world.decision_a}),
                "memory_graph public": (
                    "memory_graph",
                    {"memory_id": world.b.segment_memory, "depth": 2},
                ),
            }
            for name, (tool, args) in calls.items():
                result = await client.call_tool(tool, args)
                text = "\n".join(getattr(b, "text", "") for b in result.content)
                out[name] = (
                    result.is_error,
                    json.dumps(result.structured_content) + "\n" + text,
                )
    finally:
        pool.close()
    return out


def test_cli_search_and_context_take_include_private(
    world: World, reader_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_READER_URL", reader_url)
    runner = CliRunner()
    for command in (["search", QUERY, "--json", "--limit", "50"], ["context", QUERY, "--json"]):
        closed = runner.invoke(app, command)
        assert closed.exit_code == 0, closed.output
        assert GONE not in closed.stdout.lower()
        opened = runner.invoke(app, [*command, "--include-private"])
        assert opened.exit_code == 0, opened.output
        assert GONE in opened.stdout.lower()
