"""Shared pieces of the per-agent hook tests (`serving/test_hooks_<agent>.py`).

* `cli(*args)`: the `memory-pipeline` Typer app run in-process; its output (exit code 0 asserted).
* `runs_without_memory(tmp_path, bodies)`: the real `memory-pipeline hook <event>` command, one
  process per `(event, payload)`, with no memory database at all (no `MEMORY_*`, no
  `DATABASE_URL`, an empty `MEMORY_HOME`), for the fail-open tests: each must print nothing and
  exit 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from memory_pipeline.cli import app

CLI = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "memory-pipeline")


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def runs_without_memory(
    tmp_path: Path, bodies: list[tuple[str, Any]]
) -> list[subprocess.CompletedProcess[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.pop("DATABASE_URL", None)
    env["MEMORY_HOME"] = str(tmp_path / "empty")
    runs = [
        subprocess.run(
            [CLI, "hook", event, "--deadline", "1"],
            input=json.dumps(body).encode(),
            capture_output=True,
            env=env,
            timeout=30,
            check=False,
        )
        for event, body in bodies
    ]
    stop_started_server(tmp_path / "empty")
    return runs


def stop_started_server(home: Path, wait_s: float = 120.0) -> None:
    """The hook finding no server started one in the background (a resident process of
    200 MB): stop it once it listens, so test runs do not leave servers behind."""
    if not (home / "hook-server.starting").exists() and not (home / "hook-server.pid").exists():
        return
    pid_file = home / "hook-server.pid"
    deadline = time.monotonic() + wait_s
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
