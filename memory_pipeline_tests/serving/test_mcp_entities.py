"""Entities on the serving surfaces: the MCP memory_entity tool (a timeline, the candidates of
an ambiguous name, the listing) and the `entity` filter of memory_search and memory_context,
through the SDK's real client on a real database; and `memory-pipeline entities`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
from mcp import Client

from memory_pipeline.entities.store import extract_window
from memory_pipeline_tests.serving.test_entity_pack import END, START, build
from memory_pipeline_tests.support.memories import add_memory
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(pool: ReaderPool, embedder: QueryEmbedder) -> AsyncIterator[Client]:
    async with Client(build_server(pool=pool, embedder=embedder)) as c:
        yield c


def text_of(result) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def seeded(conn: psycopg.Connection) -> list[str]:
    ids = build(conn)
    add_memory(
        conn,
        "Lease",
        "Victor Hugo <vh@example.com> and Victor Lane <vl@example.com> signed.",
        partition_day=START,
    )
    extract_window(conn, START, END)
    return ids


async def test_entity_timeline_lists_every_mention_newest_first(
    seeded: list[str], client: Client
) -> None:
    r = await client.call_tool("memory_entity", {"name": "Tomas"})
    assert not r.is_error
    tl = r.structured_content
    assert tl["entity"]["name"] == "Tomas" and tl["entity"]["type"] == "person"
    assert [m["memory_id"] for m in tl["mentions"]] == [seeded[1]]
    assert tl["mentions"][0]["native_task_id"] == "chat-1"
    assert "Tomas (person): mentioned in 1 memories, 1 turns" in text_of(r)
    jonas = (await client.call_tool("memory_entity", {"name": "jonas"})).structured_content
    dates = [m["at"] for m in jonas["mentions"]]
    assert len(dates) == 5 and dates == sorted(dates, reverse=True)
    assert {m["extractor"] for m in jonas["mentions"]} == {"speaker"}


async def test_an_ambiguous_name_returns_the_candidates(seeded: list[str], client: Client) -> None:
    r = await client.call_tool("memory_entity", {"name": "Victor"})
    assert r.structured_content["entity"] is None
    assert {c["name"] for c in r.structured_content["candidates"]} == {
        "Victor Hugo",
        "Victor Lane",
    }
    assert "ask which" in text_of(r)
    listing = (await client.call_tool("memory_entity", {})).structured_content
    assert listing["total"] >= 5 and listing["entities"][0]["turns"] >= 5


async def test_the_entity_filter_on_search_and_context(seeded: list[str], client: Client) -> None:
    r = await client.call_tool("memory_search", {"query": "holidays sister", "entity": "Ines"})
    assert [h["id"] for h in r.structured_content["results"]] == [seeded[3]]
    r = await client.call_tool("memory_search", {"query": "bread", "entity": "Ines"})
    # filtered first: the bread session does not mention Ines, so it is not a candidate
    assert {h["id"] for h in r.structured_content["results"]} <= {seeded[3]}
    r = await client.call_tool("memory_context", {"task": "the weekend", "entity": "Tomas"})
    assert [i["memory_id"] for i in r.structured_content["items"]] == [seeded[1]]
    r = await client.call_tool("memory_search", {"query": "lease", "entity": "Victor"})
    assert r.is_error and "names 2 entities" in text_of(r)
    r = await client.call_tool("memory_search", {"query": "lease", "entity": "Nobody"})
    assert r.is_error and "no entity is named 'Nobody'" in text_of(r)
