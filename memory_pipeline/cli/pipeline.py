"""`memory-pipeline run` and `memory-pipeline ui`: the pipeline itself."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, safe_url, say
from memory_pipeline.cli.processes import (
    STOP_SIGNALS,
    Service,
    ctrl_c_for_this_process_only,
    require_free_port,
    supervise,
    unix_socket_accepts,
)
from memory_pipeline.settings import Settings


@app.command()
def run() -> None:
    """Materialize every asset once: start the database, migrate, run the whole graph."""
    from memory_pipeline.cli.heal import heal_if_due
    from memory_pipeline.dagster_home import dagster_instance
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.orchestrate import materialize_all

    # SIGTERM and SIGHUP stop a run the way Ctrl-C does: Dagster marks it failed and frees its
    # pool slots. By default they would end the process on the spot and leave the run STARTED.
    for sig in STOP_SIGNALS:
        signal.signal(sig, _interrupt)
    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say, check_backups=True)
    say(f"database ready: {safe_url(urls.app)}")
    # Before anything starts threads (the heal loads numpy, whose BLAS pool would otherwise
    # take the terminal's SIGINT and leave the main thread waiting).
    ctrl_c_for_this_process_only()
    # After an upgrade that changed the redaction rules: what is stored is healed first.
    heal_if_due(settings, urls, progress=say)
    instance = dagster_instance(settings, urls)
    materialize_all(instance, settings, progress=say, app_url=urls.app)
    _warm_hook_server(settings)
    say("")
    say("Done. Browse runs, assets and partitions in the Dagster UI:")
    say("  memory-pipeline ui   (or `make ui`)  ->  http://127.0.0.1:3000")


def _warm_hook_server(settings: Settings) -> None:
    """With hooks installed, start their resident server now (warm for the next session)."""
    from serving.hooks.client import INSTALLED_MARKER, ensure_server

    if (settings.memory_home / INSTALLED_MARKER).exists():
        say(f"hook server: {ensure_server(str(settings.memory_home))}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="Port for the Dagster webserver.")] = 3000,
    host: Annotated[str, typer.Option(help="Interface to bind; keep it local.")] = "127.0.0.1",
) -> None:
    """Run the Dagster webserver and daemon (schedules, sensors, queued runs) until Ctrl-C."""
    from memory_pipeline.dagster_home import dagster_env, dagster_instance, ui_processes
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.runs import clear_interrupted_work, clear_stale_runs

    require_free_port(host, port)
    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say, check_backups=True)
    env = {**os.environ, **dagster_env(settings, urls)}
    # Runs a previous ui or `memory-pipeline run` left in progress when it died: failed now, so
    # their pool slots and queue places are free before the daemon starts launching.
    instance = dagster_instance(settings, urls)
    clear_stale_runs(instance, progress=say)
    clear_interrupted_work(settings, urls.app, progress=say)
    startup_timeout = instance.code_server_process_startup_timeout
    instance.dispose()
    with tempfile.TemporaryDirectory(prefix="memory-pipeline-ui-") as run_dir:
        procs = ui_processes(Path(run_dir), host, port)
        services = [
            Service(procs.code_server, ready=lambda: unix_socket_accepts(procs.socket)),
            Service(procs.webserver),
            Service(procs.daemon),
        ]
        supervise(
            services,
            env=env,
            ready_message=f"Dagster UI: http://{host}:{port}  (Ctrl-C stops)",
            startup_timeout_s=startup_timeout,
        )
