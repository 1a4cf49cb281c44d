"""`memory-pipeline`: the one command-line entry point.

Heavy imports (Dagster, the embedding model) happen inside the commands that need them, so
`memory-pipeline --help` and `db status` answer instantly.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from memory_pipeline.errors import UserError
from memory_pipeline.settings import REPO_ROOT, Settings

app = typer.Typer(
    help="Persistent memory for AI coding agents: a Dagster asset graph over PostgreSQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="The database: start, stop, status, migrate, psql.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def say(message: str) -> None:
    typer.echo(message, err=True)


# --- db ----------------------------------------------------------------------------------------
@db_app.command("start")
def db_start() -> None:
    """Start the embedded PostgreSQL server (no-op when DATABASE_URL is set or it runs)."""
    from memory_pipeline.db import ensure_ready

    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say)
    say(f"database ready: {_safe(urls.app)}")


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded PostgreSQL server."""
    from memory_pipeline.db.embedded import EmbeddedServer

    settings = Settings.from_env()
    if settings.database_url:
        raise UserError("DATABASE_URL is set: that server is not ours to stop")
    stopped = EmbeddedServer(settings.pgdata).stop()
    say("embedded database stopped" if stopped else "embedded database was not running")


@db_app.command("status")
def db_status() -> None:
    """Show which database is used, whether it runs, pending migrations and table sizes."""
    from memory_pipeline.db.connection import connect, resolve_urls
    from memory_pipeline.db.embedded import EmbeddedServer
    from memory_pipeline.db.migrate import pending
    from memory_pipeline.db.report import database_report

    settings = Settings.from_env()
    if not settings.database_url:
        status = EmbeddedServer(settings.pgdata).status()
        typer.echo(f"embedded server: {settings.pgdata}")
        if not status.running:
            typer.echo("state: stopped (starts on demand; `memory-pipeline db start`)")
            return
        typer.echo(f"state: running (pid {status.pid}, socket {status.socket_dir})")
    urls = resolve_urls(settings, start=False)
    typer.echo(f"database: {_safe(urls.app)}")
    typer.echo(f"dagster:  {_safe(urls.dagster)}")
    todo = pending(urls.app)
    typer.echo(f"pending migrations: {', '.join(todo) if todo else 'none'}")
    if "011_reader_role.sql" not in todo:
        with connect(urls.app) as conn:
            report = database_report(conn)
        typer.echo(f"schema version: {report.schema_version}")
        typer.echo(f"serving embedding space: {report.serving_space or 'none yet'}")
        for table, count in report.row_counts.items():
            typer.echo(f"  {table:<22} {count:>9}")


@db_app.command("migrate")
def db_migrate() -> None:
    """Apply pending migrations from sql/ (each file once, in order)."""
    from memory_pipeline.db.connection import prepare_server, resolve_urls
    from memory_pipeline.db.migrate import migrate

    urls = resolve_urls(Settings.from_env(), start=True)
    prepare_server(urls)
    applied = migrate(urls.app, progress=say)
    say(f"applied {len(applied)} migration(s)" if applied else "schema is up to date")


@db_app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def db_psql(ctx: typer.Context) -> None:
    """Open psql on our database (extra arguments go to psql)."""
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.embedded import bin_dir

    urls = ensure_ready(Settings.from_env())
    psql = bin_dir() / "psql"
    os.execv(psql, [str(psql), urls.app, *ctx.args])


# --- pipeline --------------------------------------------------------------------------------
@app.command()
def run() -> None:
    """Materialize every asset once: start the database, migrate, run the whole graph."""
    from memory_pipeline.dagster_home import dagster_instance
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.orchestrate import materialize_all

    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say)
    say(f"database ready: {_safe(urls.app)}")
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

    _require_free_port(host, port)
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


def _require_free_port(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise UserError(
                f"port {port} on {host} is in use ({exc.strerror}); stop the other process or "
                "pass --port"
            ) from exc


def _safe(url: str) -> str:
    """A URL with any password replaced, for printing."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    auth, tail = rest.split("@", 1)
    user = auth.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in auth else ''}@{tail}"


def main() -> None:
    try:
        app()
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
