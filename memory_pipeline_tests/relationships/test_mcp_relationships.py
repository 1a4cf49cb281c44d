"""What an agent sees of relationships over MCP: memory_search and memory_context take
`exclude_reversed`, packs carry the flags, memory_read shows the edge with its evidence."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from memory_pipeline_tests.relationships.test_discovery import POSTGRES, REDIS, decision, run
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(pool: ReaderPool) -> AsyncIterator[Client]:
    async with Client(build_server(pool=pool, embedder=QueryEmbedder("http://127.0.0.1:9"))) as c:
        yield c


async def test_reversed_decisions_are_flagged_or_left_out_on_request(conn, client) -> None:
    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    run(conn)
    query = {"query": "API rate limiter redis"}
    hits = (await client.call_tool("memory_search", query)).structured_content["results"]
    assert old in [h["id"] for h in hits]
    r = await client.call_tool("memory_search", {**query, "exclude_reversed": True})
    ids = [h["id"] for h in r.structured_content["results"]]
    assert old not in ids and new in ids

    r = await client.call_tool("memory_context", {"task": "API rate limiter redis"})
    items = {i["memory_id"]: i for i in r.structured_content["items"]}
    assert items[old]["flags"][0].startswith(f"reversed by a newer decision {new}")
    assert "flag: reversed by a newer decision" in r.content[0].text
    r = await client.call_tool(
        "memory_context", {"task": "API rate limiter redis", "exclude_reversed": True}
    )
    assert old not in {i["memory_id"] for i in r.structured_content["items"]}

    r = await client.call_tool("memory_read", {"memory_id": old})
    rel = next(
        x for x in r.structured_content["relationships"] if x["relation_type"] == "contradicts"
    )
    assert rel["direction"] == "incoming" and "drop Redis" in rel["evidence"]
    assert "evidence:" in r.content[0].text
