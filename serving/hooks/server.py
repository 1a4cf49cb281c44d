"""The resident hook server: a small Unix socket server that answers the hook clients.

Why resident: a cold `memory-pipeline` process spends longer importing psycopg, numpy, pydantic
and loading the embedding model than the per-prompt deadline (0.5 s) allows (see the README's
hook section for the figures). This process keeps one read-only connection and the model warm.

It listens only on a Unix socket (MEMORY_HOME/hook.sock, mode 0600), is started on demand by the
first client that finds no server (or by `memory-pipeline hook serve`), answers one JSON request
per connection (`{"event", "prompt", "cwd", "source", "tokens", "seconds"}` ->
`{"text"}` or `{"error"}`), in HOOK_SERVER_THREADS worker threads that each keep their own
reader connection for the server's life (and, with HOOK_SERVER_PROCESSES > 1, in forked copies
of the warmed-up server accepting on the same socket, so the cores answer prompts side by side),
and exits after HOOK_SERVER_IDLE_EXIT_S without a request. Every failure becomes an `error` the
client logs; the server keeps running.

One server per home: MEMORY_HOME/hook-server.lock (an flock held for the server's life) decides,
not the socket file. A server whose socket file was removed or replaced exits at once (within
HOOK_SERVER_SOCKET_CHECK_S). The hook server never starts the embedded database: a database the
user stopped (`memory-pipeline db stop`) stays stopped, and each prompt fails open with one line
in the hook log.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import multiprocessing
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg

from memory_pipeline import tuning
from memory_pipeline.settings import Settings
from serving.db import ReaderError, connect_reader, reader_url
from serving.hooks import inject
from serving.hooks.client import memory_home, socket_path
from serving.hooks.payload import SESSION_START, USER_PROMPT_SUBMIT, HookEvent


class DatabaseStopped(Exception):
    """The embedded database is not running: the hook server does not start it."""


class HookService:
    """Answers hook requests, each worker thread on its own reader connection, kept for the
    server's life (reconnecting after a failure)."""

    def __init__(self, settings: Settings, url: str | None = None) -> None:
        self.settings = settings
        self.url = url
        self._local = threading.local()
        self.embedder = inject.RememberingEmbedder(settings.ollama_host)
        # Shared with forked copies (monotonic time is the same clock in every process), so no
        # copy idles out while another is answering.
        self._last = multiprocessing.RawValue("d", time.monotonic())

    @property
    def last_request(self) -> float:
        return float(self._last.value)

    @last_request.setter
    def last_request(self, value: float) -> None:
        self._last.value = value

    @property
    def conn(self) -> psycopg.Connection | None:
        return getattr(self._local, "conn", None)

    def _reader_url(self) -> str:
        s = self.settings
        if self.url or s.reader_url:
            return self.url or s.reader_url  # type: ignore[return-value]
        if s.database_url:
            return reader_url(s)
        if not s.pgdata.exists():
            # A hook never creates the database: that is `memory-pipeline run`'s job.
            raise ReaderError(
                f"no memory database under {s.memory_home} yet; run `memory-pipeline run`",
                temporary=False,
            )
        from memory_pipeline.db.connection import resolve_urls
        from memory_pipeline.db.embedded import EmbeddedServer

        if not EmbeddedServer(s.pgdata).status().running:
            raise DatabaseStopped(
                "the memory database is stopped; the hook does not start it (`memory-pipeline "
                "db start` or `memory-pipeline run` does); no memory"
            )
        return resolve_urls(s, start=False).reader

    def _connection(self) -> psycopg.Connection:
        conn = self.conn
        if conn is None or conn.closed:
            conn = connect_reader(self._reader_url())
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = self.conn
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        self._local.conn = None

    def warm_up(self) -> None:
        """Connect and load the serving space's model before the first prompt arrives."""
        with contextlib.suppress(Exception):
            space = inject.serving_space(self._connection())
            if space is not None:
                self.embedder.embed(space[0], "warm up")

    def answer(self, request: dict[str, Any], waited: float = 0.0) -> dict[str, Any]:
        """The reply to one request; `waited`: seconds it waited for a free worker."""
        self.last_request = time.monotonic()
        try:
            session = request.get("event") == SESSION_START
            event = HookEvent(
                event=SESSION_START if session else USER_PROMPT_SUBMIT,
                prompt=str(request.get("prompt") or ""),
                cwd=request.get("cwd") if isinstance(request.get("cwd"), str) else None,
                source=request.get("source") if isinstance(request.get("source"), str) else None,
                session_id=None,
            )
            seconds = float(request.get("seconds") or 0.0) - waited
        except (TypeError, ValueError) as exc:
            return {"error": f"bad request ({exc})"}
        tokens = request.get("tokens")
        if not isinstance(tokens, int) or tokens <= 0:
            s = self.settings
            tokens = s.hook_session_tokens if session else s.hook_prompt_tokens
        if seconds <= 0:
            return {"error": "deadline exceeded waiting for earlier requests"}
        try:
            conn = self._connection()
            # Bound the queries by what is left of the deadline (the role's default is 15 s).
            conn.execute(f"SET statement_timeout = {max(1, int(seconds * 1000))}")
            try:
                found = inject.build(
                    conn,
                    self.embedder,
                    event,
                    token_budget=tokens,
                    min_cosine=tuning.HOOK_SESSION_MIN_COSINE
                    if session
                    else tuning.HOOK_PROMPT_MIN_COSINE,
                )
            finally:
                conn.execute("RESET statement_timeout")
            return {"text": found.text if found else None}
        except (ReaderError, DatabaseStopped) as exc:
            self._drop_connection()
            return {"error": str(exc)}
        except psycopg.Error as exc:
            self._drop_connection()
            return {"error": f"database error: {type(exc).__name__}: {exc}"}
        except Exception as exc:  # the embedder, a bug: logged by the client, server stays up
            return {"error": f"{type(exc).__name__}: {exc}"}

    def forget_connections(self) -> None:
        """After a fork: the parent's connection belongs to the parent."""
        self._local = threading.local()


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        service: HookService = self.server.service  # type: ignore[attr-defined]
        waited = time.monotonic() - self.server.accepted_at.pop(self.request, time.monotonic())  # type: ignore[attr-defined]
        try:
            request = json.loads(self.rfile.readline() or b"{}")
            reply = service.answer(request if isinstance(request, dict) else {}, waited)
        except ValueError as exc:
            reply = {"error": f"bad request ({exc})"}
        with contextlib.suppress(OSError):
            self.wfile.write(json.dumps(reply).encode() + b"\n")


