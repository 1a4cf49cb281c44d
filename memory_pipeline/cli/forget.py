"""`memory-pipeline forget`: remove memories, tasks and everything resting only on them, for good.

It runs as the pipeline's role (the only writer), in one transaction (memory_pipeline/forget).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError
from memory_pipeline.forget.select import QUERY_RULE
from memory_pipeline.settings import Settings
from memory_pipeline.tuning import FORGET_LISTED_MEMORIES as LISTED


@app.command()
def forget(
    memory_ids: Annotated[
        list[str] | None, typer.Argument(help="Memory ids (from `search --json`).")
    ] = None,
    tasks: Annotated[
        list[str] | None,
        typer.Option("--task", help="A captured task, SOURCE:NATIVE_ID (repeatable)."),
    ] = None,
    project: Annotated[str | None, typer.Option(help="Every memory of this project.")] = None,
    since: Annotated[
        datetime | None, typer.Option(help="Memories created at or after this.")
    ] = None,
    until: Annotated[datetime | None, typer.Option(help="Memories created before this.")] = None,
    query: Annotated[
        str | None,
        typer.Option(
            help=f"The memories, turns and tasks whose text holds this, literally ({QUERY_RULE});"
            " each is shown with the text around the match, then asked."
        ),
    ] = None,
    with_evidence: Annotated[
        bool,
        typer.Option(
            "--with-evidence",
            help="Also forget the selected memories' evidence: the turns they rest on and"
            " those turns' topic segment memories (which hold the same text).",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask before forgetting.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List everything that would go; change nothing.")
    ] = False,
    show_log: Annotated[
        bool, typer.Option("--log", help="Print the forget audit log and stop.")
    ] = False,
    purge_backups: Annotated[
        bool,
        typer.Option(
            "--purge-backups",
            help="Then make a new verified backup and delete every older one.",
        ),
    ] = False,
    include_private: Annotated[
        bool,
        typer.Option(
            "--include-private", help="Let --query match private-tier memories and tasks too."
        ),
    ] = False,
) -> None:
    """Forget memories, tasks, a project, a time range or what holds a phrase: the cascade,
    tombstones so capture never brings them back, an audit entry without the forgotten
    content, and the touched tables rewritten so the text leaves the database's files."""
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.connection import connect
    from memory_pipeline.forget.select import Selector, parse_task

    settings = Settings.from_env()
    if show_log:
        _print_log(ensure_ready(settings).app)
        return
    selector = Selector(
        memory_ids=[_memory_id(m) for m in memory_ids or []],
        tasks=[parse_task(t) for t in tasks or []],
        project=project,
        since=since,
        until=until,
        query=query.strip() if query is not None else None,
        include_private=include_private,
        with_evidence=with_evidence,
    )
    if selector.query is not None and not selector.query:
        raise UserError("--query is empty")
    nothing_selected = selector.empty and selector.query is None
    if nothing_selected and not purge_backups:
        raise UserError(
            "say what to forget: memory ids, --task SOURCE:NATIVE_ID, --project, --since/--until"
            " or --query (--log shows what was forgotten)"
        )
    urls = ensure_ready(settings, check_backups=purge_backups)
    if not nothing_selected:
        with connect(urls.app, autocommit=True) as conn:
            if selector.query is not None:
                _query_matches(conn, selector)
                if selector.empty:
                    say("the query matched nothing; nothing was forgotten")
                    return
                if not (yes or dry_run) and not _confirm(selector):
                    raise UserError(
                        "not confirmed, nothing was forgotten; --yes skips the question"
                    )
            from memory_pipeline.forget.run import forget as run_forget

            report = run_forget(conn, selector, dry_run=dry_run)
        _print_report(report)
        if selector.query is not None and not dry_run:
            from memory_pipeline.forget.wipe import files_holding

            for path in files_holding(settings.memory_home, selector.query):
                say(f"{path} still holds {selector.query!r}: forget does not own it; delete it")
        if dry_run:
            return
    if purge_backups:
        _purge(settings, urls.app)
    elif not nothing_selected:
        say(
            "older backups still hold what was forgotten until retention removes them; "
            "`memory-pipeline forget --purge-backups` replaces them with one new verified backup"
        )


def _memory_id(value: str) -> object:
    from uuid import UUID

    try:
        return UUID(value.strip())
    except ValueError:
        raise UserError(
            f"{value!r} is not a memory id (a UUID, as `search --json` shows)"
        ) from None


