"""`memory-pipeline heal`: the current redaction rules over everything already stored.

Secrets the rules of an older release missed stay stored until something rewrites them: this
does (memory_pipeline/heal), and `memory-pipeline run` does it once by itself after an upgrade
that changed the rules (`heal_if_due`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.db.connection import DatabaseUrls
from memory_pipeline.settings import Settings


@app.command("heal")
def heal_command(
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Count what the rules would rewrite; change nothing."),
    ] = False,
) -> None:
    """Re-run the current redaction rules over every stored turn, title, memory, passage,
    digest, briefing and Dagster record, rewrite what they match, and recompute vectors, the
    BM25 statistics and the keyword index from the healed text. Running it again changes
    nothing."""
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.heal.run import heal

    settings = Settings.from_env()
    urls = ensure_ready(settings, progress=say)
    from memory_pipeline.capture.redact import RULES_VERSION

    say(f"healing stored text with the redaction rules {RULES_VERSION}...")
    report = heal(settings, urls, dry_run=dry_run, progress=say)
    for surface in report.surfaces.values():
        typer.echo(surface.line(dry_run))
    for line in report.derived:
        typer.echo(f"recomputed: {line}")
    if report.derived_failed:
        say(report.derived_failed)
    if dry_run:
        typer.echo(
            f"dry run, nothing changed: {report.rewritten} rows and files would be rewritten"
            f" ({report.seconds} s)"
        )
    else:
        typer.echo(f"healed: {report.rewritten} rows and files rewritten in {report.seconds} s")
    _backups_line(report, typer.echo)


def _backups_line(report, echo: Callable[[str], None]) -> None:  # type: ignore[no-untyped-def]
    from memory_pipeline.heal.run import PURGE_COMMAND

    if not report.old_backups:
        return
    n = len(report.old_backups)
    copies = (
        " (copies MEMORY_BACKUP_COPY_COMMAND made elsewhere: delete those by hand)"
        if report.copy_command
        else ""
    )
    these = (
        "backups made before the heal still hold"
        if n > 1
        else "backup made before the heal still holds"
    )
    echo(
        f"{n} {these} the old text: {', '.join(report.old_backups)};"
        f" `{PURGE_COMMAND}` replaces {'them' if n > 1 else 'it'} with one new verified"
        f" backup{copies}"
    )


def heal_if_due(settings: Settings, urls: DatabaseUrls, progress: Callable[[str], None]) -> None:
    """Before `memory-pipeline run`'s jobs: on a fresh home record the current rules; when the
    rules changed since the store was last healed (or it never was), heal it first, in one line
    (and one more naming the backups that still hold the old text)."""
    from memory_pipeline.db.connection import connect
    from memory_pipeline.heal import state
    from memory_pipeline.heal.run import heal

    with connect(urls.app, autocommit=True) as conn:
        due = state.due(conn)
        if due == "fresh":
            state.record(conn, "fresh")
    if due != "heal":
        return
    progress("redaction rules changed since what is stored was written: healing it first...")
    report = heal(settings, urls)
    rows = ", ".join(f"{s.surface} {s.rewritten}" for s in report.surfaces.values() if s.rewritten)
    redactions = sum(s.redactions.total for s in report.surfaces.values())
    progress(
        f"  healed: {report.rewritten} rows and files rewritten"
        + (f" ({rows}; {redactions} redactions)" if rows else "")
        + f" in {report.seconds} s"
        + ("; " + report.derived_failed if report.derived_failed else "")
    )
    _backups_line(report, lambda line: progress(f"  {line}"))