class HookServer(socketserver.UnixStreamServer):
    """Accepts on the socket and hands each connection to one of HOOK_SERVER_THREADS worker
    threads. The workers live as long as the server, so each keeps its database connection
    (and the backend's warm caches): a thread per request would connect on every prompt."""

    request_queue_size = 128  # 20 prompts at once wait in the backlog, not in connect()

    def __init__(self, path: str, service: HookService) -> None:
        self.service = service
        self.workers: ThreadPoolExecutor | None = None  # started in each process, after fork
        self.accepted_at: dict[Any, float] = {}
        old = os.umask(0o077)  # the socket is the user's alone
        try:
            super().__init__(path, _Handler)
        finally:
            os.umask(old)
        self.socket_inode = os.stat(path).st_ino

    def server_close(self) -> None:
        super().server_close()
        if self.workers is not None:
            self.workers.shutdown(wait=False, cancel_futures=True)

    def process_request(self, request: Any, client_address: Any) -> None:
        if self.workers is None:
            self.workers = ThreadPoolExecutor(tuning.HOOK_SERVER_THREADS, "hook-worker")
        self.accepted_at[request] = time.monotonic()
        self.workers.submit(self._work, request, client_address)

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.accepted_at.pop(request, None)
            self.shutdown_request(request)


def already_serving(path: str) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(path)
    except OSError:
        return False
    finally:
        sock.close()
    return True


def server_lock(home: Path, wait_s: float = tuning.HOOK_SERVER_LOCK_WAIT_S) -> Any | None:
    """MEMORY_HOME/hook-server.lock, locked for this process's life; None if another server
    kept it for `wait_s` (an orphan whose socket is gone lets go of it within
    HOOK_SERVER_SOCKET_CHECK_S, so a replacement waits that long)."""
    home.mkdir(parents=True, exist_ok=True)
    handle = open(home / "hook-server.lock", "a+")  # noqa: SIM115 - held until exit
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.close()
                return None
            time.sleep(0.05)


