"""`memory-pipeline run` and `memory-pipeline ui`: the pipeline itself."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, safe_url, say
from memory_pipeline.cli.processes import require_free_port, supervise
from memory_pipeline.settings import REPO_ROOT, Settings


@app.command()
def run() -> None:
    """Materialize every asset once: start the database, migrate, run the whole graph."""
    from memory_pipeline.dagster_home import dagster_instance
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.orchestrate import materialize_all

    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say)
    say(f"database ready: {safe_url(urls.app)}")
    instance = dagster_instance(settings, urls)
    materialize_all(instance, settings, progress=say)
    say("")
    say("Done. Browse runs, assets and partitions in the Dagster UI:")
    say("  memory-pipeline ui   (or `make ui`)  ->  http://127.0.0.1:3000")


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="Port for the Dagster webserver.")] = 3000,
    host: Annotated[str, typer.Option(help="Interface to bind; keep it local.")] = "127.0.0.1",
) -> None:
    """Run the Dagster webserver and daemon (schedules, sensors, queued runs) until Ctrl-C."""
    from memory_pipeline.dagster_home import dagster_env
    from memory_pipeline.db import ensure_ready

    require_free_port(host, port)
    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say)
    env = {**os.environ, **dagster_env(settings, urls)}
    bindir = Path(sys.executable).parent
    workspace = str(REPO_ROOT / "workspace.yaml")
    commands = [
        [str(bindir / "dagster-webserver"), "-w", workspace, "-h", host, "-p", str(port)],
        [str(bindir / "dagster-daemon"), "run", "-w", workspace],
    ]
    supervise(commands, env=env, ready_message=f"Dagster UI: http://{host}:{port}  (Ctrl-C stops)")
