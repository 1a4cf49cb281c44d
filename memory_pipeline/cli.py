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
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from memory_pipeline.errors import UserError
from memory_pipeline.settings import DEMO_GOLD, REPO_ROOT, Settings

app = typer.Typer(
    help="Persistent memory for AI coding agents: a Dagster asset graph over PostgreSQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="The database: start, stop, status, migrate, psql.", no_args_is_help=True)
app.add_typer(db_app, name="db")
backup_app = typer.Typer(
    help="Encrypted backups: make, list, verify, restore.", no_args_is_help=True
)
app.add_typer(backup_app, name="backup")


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


# --- backup ------------------------------------------------------------------------------------
@backup_app.command("now")
def backup_now() -> None:
    """Back up the database now (dump + JSON exports, encrypted), then prove it restores."""
    from memory_pipeline.backup.config import BackupConfig
    from memory_pipeline.backup.operations import key_created_warning, run_backup, user_errors
    from memory_pipeline.backup.restore import verify_backup
    from memory_pipeline.db import ensure_ready

    settings = Settings.from_env()
    with user_errors():
        config = BackupConfig.from_settings(settings)
        urls = ensure_ready(settings)
        started = time.monotonic()
        if run_backup(config, urls.app, progress=say).backup.key.created:
            say(key_created_warning(config))
        report = verify_backup(config, urls.app, progress=say)
    if not report.passed:
        raise UserError(f"backup {report.backup_id} failed its restore check: {report.problems[0]}")
    say(
        f"verified {report.backup_id}: {report.tables} tables, {report.rows} rows match"
        f" (backup + verify {time.monotonic() - started:.1f}s)"
    )


@backup_app.command("list")
def backup_list() -> None:
    """List backups, newest first, with size and whether their restore check passed."""
    from memory_pipeline.backup.config import BackupConfig
    from memory_pipeline.backup.layout import backup_names, list_backups
    from memory_pipeline.backup.operations import load_restore_key, user_errors

    with user_errors():
        config = BackupConfig.from_settings(Settings.from_env())
        # No backups yet: nothing to decrypt, so no key is needed to say so.
        has_any = bool(backup_names(config.backup_dir))
        infos = list_backups(config.backup_dir, load_restore_key(config)) if has_any else []
    typer.echo(f"backups in {config.backup_dir}")
    if not infos:
        typer.echo("none yet; make one with `memory-pipeline backup now`")
    for info in infos:
        created = info.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
        rows = sum(t.rows for t in info.manifest.tables) if info.manifest else 0
        good = "good" if info.good else ""
        typer.echo(
            f"  {info.id:<22} {created}  {info.bytes / 1e6:>9.1f} MB  {rows:>9} rows"
            f"  {info.status:<13} {good}"
        )


@backup_app.command("verify")
def backup_verify(
    backup: Annotated[
        str | None, typer.Argument(help="Backup name or path; default newest.")
    ] = None,
) -> None:
    """Restore a backup into a scratch database, compare it with its manifest, drop it."""
    from memory_pipeline.backup.config import BackupConfig
    from memory_pipeline.backup.operations import load_restore_key, user_errors
    from memory_pipeline.backup.restore import verify_backup
    from memory_pipeline.db import ensure_ready

    settings = Settings.from_env()
    with user_errors():
        config = BackupConfig.from_settings(settings)
        load_restore_key(config)  # no key, no point in starting the database
        report = verify_backup(config, ensure_ready(settings).app, backup, progress=say)
    if not report.passed:
        for problem in report.problems:
            say(f"  {problem}")
        raise UserError(f"backup {report.backup_id} failed its restore check")
    say(f"verified {report.backup_id}: {report.tables} tables, {report.rows} rows match")


@backup_app.command("restore")
def backup_restore(
    backup: Annotated[str, typer.Argument(help="Backup name (see `backup list`) or path.")],
    to: Annotated[str, typer.Option("--to", help="Database to restore into (same server).")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace the database even if it is not empty.")
    ] = False,
) -> None:
    """Restore a backup into a database on our server, created if missing."""
    from memory_pipeline.backup.config import BackupConfig
    from memory_pipeline.backup.operations import load_restore_key, user_errors
    from memory_pipeline.backup.restore import restore_backup
    from memory_pipeline.db import ensure_ready

    settings = Settings.from_env()
    with user_errors():
        config = BackupConfig.from_settings(settings)
        load_restore_key(config)  # no key, no point in starting the database
        urls = ensure_ready(settings)
        report = restore_backup(config, urls.app, backup, to, force=force, progress=say)
    say(
        f"restored {report.backup_id} into database {to}: {report.tables} tables,"
        f" {report.rows} rows match the manifest ({report.seconds:.1f}s)"
    )


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


# --- serving (read-only) -------------------------------------------------------------------
TypeOpt = Annotated[list[str] | None, typer.Option("--type", help="Memory type (repeatable).")]
ProjectOpt = Annotated[list[str] | None, typer.Option("--project", help="Project (repeatable).")]
SourceOpt = Annotated[
    list[str] | None, typer.Option("--source", help="codex, claude_code, chat_import (repeatable).")
]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeatable, any of).")]
SinceOpt = Annotated[datetime | None, typer.Option(help="Only memories created at or after this.")]
UntilOpt = Annotated[datetime | None, typer.Option(help="Only memories created before this.")]
StatusOpt = Annotated[
    list[str] | None,
    typer.Option("--status", help="Statuses to include (default: active, explored)."),
]