def _socket_is_ours(path: str, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def serve(
    path: str,
    service: HookService,
    idle_exit_s: float = tuning.HOOK_SERVER_IDLE_EXIT_S,
    on_ready: Callable[[], None] | None = None,
    processes: int = 1,
    locked: bool = False,
    warm_up: Callable[[], None] | None = None,
) -> HookServer | None:
    """Bind `path` (replacing a stale socket file) and serve until idle for `idle_exit_s` or
    until the socket file is removed or replaced. Returns None without serving when another
    server already answers there (unless `locked`: the caller holds the home's server lock,
    so whatever answers there is an orphan on its way out). With `processes` > 1, forked
    copies of this (warmed-up) server accept on the same socket. `warm_up` runs before the
    socket exists (a cold session start's client waits for the socket meanwhile), so from the
    moment it listens the server watches its socket: deleting it ends the server within
    HOOK_SERVER_SOCKET_CHECK_S however long the warm-up took."""
    if not locked and already_serving(path):
        return None
    if warm_up is not None:
        warm_up()
        service.forget_connections()  # each process (and thread) connects on its own
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server: HookServer | None = None
    children: list[int] = []
    try:
        # Inside the try: a SIGTERM the moment the socket is bound still removes it below.
        server = HookServer(path, service)
        for _ in range(max(0, processes - 1)):
            # SIGTERM waits while forking: Python runs its handler (sys.exit) in whatever code
            # comes next, and during a fork that is the at-fork callbacks (logging's), which
            # swallow the SystemExit: a server stopped at that moment kept serving.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            try:
                pid = os.fork()
                if pid == 0:  # a child: its own connections, the same listening socket
                    try:
                        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
                        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                        service.forget_connections()
                        _serve_until_done(server, path, service, idle_exit_s)
                    finally:
                        os._exit(0)
                children.append(pid)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        if on_ready is not None:
            on_ready()
        _serve_until_done(server, path, service, idle_exit_s)
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        if server is None or _socket_is_ours(path, server.socket_inode):
            with contextlib.suppress(OSError):  # None: stopped while binding the socket it made
                os.unlink(path)
    return server


def _serve_until_done(
    server: HookServer, path: str, service: HookService, idle_exit_s: float
) -> None:
    def _watch() -> None:
        check = tuning.HOOK_SERVER_SOCKET_CHECK_S
        while True:
            time.sleep(check)
            if not _socket_is_ours(path, server.socket_inode):
                why = f"its socket {path} is gone or replaced"  # an orphan: nobody can reach it
                break
            if time.monotonic() - service.last_request > idle_exit_s:
                why = f"no request for {idle_exit_s:.0f} s"
                break
        print(f"hook server {os.getpid()} exiting: {why}", flush=True)
        server.shutdown()

    threading.Thread(target=_watch, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory-pipeline hook serve")
    parser.add_argument("--socket", default=None, help="socket path (default MEMORY_HOME's)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    home = Path(memory_home())
    path = args.socket or socket_path(home)
    lock = server_lock(home)
    if lock is None:  # another server holds this home
        with contextlib.suppress(FileNotFoundError):
            (home / "hook-server.starting").unlink()
        print(f"a hook server already serves {home}", flush=True)
        return 0
    # SIGTERM stops it cleanly: the socket and the pid file are removed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    service = HookService(settings)
    pid_file = home / "hook-server.pid"
    try:

        def ready() -> None:  # bound: only now is this the server
            pid_file.write_text(str(os.getpid()))
            with contextlib.suppress(FileNotFoundError):
                (home / "hook-server.starting").unlink()
            print(f"hook server {os.getpid()} listening on {path}", flush=True)

        serve(
            path,
            service,
            on_ready=ready,
            processes=hook_processes(),
            locked=True,
            warm_up=service.warm_up,
        )
    finally:
        with contextlib.suppress(OSError):
            if pid_file.read_text() == str(os.getpid()):
                pid_file.unlink()
    return 0


def hook_processes() -> int:
    """HOOK_SERVER_PROCESSES (0: one per core)."""
    n = tuning.HOOK_SERVER_PROCESSES
    return n if n > 0 else max(1, os.cpu_count() or 1)


if __name__ == "__main__":
    sys.exit(main())
