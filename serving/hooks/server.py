"""The resident hook server: a small Unix socket server that answers the hook clients.

Why resident: a cold `memory-pipeline` process spends longer importing psycopg, numpy, pydantic
and loading the embedding model than the per-prompt deadline (0.5 s) allows (see the README's
hook section for the figures). This process keeps one read-only connection and the model warm.

It listens only on a Unix socket (MEMORY_HOME/hook.sock, mode 0600), is started on demand by the
first client that finds no server (or by `memory-pipeline hook serve`), answers one JSON request
per connection (`{"event", "prompt", "cwd", "source", "tokens", "seconds"}` ->
`{"text"}` or `{"error"}`), one at a time, and exits after HOOK_SERVER_IDLE_EXIT_S without a
request. Every failure becomes an `error` the client logs; the server itself keeps running.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from memory_pipeline import tuning
from memory_pipeline.settings import Settings
from serving.db import ReaderError, connect_reader, reader_url
from serving.hooks import inject
from serving.hooks.client import memory_home, socket_path
from serving.hooks.payload import SESSION_START, USER_PROMPT_SUBMIT, HookEvent


class HookService:
    """Answers hook requests on one reader connection, reconnecting after a failure."""

    def __init__(self, settings: Settings, url: str | None = None) -> None:
        self.settings = settings
        self.url = url
        self.conn: psycopg.Connection | None = None
        self.embedder = inject.RememberingEmbedder(settings.ollama_host)
        self.lock = threading.Lock()
        self.last_request = time.monotonic()

    def _connection(self) -> psycopg.Connection:
        if self.conn is None or self.conn.closed:
            s = self.settings
            if not (self.url or s.reader_url or s.database_url or s.pgdata.exists()):
                # A hook never creates the database: that is `memory-pipeline run`'s job.
                raise ReaderError(
                    f"no memory database under {s.memory_home} yet; run `memory-pipeline run`",
                    temporary=False,
                )
            self.conn = connect_reader(self.url or reader_url(self.settings))
        return self.conn

    def _drop_connection(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        self.conn = None

    def warm_up(self) -> None:
        """Connect and load the serving space's model before the first prompt arrives."""
        with contextlib.suppress(Exception), self.lock:
            space = inject.serving_space(self._connection())
            if space is not None:
                self.embedder.embed(space[0], "warm up")

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
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
            seconds = float(request.get("seconds") or 0.0)
        except (TypeError, ValueError) as exc:
            return {"error": f"bad request ({exc})"}
        tokens = request.get("tokens")
        if not isinstance(tokens, int) or tokens <= 0:
            s = self.settings
            tokens = s.hook_session_tokens if session else s.hook_prompt_tokens
        if not self.lock.acquire(timeout=max(0.0, seconds)):
            return {"error": "deadline exceeded waiting for an earlier request"}
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
        except ReaderError as exc:
            self._drop_connection()
            return {"error": str(exc)}
        except psycopg.Error as exc:
            self._drop_connection()
            return {"error": f"database error: {type(exc).__name__}: {exc}"}
        except Exception as exc:  # the embedder, a bug: logged by the client, server stays up
            return {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            self.lock.release()


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        service: HookService = self.server.service  # type: ignore[attr-defined]
        try:
            request = json.loads(self.rfile.readline() or b"{}")
            reply = service.answer(request if isinstance(request, dict) else {})
        except ValueError as exc:
            reply = {"error": f"bad request ({exc})"}
        with contextlib.suppress(OSError):
            self.wfile.write(json.dumps(reply).encode() + b"\n")


class HookServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, service: HookService) -> None:
        self.service = service
        old = os.umask(0o077)  # the socket is the user's alone
        try:
            super().__init__(path, _Handler)
        finally:
            os.umask(old)
        self.socket_inode = os.stat(path).st_ino


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


def serve(
    path: str,
    service: HookService,
    idle_exit_s: float = tuning.HOOK_SERVER_IDLE_EXIT_S,
    on_ready: Callable[[], None] | None = None,
) -> HookServer | None:
    """Bind `path` (replacing a stale socket file) and serve until idle for `idle_exit_s`.
    Returns None without serving when another server already answers there."""
    if already_serving(path):
        return None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server = HookServer(path, service)
    if on_ready is not None:
        on_ready()

    def _idle_watch() -> None:
        while True:
            time.sleep(min(30.0, max(0.05, idle_exit_s / 4)))
            if time.monotonic() - service.last_request > idle_exit_s:
                server.shutdown()
                return

    threading.Thread(target=_idle_watch, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == server.socket_inode:
                os.unlink(path)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory-pipeline hook serve")
    parser.add_argument("--socket", default=None, help="socket path (default MEMORY_HOME's)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    home = Path(memory_home())
    path = args.socket or socket_path(home)
    # SIGTERM stops it cleanly: the socket and the pid file are removed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    service = HookService(settings)
    service.warm_up()
    pid_file = home / "hook-server.pid"
    try:
        home.mkdir(parents=True, exist_ok=True)

        def ready() -> None:  # bound: only now is this the server (another may answer there)
            pid_file.write_text(str(os.getpid()))
            with contextlib.suppress(FileNotFoundError):
                (home / "hook-server.starting").unlink()
            print(f"hook server {os.getpid()} listening on {path}", flush=True)

        serve(path, service, on_ready=ready)
    finally:
        with contextlib.suppress(OSError):
            if pid_file.read_text() == str(os.getpid()):
                pid_file.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
