"""`memory-pipeline db ...`: the database: start, stop, status, check, migrate, reader-password,
psql."""

from __future__ import annotations

import os

import typer

from memory_pipeline.cli.app import app, safe_url, say
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

db_app = typer.Typer(
    help="The database: start, stop, status, check, migrate, reader-password, psql.",
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")


@db_app.command("start")
def db_start() -> None:
    """Start the embedded PostgreSQL server (no-op when DATABASE_URL is set or it runs)."""
    from memory_pipeline.db import ensure_ready

    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say)
    say(f"database ready: {safe_url(urls.app)}")


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
    typer.echo(f"database: {safe_url(urls.app)}")
    typer.echo(f"dagster:  {safe_url(urls.dagster)}")
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
    from memory_pipeline.db.check import require
    from memory_pipeline.db.connection import prepare_server, resolve_urls
    from memory_pipeline.db.migrate import migrate

    urls = resolve_urls(Settings.from_env(), start=True)
    require(urls, ("server", "migrate"))
    prepare_server(urls)
    applied = migrate(urls.app, progress=say)
    say(f"applied {len(applied)} migration(s)" if applied else "schema is up to date")


@db_app.command("check")
def db_check() -> None:
    """Check every requirement this role has on the server, one line each, with the fix."""
    from memory_pipeline.backup.config import BackupConfig
    from memory_pipeline.backup.crypto import BackupCryptoError, load_key
    from memory_pipeline.backup.pgtools import backup_archive_majors, tools_check
    from memory_pipeline.db.check import evaluate, gather
    from memory_pipeline.db.connection import resolve_urls

    settings = Settings.from_env()
    urls = resolve_urls(settings, start=True)
    typer.echo(f"database: {safe_url(urls.app)}")
    facts = gather(urls)
    checks = evaluate(facts, urls)
    config = BackupConfig.from_settings(settings)
    try:
        archives = backup_archive_majors(config.backup_dir, load_key(config.key_file, create=False))
    except (BackupCryptoError, UserError):
        archives = {}  # no key yet: no backup to read either
    tools_ok, tools_line = tools_check(config.pg_dump, facts.server_version, archives)
    missing = [c for c in checks if not c.ok]
    for check in checks:
        typer.echo(check.line())
        if check.name == "pgvector in scratch databases":
            typer.echo(tools_line)
    leftover = [c for c in missing if c.problem != "MISSING"]
    missing = [c for c in missing if c.problem == "MISSING"]
    if missing or not tools_ok:
        count = len(missing) + (not tools_ok)
        raise UserError(f"{count} requirement(s) missing; each MISSING line says what to run")
    if leftover:
        raise UserError(
            f"{len(leftover)} problem(s) found; each {leftover[0].problem} line says what to run"
        )
    typer.echo("every requirement is met")


@db_app.command("reader-password")
def db_reader_password() -> None:
    """Give the read-only role memory_reader a generated password and store its URL (0600)."""
    from memory_pipeline.db.connection import resolve_urls
    from memory_pipeline.db.reader import reader_url_path
    from memory_pipeline.db.roles import set_reader_password

    settings = Settings.from_env()
    if not settings.database_url:
        say("the embedded server trusts its own socket: memory_reader needs no password")
        return
    urls = resolve_urls(settings, start=False)
    url, path = set_reader_password(urls, settings.memory_home)
    say(
        f"memory_reader has a new password; its URL for this database is stored in {path} "
        "(mode 600, one line per database)"
    )
    say(f"search, context and mcp use it: {safe_url(url)}")
    if settings.reader_url:
        say(
            "note: MEMORY_READER_URL is set and wins over the stored URL; unset it, or set it "
            f"to this database's line in {reader_url_path(settings.memory_home)}"
        )


@db_app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def db_psql(ctx: typer.Context) -> None:
    """Open psql on our database (extra arguments go to psql)."""
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.embedded import bin_dir

    urls = ensure_ready(Settings.from_env())
    psql = bin_dir() / "psql"
    os.execv(psql, [str(psql), urls.app, *ctx.args])
