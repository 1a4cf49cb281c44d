"""Supervising the long-running processes of `memory-pipeline ui`."""

from __future__ import annotations

import _thread
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.cli.app import say
from memory_pipeline.errors import UserError
from memory_pipeline.settings import REPO_ROOT

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def ctrl_c_for_this_process_only() -> None:
    """From now on a terminal's Ctrl-C reaches this process alone, as its SIGINT handler.

    The terminal sends SIGINT to its whole foreground process group, which includes the helper
    processes Dagster starts for each step of an in-process run (a `tail` and a Python orphan
    watcher that mirror the step's output): the watcher died with a KeyboardInterrupt traceback
    under our one-line message. A blocked signal, unlike a caught one, stays blocked in a child
    (Dagster stops those helpers with SIGTERM), so SIGINT is blocked here and a thread waits for
    it and raises it in the main thread, where the installed handler runs as before; a SIGUSR2
    to the main thread (handled, doing nothing) breaks off a blocking call, such as a wait for
    the model's answer, so that happens at once. Only processes started afterwards are spared;
    the database server sets its own signal mask."""
    signal.signal(signal.SIGUSR2, lambda signum, frame: None)
    main = threading.main_thread().ident
    assert main is not None
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    def relay() -> None:
        while True:
            signal.sigwait({signal.SIGINT})
            _thread.interrupt_main(signal.SIGINT)
            signal.pthread_kill(main, signal.SIGUSR2)

    threading.Thread(target=relay, name="ctrl-c", daemon=True).start()


@dataclass(frozen=True)
class Service:
    """A process to run; `ready` (if given) is polled after it starts, and the services after it
    start only once it returns True."""

    command: list[str]
    ready: Callable[[], bool] | None = None


def supervise(
    services: list[Service], env: dict[str, str], ready_message: str, startup_timeout_s: float
) -> None:
    """Run processes until Ctrl-C/SIGTERM or until one exits; then stop them all.

    Each child gets its own process group so the code servers and run workers they spawn stop
    with them: no orphaned Dagster processes after Ctrl-C.

    Our handlers are installed before any child starts. A shell starts background jobs with
    SIGINT ignored, and a child inherits an ignored signal; Dagster then maps SIGTERM to the
    same (ignored) disposition, so every Dagster process would ignore our SIGTERM and be killed
    only by the SIGKILL after the grace period, with no chance to mark its runs failed. A caught
    signal, unlike an ignored one, is reset to the default in the child.
    """

    def on_stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, on_stop) for sig in STOP_SIGNALS}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for service in services:
            procs.append(
                subprocess.Popen(service.command, cwd=REPO_ROOT, env=env, start_new_session=True)
            )
            if service.ready is not None:
                _wait_ready(service, procs, startup_timeout_s)
        say(ready_message)
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
        failed = [p for p in procs if p.poll() not in (None, 0)]
        if failed:
            raise UserError(
                f"{Path(str(failed[0].args[0])).name} exited with {failed[0].returncode}"
            )
    except KeyboardInterrupt:
        say("stopping...")
    finally:
        try:
            _stop_groups(procs)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _wait_ready(service: Service, procs: list[subprocess.Popen[bytes]], timeout_s: float) -> None:
    assert service.ready is not None
    name = Path(service.command[0]).name
    deadline = time.monotonic() + timeout_s
    while not service.ready():
        if procs[-1].poll() is not None:
            raise UserError(f"{name} exited with {procs[-1].returncode} while starting")
        if time.monotonic() > deadline:
            raise UserError(
                f"{name} did not start within {timeout_s:g} s; raise code_servers: "
                "local_startup_timeout in dagster.yaml if this machine is slow"
            )
        time.sleep(0.2)


def _stop_groups(procs: list[subprocess.Popen[bytes]], grace_s: float = 15) -> None:
    for p in procs:
        _signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        _signal_group(p, signal.SIGKILL)  # anything left in the group, e.g. a code server
        p.wait()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def unix_socket_accepts(path: Path) -> bool:
    """True once a server listens on the Unix socket at `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def require_free_port(host: str, port: int) -> None:
    """Refuse a port another process listens on.

    SO_REUSEADDR, as the webserver itself binds: connections of a `ui` stopped moments ago sit in
    TIME_WAIT for a minute, and without it this check would refuse the port they leave behind
    although the webserver can bind it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise UserError(
                f"port {port} on {host} is in use ({exc.strerror}); stop the other process or "
                "pass --port"
            ) from exc
