"""Where the CPU-bound tool calls run, and the bounded line in front of them.

`memory_search` and `memory_context` spend their time in Python and numpy (the query embedding,
fusion, rerank, packing) and in PostgreSQL, about half each. `ThreadRunner` runs them in threads
of the server process (the HTTP default, stdio, and tests that hand in their own pool and
embedder): with the database doing half the work, the GIL is not what limits them on 2 cores,
and several calls in flight keep the server and PostgreSQL busy at once. `ProcessRunner` runs
them in worker processes instead (MCP_WORKERS > 0), each with its own read-only connection and
embedder, for machines where Python on one core is the limit; the SDK's session handling stays
in the server's event loop either way (issue 35).

`Gate` bounds the line: a call that would wait longer than `max_wait_s` (estimated from the calls
ahead of it and the recent time per call) is answered at once with "busy, retry after N s"
instead of waiting tens of seconds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from memory_pipeline import tuning

logger = logging.getLogger(__name__)

Answer = tuple[dict[str, Any], str]  # (structured content, text) of one tool call


class Busy(Exception):
    """The line is full: the call would wait longer than the gate allows."""

    def __init__(self, ahead: int, retry_after_s: int) -> None:
        self.ahead = ahead
        self.retry_after_s = retry_after_s
        super().__init__(
            f"the memory server is busy ({ahead} calls ahead of this one); "
            f"retry after {retry_after_s} s"
        )


class ToolFailed(Exception):
    """An expected failure inside a worker, with the safe text for the model."""


_CORES = max(1, os.cpu_count() or 1)


class Gate:
    """At most `slots` calls run at once; the others wait in line while the estimated wait
    (calls ahead x the recent seconds per call) stays within `max_wait_s`. A call's seconds are
    its time divided by the calls in flight with it (Little's law: n calls that each take t
    seconds finish one every t/n seconds), so the estimate follows the throughput the cores
    really give, whether 8 threads share 2 cores or one call runs alone."""

    def __init__(self, slots: int, max_wait_s: float) -> None:
        self.slots = max(1, slots)
        self.max_wait_s = max_wait_s
        self.active = 0
        self.waiting = 0
        self.seconds_per_call = 0.05  # a moving average: a call's time / the calls in flight
        self._semaphore: asyncio.Semaphore | None = None

    def estimated_wait(self) -> float:
        ahead = self.active + self.waiting - self.slots + 1
        if ahead <= 0:
            return 0.0
        return ahead * self.seconds_per_call

    async def run(self, call: Callable[[], Any]) -> Any:
        """`call()` returns (value, seconds the slot was busy with it): that time, measured by
        the runner from handing the call over to its answer coming back (not counting a
        worker's start), is what estimates the wait."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.slots)
        wait = self.estimated_wait()
        if wait > self.max_wait_s:
            raise Busy(self.active + self.waiting, max(1, math.ceil(wait - self.max_wait_s / 2)))
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.active += 1
        in_flight = self.active
        try:
            value, took = await call()
            in_flight = (in_flight + self.active) / 2  # the calls beside it, start and end
        finally:
            self.active -= 1
            self._semaphore.release()
        self.seconds_per_call = 0.8 * self.seconds_per_call + 0.2 * took / in_flight
        return value


class ThreadRunner:
    """Runs a tool body in a worker thread of this process, with this process's connections."""

    def __init__(self, body_context: Callable[[], Any], threads: int) -> None:
        self._context = body_context
        self.slots = threads
        self._limiter: anyio.CapacityLimiter | None = None

    async def call(
        self, body: Callable[..., Answer], kwargs: dict[str, Any]
    ) -> tuple[Answer, float]:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.slots)
        ctx = self._context()
        started = time.monotonic()
        answer, _ = await anyio.to_thread.run_sync(
            lambda: _timed(body, ctx, kwargs), limiter=self._limiter
        )
        return answer, time.monotonic() - started

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


# --- the worker processes ----------------------------------------------------------------------
_worker: Any = None  # in a worker process: its BodyContext


def _init_worker(reader_url: str, ollama_host: str) -> None:
    from serving.mcp.tools import BodyContext

    global _worker
    # Each worker is one of as many as there are cores: BLAS threads of their own would spin on
    # the cores the other workers (and PostgreSQL) use.
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    _worker = BodyContext.for_worker(reader_url, ollama_host)


def _warm_worker() -> int:
    _worker.warm_up()
    return os.getpid()


def _timed(body: Callable[..., Answer], ctx: Any, kwargs: dict[str, Any]) -> tuple[Answer, float]:
    started = time.monotonic()
    answer = body(ctx, **kwargs)
    return answer, time.monotonic() - started


def _run_in_worker(body: Callable[..., Answer], kwargs: dict[str, Any]) -> tuple[Answer, float]:
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return _timed(body, _worker, kwargs)
    except ToolError as exc:
        raise ToolFailed(str(exc)) from None
    except Exception:
        logger.exception("tool call failed in worker %s", os.getpid())
        raise RuntimeError("the tool call failed in a worker process (see its log)") from None


class ProcessRunner:
    """Runs tool bodies in `processes` worker processes (spawned, so no thread state is copied),
    started on first use and warmed up (connection and embedding model) right away."""

    def __init__(self, reader_url: Callable[[], str], ollama_host: str, processes: int) -> None:
        self._reader_url = reader_url
        self._ollama_host = ollama_host
        self.slots = max(1, processes)
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._warming: list[concurrent.futures.Future[int]] = []
        self._lock = threading.Lock()

    def _pool(self) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ProcessPoolExecutor(
                    max_workers=self.slots,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                    initargs=(self._reader_url(), self._ollama_host),
                )
                # each warms up as it starts
                self._warming = [self._executor.submit(_warm_worker) for _ in range(self.slots)]
            return self._executor

    def start(self) -> None:
        """Start and warm the workers in the background (the first call need not wait)."""
        threading.Thread(target=self._start_quietly, daemon=True).start()

    def _start_quietly(self) -> None:
        try:
            self._pool()
        except Exception:  # told to the first call that needs the workers
            logger.warning("could not start the MCP worker processes yet", exc_info=True)

    async def call(
        self, body: Callable[..., Answer], kwargs: dict[str, Any]
    ) -> tuple[Answer, float]:
        executor = self._executor  # started: no thread hop for every call
        if executor is None:
            executor = await anyio.to_thread.run_sync(self._pool)
        warm = all(f.done() for f in self._warming)
        started = time.monotonic()
        answer, took = await asyncio.wrap_future(executor.submit(_run_in_worker, body, kwargs))
        # The slot was busy from hand-over to answer (the pipes and the scheduler's delays
        # included, which under load are much of it); before the workers are warm, their start
        # would count too, so the work alone is told then.
        return answer, (time.monotonic() - started) if warm else took

    def stop(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def worker_count() -> int:
    """Worker processes for the HTTP server, 0 for threads of the server process: MCP_WORKERS
    (tuning), or MEMORY_MCP_WORKERS (`threads`, `cores`: one per core, or a number)."""
    value = os.environ.get("MEMORY_MCP_WORKERS", "").strip().lower()
    if value == "threads":
        return 0
    if value == "cores":
        return _CORES
    n = int(value) if value.isdigit() else tuning.MCP_WORKERS
    return _CORES if n < 0 else n