def _filters(types, projects, sources, tags, since, until, statuses):  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from serving.models import SearchFilters

    fields = {
        "types": types,
        "projects": projects,
        "sources": sources,
        "tags": tags,
        "since": since,
        "until": until,
    }
    if statuses:
        fields["statuses"] = statuses
    try:
        return SearchFilters(**fields)
    except ValidationError as exc:
        raise UserError(f"invalid filter: {exc.errors()[0]['msg']}") from exc


def _check_query(query: str) -> str:
    from serving.rerank_weights import MAX_QUERY_CHARS

    query = query.strip()
    if not query:
        raise UserError("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise UserError(f"the query is longer than {MAX_QUERY_CHARS} characters")
    return query


@app.command()
def search(
    query: str,
    limit: Annotated[int, typer.Option(min=1, max=50, help="Results to return.")] = 10,
    json_output: Annotated[bool, typer.Option("--json", help="Ranked results as JSON.")] = False,
    types: TypeOpt = None,
    projects: ProjectOpt = None,
    sources: SourceOpt = None,
    tags: TagOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    statuses: StatusOpt = None,
) -> None:
    """Hybrid search (BM25 + vectors + rerank) over memories, as an agent would see it."""
    from serving.db import connect_reader
    from serving.search import QueryEmbedder
    from serving.search import search as run_search

    query = _check_query(query)
    settings = Settings.from_env()
    filters = _filters(types, projects, sources, tags, since, until, statuses)
    with connect_reader() as conn:
        response = run_search(
            conn,
            query,
            embedder=QueryEmbedder(settings.ollama_host),
            limit=limit,
            filters=filters,
            record_surface="cli",
        )
    if json_output:
        typer.echo(response.model_dump_json(indent=2))
        return
    _print_hits(response)


def _print_hits(response) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console
    from rich.table import Table

    ranked = sum(not h.temporal_context for h in response.results)
    extra = len(response.results) - ranked
    title = f"{ranked} results for {response.query!r}" + (
        f" (+{extra} nearby in time)" if extra else ""
    )
    table = Table(title=title, expand=True)
    for column in ("#", "score", "type", "title", "from", "date"):
        table.add_column(column, overflow="fold", ratio=4 if column == "title" else None)
    for i, hit in enumerate(response.results, start=1):
        origin = ", ".join(
            f"{p.source}:{p.native_task_id[:13]} t{p.turns[0].ordinal}" for p in hit.provenance
        )
        rank = "+" if hit.temporal_context else str(i)
        table.add_row(
            rank,
            f"{hit.score:.3f}",
            hit.type,
            hit.title,
            origin or "-",
            hit.created_at.date().isoformat(),
        )
    # Not a terminal (piped, captured): 80 columns would fold every title; use a wider page.
    probe = Console()
    console = probe if probe.is_terminal else Console(width=140)
    console.print(table)
    console.print(
        f"vector space: {response.space or 'none (BM25 only)'}; "
        "'+' rows are temporal neighbours of the top result. --json shows provenance."
    )


@app.command()
def context(
    query: str,
    tokens: Annotated[
        int, typer.Option("--tokens", min=50, max=100_000, help="Token budget.")
    ] = 2000,
    json_output: Annotated[bool, typer.Option("--json", help="The pack as JSON.")] = False,
    projects: ProjectOpt = None,
    sources: SourceOpt = None,
) -> None:
    """A token-budgeted context pack for a task description (what an agent gets at start)."""
    from serving.context_pack import context as build_pack
    from serving.db import connect_reader
    from serving.render import pack_text
    from serving.search import QueryEmbedder

    query = _check_query(query)
    settings = Settings.from_env()
    filters = _filters(None, projects, sources, None, None, None, None)
    with connect_reader() as conn:
        pack = build_pack(
            conn,
            query,
            tokens,
            embedder=QueryEmbedder(settings.ollama_host),
            filters=filters,
            record_surface="cli",
        )
    typer.echo(pack.model_dump_json(indent=2) if json_output else pack_text(pack))


@app.command()
def mcp(
    transport: Annotated[
        str, typer.Option(help="stdio (agents launch it) or http (streamable HTTP, bearer token).")
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="HTTP: interface to bind; keep it local.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: port.")] = 8765,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="HTTP: allow binding beyond loopback.")
    ] = False,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", help="HTTP: a Host name clients use (repeatable)."),
    ] = None,
) -> None:
    """The read-only MCP server for agents: stdio (Claude Code, Codex) or streamable HTTP."""
    from serving.mcp_cli import mcp_command

    mcp_command(transport, host, port, allow_remote, allowed_hosts or [])


@app.command("eval")
def evaluate_retrieval(
    gold: Annotated[
        Path, typer.Option(help="Gold set (JSON Lines); default: the demo corpus's.")
    ] = DEMO_GOLD,
    json_output: Annotated[bool, typer.Option("--json", help="Full report as JSON.")] = False,
) -> None:
    """Recall@5, Recall@10 and MRR of BM25, vectors and the full pipeline on a gold set."""
    from serving.db import connect_reader
    from serving.evaluation import evaluate, load_gold, report_table
    from serving.search import QueryEmbedder

    if not gold.is_file():
        raise UserError(f"gold set {gold} not found")
    queries = load_gold(gold)
    settings = Settings.from_env()
    with connect_reader() as conn:
        report = evaluate(conn, queries, QueryEmbedder(settings.ollama_host))
    typer.echo(report.model_dump_json(indent=2) if json_output else report_table(report))


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
