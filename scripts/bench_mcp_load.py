"""Concurrent `memory_search` calls against the MCP server over real HTTP; prints p50/p95.

Starts the streamable HTTP server (the same app `memory-pipeline mcp --transport http` serves)
on a free port on 127.0.0.1 against the configured database (MEMORY_HOME / DATABASE_URL /
MEMORY_READER_URL, as the server reads them), then fires --calls `memory_search` calls at once
from one MCP client session and reports how many answered, how many failed (and why), and the
latency percentiles. Run it after `make run` (the demo corpus) so the searches have work to do:

    .venv/bin/python scripts/bench_mcp_load.py                # 200 concurrent calls
    .venv/bin/python scripts/bench_mcp_load.py --pool-size 4 --wait 10   # the pool before issue 13

Benchmarks stay out of the test suite; memory_pipeline_tests/serving/test_mcp_http.py runs 50
concurrent calls in process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import secrets
import socket
import statistics
import threading
import time

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_pipeline import tuning
from memory_pipeline.settings import DEMO_GOLD
from serving.mcp.http import MCP_PATH, http_app
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server


def queries() -> list[str]:
    lines = DEMO_GOLD.read_text().splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(pool: ReaderPool, token: str, port: int) -> uvicorn.Server:
    app = http_app(build_server(pool=pool, token=token))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", server_header=False)
    )
    threading.Thread(target=server.run, name="mcp-http", daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the MCP server did not start within 30 s")
        time.sleep(0.05)
    return server


async def fire(
    url: str, token: str, calls: int, limit: int
) -> tuple[list[float], list[str], float]:
    texts = queries()
    latencies: list[float] = []
    errors: list[str] = []
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        await client.call_tool("memory_search", {"query": "warm up", "limit": 1})

        async def one(i: int) -> None:
            started = time.monotonic()
            try:
                result = await client.call_tool(
                    "memory_search", {"query": texts[i % len(texts)], "limit": limit}
                )
            except Exception as exc:  # a transport failure counts as an unanswered call
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            latencies.append(time.monotonic() - started)
            if result.is_error:
                errors.append(result.content[0].text)  # type: ignore[union-attr]

        started = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(calls)))
        wall = time.monotonic() - started
    return latencies, errors, wall


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="concurrent memory_search calls")
    parser.add_argument("--limit", type=int, default=10, help="results per search")
    parser.add_argument("--pool-size", type=int, default=tuning.MCP_POOL_SIZE)
    parser.add_argument(
        "--wait", type=float, default=tuning.MCP_POOL_WAIT_S, help="seconds a call may wait"
    )
    parser.add_argument("--reader-url", default=None, help="default: as the server finds it")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)  # not one line per HTTP request
    for name in ("httpx2", "httpx", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)

    token = secrets.token_urlsafe(32)
    port = free_port()
    pool = ReaderPool(args.reader_url, max_size=args.pool_size, timeout=args.wait)
    server = start_server(pool, token, port)
    try:
        latencies, errors, wall = asyncio.run(
            fire(f"http://127.0.0.1:{port}{MCP_PATH}", token, args.calls, args.limit)
        )
    finally:
        server.should_exit = True
        pool.close()
    answered = len(latencies) - len(errors)
    print(
        f"{args.calls} concurrent memory_search calls over HTTP (pool {args.pool_size}, "
        f"wait {args.wait:g}s): {answered} answered, {len(errors)} failed, {wall:.1f}s wall, "
        f"{args.calls / wall:.1f} calls/s"
    )
    if latencies:
        p50, p95 = statistics.median(latencies), percentile(latencies, 0.95)
        print(f"latency p50 {p50:.2f}s  p95 {p95:.2f}s  max {max(latencies):.2f}s")
    for message in sorted(set(errors))[:5]:
        print(f"  error ({errors.count(message)}x): {message[:200]}")
    raise SystemExit(1 if errors else 0)


if __name__ == "__main__":
    main()
