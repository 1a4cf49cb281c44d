"""Dagster's instance for this user: `<MEMORY_HOME>/dagster`, stored in PostgreSQL.

Every Dagster process we start (in-process runs, the webserver, the daemon, the code server) gets
the same environment from here, so they all see one instance: the repo's `dagster.yaml` copied
into DAGSTER_HOME, and DAGSTER_PG_URL pointing at the `dagster` database.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from memory_pipeline.db import DatabaseUrls
from memory_pipeline.settings import REPO_ROOT, Settings

# The code location's name. Run history, sensor cursors and schedule state are keyed by it: it
# must be the same however the location is loaded (workspace.yaml or the ui's code server).
LOCATION_NAME = "memory_pipeline"
DEFINITIONS_MODULE = "memory_pipeline.definitions"


def dagster_env(settings: Settings, urls: DatabaseUrls) -> dict[str, str]:
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    return {"DAGSTER_HOME": str(home), "DAGSTER_PG_URL": urls.dagster}


def dagster_instance(settings: Settings, urls: DatabaseUrls) -> dg.DagsterInstance:
    """The user's Dagster instance, for runs executed in this process."""
    os.environ.update(dagster_env(settings, urls))
    return dg.DagsterInstance.get()


@dataclass(frozen=True)
class UiProcesses:
    """The three processes of `memory-pipeline ui`, sharing one code server.

    Left to themselves, the webserver and the daemon each start and manage a code server of their
    own, and the daemon replaces its code server every minute (the old one logs "No heartbeat
    received in 20 seconds, shutting down" and exits): each replacement imports the whole
    pipeline again, which is most of what an idle `ui` spends. One code server that we start
    and stop, which both reach over a Unix socket, loads the code once.

    It is a plain `dagster api grpc` server, not the `dagster code-server start` proxy: the proxy
    (a second process answering the webserver's once-a-second server-id poll) cost an idle ui
    about a third of its CPU, and what it adds, the UI's "Reload definitions", is not needed to
    run an installed pipeline. After changing the pipeline's code, restart `memory-pipeline ui`.
    Run workers are started by this server, in its process group, so they stop with the ui.
    """

    socket: Path
    workspace: Path
    code_server: list[str]
    webserver: list[str]
    daemon: list[str]


def ui_processes(run_dir: Path, host: str, port: int) -> UiProcesses:
    """Commands (and the workspace file they share, written into `run_dir`) for the ui.

    `run_dir` must be a short private directory (a Unix socket path is limited to 107 bytes):
    the caller makes one under the system's temporary directory and removes it afterwards.
    """
    bindir = Path(sys.executable).parent
    socket = run_dir / "code-server.sock"
    workspace = run_dir / "workspace.yaml"
    workspace.write_text(
        "# Written by `memory-pipeline ui`: the code server it started.\n"
        "load_from:\n"
        "  - grpc_server:\n"
        f"      socket: {socket}\n"
        f"      location_name: {LOCATION_NAME}\n"
    )
    code_server = [
        str(bindir / "dagster"),
        "api",
        "grpc",
        "--socket",
        str(socket),
        "--module-name",
        DEFINITIONS_MODULE,
        "--attribute",
        "defs",
        "--working-directory",
        str(REPO_ROOT),
        "--location-name",
        LOCATION_NAME,
        # Run workers are started with this venv's Python, whatever PATH says.
        "--use-python-environment-entry-point",
        "--log-level",
        "warning",
    ]
    webserver = [
        str(bindir / "dagster-webserver"),
        "-w",
        str(workspace),
        "-h",
        host,
        "-p",
        str(port),
    ]
    daemon = [str(bindir / "dagster-daemon"), "run", "-w", str(workspace)]
    return UiProcesses(socket, workspace, code_server, webserver, daemon)
