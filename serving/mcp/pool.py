"""Connections as the read-only role for the MCP tools: a bounded pool that says why it
cannot connect."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout, TooManyRequests

from memory_pipeline import tuning
from memory_pipeline.errors import UserError
from serving.db import ReaderError, connect_reader, reader_url


class ReaderBusy(Exception):
    """Every connection stayed in use for the whole wait while the database was up."""


class ReaderPool:
    """Connections as the read-only role, opened on first use, shared by the tools' threads.

    A tool call waits in line for a connection (a bounded line: at most `max_waiting` calls,
    each at most `timeout` seconds; tuning.MCP_POOL_*) instead of failing while the database is
    up. The first use connects once directly, so a refused password or a missing role is told
    at once (and as permanent), not after the pool gave up retrying. A call that waited its
    whole turn is told "busy" only if a fresh connection still works; otherwise it gets the
    reason that connection failed.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        max_size: int = tuning.MCP_POOL_SIZE,
        timeout: float = tuning.MCP_POOL_WAIT_S,
        max_waiting: int = tuning.MCP_POOL_MAX_WAITING,
    ) -> None:
        self._url = url
        self._max_size = max_size
        self._wait_s = timeout  # how long one call waits for a connection
        self._max_waiting = max_waiting
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()
        self._users = 0

    def url(self) -> str:
        if self._url is None:
            self._url = reader_url()  # starts the embedded server if that is the one we use
        return self._url

    def _open(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                url = self.url()
                with connect_reader(url) as probe:  # a one-line ReaderError if it cannot work
                    _check_read_only(probe)
                pool = ConnectionPool(
                    url,
                    min_size=1,
                    max_size=self._max_size,
                    kwargs={"autocommit": True, "connect_timeout": 5},
                    configure=_configure,
                    check=ConnectionPool.check_connection,
                    timeout=self._wait_s,
                    max_waiting=self._max_waiting,
                    name="memory-mcp-reader",
                    open=False,
                )
                try:
                    pool.open(wait=True, timeout=self._wait_s)
                except PoolTimeout:
                    pool.close(timeout=1)
                    raise self._why_not() from None
                self._pool = pool
            return self._pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        pool = self._open()
        try:
            conn = pool.getconn(timeout=self._wait_s)
        except TooManyRequests:
            raise ReaderBusy(
                f"{self._max_waiting} calls are already waiting for the memory database"
            ) from None
        except PoolTimeout:
            raise self._why_not() from None
        try:
            yield conn
        finally:
            pool.putconn(conn)  # rolled back or discarded if the call left it unusable

    def _why_not(self) -> Exception:
        """After a wait for a connection ran out: busy if the database answers, else why not."""
        try:
            with connect_reader(self.url()):
                pass
        except ReaderError as exc:
            return exc
        return ReaderBusy(f"all {self._max_size} connections stayed in use for {self._wait_s:.0f}s")

    def attach(self) -> None:
        with self._lock:
            self._users += 1

    def detach(self) -> None:
        with self._lock:
            self._users = max(0, self._users - 1)
            idle = self._users == 0
        if idle:
            self.close()

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)


def _check_read_only(conn: psycopg.Connection) -> None:
    """Refuse a role that could change memories (a reader URL pointing at the owner, say)."""
    row = conn.execute(
        "SELECT CASE WHEN to_regclass('public.memories') IS NULL THEN NULL ELSE"
        " has_table_privilege('public.memories', 'INSERT, UPDATE, DELETE, TRUNCATE') END"
    ).fetchone()
    if row is None or row[0] is None:
        raise UserError(
            "the memory database has no schema yet; run `memory-pipeline run` (or "
            "`memory-pipeline db migrate`) first"
        )
    if row[0]:
        raise UserError(
            "the serving connection's role can change memories; point MEMORY_READER_URL at the "
            "read-only role memory_reader"
        )
