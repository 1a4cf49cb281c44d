"""Supervising the long-running processes of `memory-pipeline ui`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from memory_pipeline.cli.app import say
from memory_pipeline.errors import UserError
from memory_pipeline.settings import REPO_ROOT


def supervise(commands: list[list[str]], env: dict[str, str], ready_message: str) -> None:
    """Run processes until Ctrl-C/SIGTERM or until one exits; then stop them all.

    Each child gets its own process group so the code servers they spawn stop with them: no
    orphaned Dagster processes after Ctrl-C.
    """
    procs = [
        subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, start_new_session=True) for cmd in commands
    ]
    say(ready_message)

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Installed explicitly: a shell starts background jobs with SIGINT ignored.
    previous = {sig: signal.signal(sig, on_term) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
        failed = [p for p in procs if p.poll() not in (None, 0)]
        if failed:
            raise UserError(f"{Path(failed[0].args[0]).name} exited with {failed[0].returncode}")
    except KeyboardInterrupt:
        say("stopping...")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop_groups(procs)


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


def require_free_port(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise UserError(
                f"port {port} on {host} is in use ({exc.strerror}); stop the other process or "
                "pass --port"
            ) from exc
