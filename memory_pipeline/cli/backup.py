"""`memory-pipeline backup ...`: encrypted backups: make, list, verify, restore."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

backup_app = typer.Typer(
    help="Encrypted backups: make, list, verify, restore.", no_args_is_help=True
)
app.add_typer(backup_app, name="backup")


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
        urls = ensure_ready(settings, check_backups=True)
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
    from memory_pipeline.backup.layout import (
        backup_names,
        interrupted_backups,
        interrupted_started_at,
        list_backups,
    )
    from memory_pipeline.backup.operations import load_restore_key, user_errors

    with user_errors():
        config = BackupConfig.from_settings(Settings.from_env())
        # No backups yet: nothing to decrypt, so no key is needed to say so.
        has_any = bool(backup_names(config.backup_dir))
        infos = list_backups(config.backup_dir, load_restore_key(config)) if has_any else []
    interrupted = interrupted_backups(config.backup_dir)
    typer.echo(f"backups in {config.backup_dir}")
    if not infos and not interrupted:
        typer.echo("none yet; make one with `memory-pipeline backup now`")
    for path in interrupted:
        started = interrupted_started_at(path)
        when = started.astimezone().strftime("%Y-%m-%d %H:%M") if started else "?"
        name = path.name.removeprefix(".tmp-").rsplit("-", 1)[0]
        typer.echo(
            f"  {name:<22} {when}  interrupted: killed before it completed (no backup was"
            f" made); the next backup removes its files ({path.name})"
        )
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
        report = verify_backup(
            config, ensure_ready(settings, check_backups=True).app, backup, progress=say
        )
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
        urls = ensure_ready(settings, check_backups=True)
        report = restore_backup(config, urls.app, backup, to, force=force, progress=say)
    say(
        f"restored {report.backup_id} into database {to}: {report.tables} tables,"
        f" {report.rows} rows match the manifest ({report.seconds:.1f}s)"
    )
