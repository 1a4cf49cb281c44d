"""What agents use, timed: context packs, the MCP call path and the hook path (issue 35).

- `context()` at 400, 1,000 and 2,000 tokens, in process, the query embedded beforehand as for
  the search figures, and at 1,000 tokens with its query embedding (p50/p95; target p95 <= 100 ms);
- `memory_search` over streamable HTTP against `memory-pipeline mcp --transport http` run as
  its own process (worker processes and all): sequential p50 against in-process `search()` on
  the same queries (target <= 1.3 x), then 1, 4, 16 and 64 concurrent client sessions (calls/s,
  p50/p95; target 16 clients >= 1.8 x one), and 200 sessions at once (all answered, p95 <= 5 s);
- the hook path through `memory-pipeline hook prompt` against its resident server: warm (one
  at a time), cold (a session start that finds no server) and 20 prompts at once (all answered
  within the 0.5 s deadline).

Each part runs on its own: one that fails (a timeout, an error) becomes a FAILED figure and the
others are still measured and written.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memory_pipeline import tuning
from memory_pipeline.bench.report import Figure
from memory_pipeline.db.connection import connect

Progress = Callable[[str], None]
CONTEXT_P95_TARGET_MS = 100.0
MCP_SEQUENTIAL_RATIO_TARGET = 1.3
MCP_SCALING_TARGET = 1.8
MCP_200_P95_TARGET_S = 5.0
CLIENT_LEVELS = (1, 4, 16, 64)
CONTEXT_BUDGETS = (400, 1000, 2000)


def failed(name: str, exc: BaseException) -> Figure:
    """A figure that could not be measured: reported as failed, with why, never dropped."""
    why = " ".join(f"{type(exc).__name__}: {exc}".split())[:160]
    return Figure(f"{name}: FAILED ({why})", 0.0, "", "measured", False)


def guarded(name: str, part: Callable[[], list[Figure]], progress: Progress) -> list[Figure]:
    try:
        return part()
    except Exception as exc:
        progress(f"{name} failed: {type(exc).__name__}: {exc}")
        return [failed(name, exc)]


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(v * 1000 for v in values)
    if not ordered:
        return 0.0, 0.0
    return statistics.median(ordered), ordered[
        min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))
    ]


# --- context packs -----------------------------------------------------------------------------
class _Embedded:
    """The queries' vectors computed beforehand (as the search figures are timed): the pack is
    timed without its query embedding, which the search part times on its own."""

    def __init__(self, embedder: Any, space: str, queries: list[str]) -> None:
        self.vectors = {q: embedder.embed_many(space, [q])[0] for q in dict.fromkeys(queries)}

    def embed(self, space: str, query: str) -> Any:
        return self.vectors[query]


def context_figures(
    url: str, queries: list[str], embedder: Any, progress: Progress
) -> list[Figure]:
    from memory_pipeline.embedding.spaces import serving_space
    from serving.context_pack import context

    figures = []
    with connect(url, autocommit=True) as conn:
        space = serving_space(conn)
        fixed = _Embedded(embedder, space[0], queries) if space else embedder
        for q in queries[:10]:
            context(conn, q, 1000, embedder=fixed)
        runs = [(budget, fixed, "") for budget in CONTEXT_BUDGETS]
        runs.append((1000, embedder, ", with its query embedding"))
        for budget, used, label in runs:
            progress(f"context() at {budget:,} tokens{label}, {len(queries):,} queries")
            took = []
            for q in queries:
                if used is embedder:
                    embedder.forget_recent()  # each query embedded as by an agent's first call
                t = time.perf_counter()
                context(conn, q, budget, embedder=used)
                took.append(time.perf_counter() - t)
            p50, p95 = _ms(took)
            figures.append(Figure(f"context() p50 at {budget:,} tokens{label}", p50, "ms"))
            figures.append(
                Figure(
                    f"context() p95 at {budget:,} tokens{label}",
                    p95,
                    "ms",
                    f"<= {CONTEXT_P95_TARGET_MS:.0f} ms",
                    p95 <= CONTEXT_P95_TARGET_MS,
                )
            )
    return figures


# --- the MCP call path -------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class McpServerProcess:
    """`python -m serving.mcp --transport http` on a free port, in a home of its own."""

    def __init__(self, reader_url: str, workers: int | None = None) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="mp-bench-mcp-"))
        self.token = secrets.token_urlsafe(32)
        (self.home / "mcp-token").write_text(self.token)
        os.chmod(self.home / "mcp-token", 0o600)
        self.port = _free_port()
        env = {**os.environ, "MEMORY_HOME": str(self.home), "MEMORY_READER_URL": reader_url}
        if workers is not None:
            env["MEMORY_MCP_WORKERS"] = str(workers)
        self.log = open(self.home / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "serving.mcp", "--transport", "http", "--port", str(self.port)],
            stdout=self.log,
            stderr=self.log,
            env=env,
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the MCP server exited; see {self.home / 'server.log'}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise TimeoutError("the MCP server did not listen within 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


async def _sessions(
    url: str, token: str, queries: list[str], clients: int, calls_each: int
) -> tuple[list[float], list[str], float]:
    """`clients` MCP sessions at once, each making `calls_each` memory_search calls in turn."""
    import httpx2
    from mcp import Client
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    # The Python SDK client revalidates every result against the tool's output schema with
    # jsonschema: ~30% of this client's CPU (py-spy), on the same two cores as the server. The
    # bench measures the server, so its clients skip that (agents' own clients do as they do).
    async def trusted(self: Any, name: str, result: Any) -> None:
        return None

    ClientSession.validate_tool_result = trusted  # type: ignore[method-assign]
    latencies: list[float] = []
    errors: list[str] = []
    # One HTTP client (its connection pool) for all the sessions: each httpx2 client builds an
    # SSL context, ~20 ms of CPU, which for 200 sessions at once was more CPU on the shared
    # cores than the server's own work for them. Every session is still its own MCP session.
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=600,
        limits=httpx2.Limits(max_connections=clients, max_keepalive_connections=clients),
    )

    async def one(c: int) -> None:
        try:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                for i in range(calls_each):
                    q = queries[(c * calls_each + i) % len(queries)]
                    t = time.perf_counter()
                    result = await client.call_tool("memory_search", {"query": q, "limit": 10})
                    latencies.append(time.perf_counter() - t)
                    if result.is_error:
                        errors.append(result.content[0].text)  # type: ignore[union-attr]
        except Exception as exc:
            while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]  # the SDK's task groups wrap what went wrong
            errors.append(f"{type(exc).__name__}: {exc}")

    async with http:
        started = time.perf_counter()
        await asyncio.gather(*(one(c) for c in range(clients)))
        return latencies, errors, time.perf_counter() - started


def _first_other(errors: list[str]) -> str:
    """The first error that is not a busy answer, on one short line for the table."""
    other = next(e for e in errors if "busy" not in e)
    return " ".join(other.replace("|", "/").split())[:100]


def in_process_search_ms(
    url: str, queries: list[str], embedder: Any, cpu: list[float] | None = None
) -> list[float]:
    """Each search()'s seconds; `cpu` gets this process's CPU seconds per call (the database's
    not counted)."""
    from serving.search import search

    took = []
    with connect(url, autocommit=True) as conn:
        for q in queries[:5]:
            search(conn, q, embedder=embedder, limit=10)
        started = time.process_time()
        for q in queries:
            t = time.perf_counter()
            search(conn, q, embedder=embedder, limit=10, record_surface="mcp")
            took.append(time.perf_counter() - t)
        if cpu is not None and queries:
            cpu.append((time.process_time() - started) / len(queries))
    return took


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and all its descendants alive."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue  # ended meanwhile
        total += times.user + times.system
    return total


def mcp_figures(
    url: str,
    queries: list[str],
    embedder: Any,
    progress: Progress,
    sequential: int = 200,
    levels: tuple[int, ...] = CLIENT_LEVELS,
    calls_per_level: int = 200,
    at_once: int = 200,
) -> list[Figure]:
    """The MCP call path; the tests' tiny run asks for fewer calls, levels and sessions."""
    figures: list[Figure] = []
    seq = (queries * (1 + sequential // max(1, len(queries))))[:sequential]
    server = McpServerProcess(url)
    try:
        server.wait_ready()

        def run(clients: int, calls_each: int) -> tuple[list[float], list[str], float]:
            return asyncio.run(_sessions(server.url, server.token, seq, clients, calls_each))

        run(2, 5)  # warm: sessions, workers, caches
        progress(f"MCP memory_search over HTTP: {len(seq)} sequential calls")
        local_cpu: list[float] = []
        local = in_process_search_ms(url, seq, embedder, local_cpu)
        cpu_before = tree_cpu_s(server.proc.pid)
        lat, errors, _ = run(1, len(seq))
        server_cpu = (tree_cpu_s(server.proc.pid) - cpu_before) / max(1, len(lat))
        if errors:
            raise RuntimeError(f"{len(errors)} sequential calls failed: {errors[0][:100]}")
        p50_local = _ms(local)[0]
        p50_mcp, p95_mcp = _ms(lat)
        ratio = p50_mcp / p50_local if p50_local else 0.0
        figures += [
            Figure("in-process search() p50 (query embedded, limit 10)", p50_local, "ms"),
            Figure("MCP memory_search sequential p50", p50_mcp, "ms"),
            Figure("MCP memory_search sequential p95", p95_mcp, "ms"),
            # CPU per call, which the machine's load distorts less than the times: the search
            # in process, and the whole MCP server (its process and workers) for one call; the
            # database's own CPU is the same for both and counted in neither.
            Figure("in-process search() CPU per call", local_cpu[0] * 1000, "ms"),
            Figure(
                "MCP server CPU per sequential call (server + workers)", server_cpu * 1000, "ms"
            ),
            Figure(
                "MCP sequential p50 / in-process search() p50",
                ratio,
                "x",
                f"<= {MCP_SEQUENTIAL_RATIO_TARGET}",
                ratio <= MCP_SEQUENTIAL_RATIO_TARGET,
            ),
        ]
        rates: dict[int, float] = {}
        for clients in levels:
            calls_each = max(3, calls_per_level // clients)
            progress(f"MCP: {clients} concurrent sessions x {calls_each} calls")
            cpu_before = tree_cpu_s(server.proc.pid)
            lat, errors, wall = run(clients, calls_each)
            cpu = (tree_cpu_s(server.proc.pid) - cpu_before) / max(1, len(lat))
            rates[clients] = len(lat) / wall if wall else 0.0
            p50, p95 = _ms(lat)
            figures += [
                Figure(f"MCP {clients} clients: calls/s", rates[clients], "calls/s"),
                Figure(f"MCP {clients} clients: server CPU per call", cpu * 1000, "ms"),
                Figure(f"MCP {clients} clients: p50", p50, "ms"),
                Figure(f"MCP {clients} clients: p95", p95, "ms"),
                Figure(f"MCP {clients} clients: errors", len(errors), "", "= 0", not errors),
            ]
        top = 16 if 16 in rates else max(rates)
        scaling = rates[top] / rates[1] if rates.get(1) else 0.0
        figures.append(
            Figure(
                f"MCP throughput {top} clients / 1 client",
                scaling,
                "x",
                f">= {MCP_SCALING_TARGET}",
                scaling >= MCP_SCALING_TARGET,
            )
        )
        progress(f"MCP: {at_once} sessions at once, one call each")
        lat, errors, wall = run(at_once, 1)
        p95_s = _ms(lat)[1] / 1000
        all_answered = len(lat) == at_once and not errors
        busy = sum("busy" in e for e in errors)
        figures += [
            Figure(
                f"MCP {at_once} sessions at once: answered without error",
                len(lat) - len(errors),
                "",
                f"= {at_once}",
                all_answered,
            ),
            Figure(f"MCP {at_once} sessions at once: answered busy", busy, ""),
            Figure(
                f"MCP {at_once} sessions at once: failed otherwise"
                + (f" (first: {_first_other(errors)})" if len(errors) > busy else ""),
                len(errors) - busy,
                "",
                "= 0",
                len(errors) == busy,
            ),
            Figure(
                f"MCP {at_once} sessions at once: p95",
                p95_s,
                "s",
                f"<= {MCP_200_P95_TARGET_S:.0f} s",
                p95_s <= MCP_200_P95_TARGET_S,
            ),
        ]
    finally:
        server.stop()
    return figures


# --- the hook path -----------------------------------------------------------------------------
def _hook(home: Path, event: str, body: dict[str, Any], env: dict[str, str]) -> tuple[float, bool]:
    """One `memory-pipeline hook <event>` run: (seconds, whether it printed memory)."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "serving.hooks.client", event],
        input=json.dumps(body).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    return time.perf_counter() - t, bool(out.stdout.strip())


def hook_figures(url: str, queries: list[str], progress: Progress) -> list[Figure]:
    from serving.hooks.client import socket_path

    home = Path(tempfile.mkdtemp(prefix="mp-bench-hook-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_HOME=str(home), MEMORY_READER_URL=url)
    env.pop("DATABASE_URL", None)
    prompts = [{"hook_event_name": "UserPromptSubmit", "prompt": q, "cwd": "/"} for q in queries]
    start = {"hook_event_name": "SessionStart", "source": "startup", "cwd": "/"}
    figures: list[Figure] = []
    try:
        progress("hooks: a cold session start (no server yet)")
        took, injected = _hook(home, "session-start", start, env)
        figures += [
            Figure("hook cold session start: seconds", took, "s"),
            Figure(
                "hook cold session start injected",
                float(injected),
                "(1 = yes)",
                "= 1",
                injected,
            ),
        ]
        deadline = time.monotonic() + 60
        while not os.path.exists(socket_path(home)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for p in prompts[:3]:
            _hook(home, "prompt", p, env)
        progress(f"hooks: {len(prompts)} prompts one at a time on the warm server")
        alone = [_hook(home, "prompt", p, env) for p in prompts]
        warm = [took for took, _ in alone]
        p50, p95 = _ms(warm)
        deadline_ms = tuning.HOOK_PROMPT_DEADLINE_S * 1000
        figures += [
            Figure("hook prompt warm p50 (whole command)", p50, "ms"),
            Figure(
                "hook prompt warm p95 (whole command)",
                p95,
                "ms",
                f"<= {deadline_ms:.0f} ms",
                p95 <= deadline_ms,
            ),
        ]
        progress("hooks: 20 prompts at once")
        batch = [prompts[i % len(prompts)] for i in range(20)]
        with ThreadPoolExecutor(20) as pool:
            results = list(pool.map(lambda p: _hook(home, "prompt", p, env), batch))
        # Those that get memory when asked alone (on the warm server, just before).
        expected = sum(1 for i in range(20) if alone[i % len(prompts)][1])
        got = sum(1 for _, injected in results if injected)
        slowest = max(t for t, _ in results)
        figures += [
            Figure(
                "hook 20 prompts at once: answered with memory",
                got,
                f"of {expected} that get memory alone",
                f"= {expected}",
                got == expected,
            ),
            Figure("hook 20 prompts at once: slowest", slowest * 1000, "ms"),
        ]
    finally:
        pid_file = home / "hook-server.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), 15)
            except (OSError, ValueError):
                pass
    return figures