def _query_matches(conn, selector) -> None:  # type: ignore[no-untyped-def]
    """The memories and turns that literally hold the query, shown with the text around it."""
    from memory_pipeline.forget.select import query_matches

    found = query_matches(conn, selector.query, selector.include_private)
    selector.query_matches = [m.id for m in found if m.kind == "memory"]
    selector.query_turns = [m.id for m in found if m.kind == "turn"]
    selector.query_tasks = [m.id for m in found if m.kind == "task"]
    tasks = f", and {len(selector.query_tasks)} task titles" if selector.query_tasks else ""
    typer.echo(
        f"{len(selector.query_matches)} memories and {len(selector.query_turns)} turns{tasks}"
        f" hold {selector.query!r}:"
    )
    for m in found:
        if m.kind == "memory":
            typer.echo(f"  memory {m.id}  {m.label:<18} {m.title[:80]}")
        elif m.kind == "turn":
            typer.echo(f"  turn   {m.id}  {m.label}  {m.title[:60]}")
        else:
            typer.echo(f"  task   {m.id}  {m.label}  (its title; the whole task goes)")
        typer.echo(f"      {m.snippet}")


def _confirm(selector) -> bool:  # type: ignore[no-untyped-def]
    try:
        return typer.confirm(
            f"Forget these {len(selector.query_matches)} memories and"
            f" {len(selector.query_turns)} turns"
            + (f" and {len(selector.query_tasks)} tasks" if selector.query_tasks else "")
            + ", and everything that rests only on them?",
            default=False,
        )
    except typer.Abort:
        return False


def _print_report(report) -> None:  # type: ignore[no-untyped-def]
    head = "dry run, nothing changed; this would forget" if report.dry_run else "forgot"
    if report.missing_ids:
        say(f"no memory with id {', '.join(report.missing_ids)}")
    typer.echo(
        f"{head}: {len(report.memories)} memories, {report.turns} turns,"
        f" {len([t for t in report.tasks if t.captured])} tasks"
    )
    for m in report.memories[:LISTED]:
        private = " (private)" if m.private else ""
        typer.echo(f"  memory {m.id}  {m.type:<18} {m.title[:80]}{private}")
    if len(report.memories) > LISTED:
        typer.echo(f"  ... and {len(report.memories) - LISTED} more memories")
    for t in report.tasks:
        state = "" if t.captured else " (not captured; tombstoned so it never is)"
        typer.echo(f"  task {t.source}:{t.native_id}  {(t.title or '')[:80]}{state}")
    for turn in report.turn_list[:LISTED]:
        typer.echo(f"  turn {turn.id}  {turn.task} turn {turn.ordinal}")
    if len(report.turn_list) > LISTED:
        typer.echo(f"  ... and {len(report.turn_list) - LISTED} more turns")
    rows = ", ".join(f"{table} {n}" for table, n in report.counts.items()) or "none"
    typer.echo(f"rows {'that would be ' if report.dry_run else ''}deleted: {rows}")
    evidence = report.evidence
    if evidence.segments or evidence.turns:
        held = [f"segment memory {i} ({t[:60]})" for i, t in evidence.segments]
        if evidence.turns:
            held.append(f"{evidence.turns} turns of {', '.join(evidence.tasks)}")
        say(
            f"{'would stay' if report.dry_run else 'still'} holding the text these memories were"
            f" distilled from: {'; '.join(held)}; add --with-evidence to forget that too"
        )
    if not report.dry_run:
        typer.echo(
            f"tombstones: {report.tombstoned_tasks} tasks, {report.tombstoned_turns} turns;"
            f" audit entry {report.audit_id} (`forget --log`)"
        )
    if report.wiped is not None:
        typer.echo(
            f"rewrote {len(report.wiped.tables)} tables, their indexes and statistics, and"
            f" checkpointed {'and switched the WAL ' if report.wiped.wal_switched else ''}"
            f"in {report.wiped.seconds:.1f} s, so the deleted rows are gone from the"
            " database's files"
        )
        for failure in report.wiped.failures:
            say(f"could not run {failure}; ask the server's administrator to run it")


def _print_log(app_url: str) -> None:
    from memory_pipeline.db.connection import connect
    from memory_pipeline.forget.audit import entries, render

    with connect(app_url, autocommit=True) as conn:
        found = entries(conn)
    if not found:
        typer.echo("nothing was forgotten yet")
    for entry in found:
        typer.echo(render(entry))


def _purge(settings: Settings, app_url: str) -> None:
    from memory_pipeline.backup.config import BackupConfig
    from memory_pipeline.backup.operations import user_errors
    from memory_pipeline.forget.backups import purge_backups

    with user_errors():
        outcome = purge_backups(BackupConfig.from_settings(settings), app_url, progress=say)
    for error in outcome.errors:
        say(error)
    say(
        f"new verified backup {outcome.new_backup}; deleted {len(outcome.deleted)} older"
        f" backup(s){': ' + ', '.join(outcome.deleted) if outcome.deleted else ''}"
    )
    if outcome.errors:
        raise UserError("some older backups could not be deleted; delete them by hand")
