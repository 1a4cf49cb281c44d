"""`memory-pipeline capture skips | confirm`: what capture skipped, and the user's word on it."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError
from memory_pipeline.models.sources import SOURCE_NAMES
from memory_pipeline.settings import Settings

capture_app = typer.Typer(
    help="What capture skipped (ownership unknown or delegated) and confirming a task as yours.",
    no_args_is_help=True,
)
app.add_typer(capture_app, name="capture")

SOURCES = SOURCE_NAMES


@capture_app.command("skips")
def skips(
    include_all: Annotated[
        bool, typer.Option("--all", help="Also forgotten, excluded and failed tasks.")
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
) -> None:
    """Tasks skipped for ownership and not captured since: source:id, ownership, reason, file."""
    from memory_pipeline.capture.confirmations import skipped_tasks
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.connection import connect

    urls = ensure_ready(Settings.from_env())
    with connect(urls.app, autocommit=True) as conn:
        rows = skipped_tasks(conn, include_all=include_all)
    if json_output:
        for r in rows:
            typer.echo(
                json.dumps(
                    {
                        "task": f"{r.source}:{r.native_id}",
                        "ownership": r.ownership,
                        "reason": r.reason,
                        "path": r.path,
                        "first_seen_at": r.first_seen_at.isoformat(),
                        "confirmed": r.confirmed,
                    }
                )
            )
        return
    if not rows:
        say("no task was skipped for ownership" if not include_all else "no task was skipped")
        return
    for r in rows:
        note = "  (confirmed: captured by the next run)" if r.confirmed else ""
        typer.echo(f"{r.source}:{r.native_id}  {r.ownership or '-'}  {r.reason}  {r.path}{note}")
    if any(r.ownership == "unknown" and not r.confirmed for r in rows):
        say("yours? `memory-pipeline capture confirm SOURCE:ID`, then `memory-pipeline run`")


@capture_app.command("confirm")
def confirm(
    task: Annotated[str, typer.Argument(help="SOURCE:NATIVE_ID, as `capture skips` lists it.")],
) -> None:
    """Record that a task skipped for unknown ownership is yours: the next run captures it.
    Never overrides delegation evidence (a delegated task stays skipped)."""
    from memory_pipeline.capture.confirmations import confirm as record
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.db.connection import connect

    source, sep, native_id = task.partition(":")
    if not sep or source not in SOURCES or not native_id.strip():
        raise UserError(
            f"{task!r}: write SOURCE:NATIVE_ID with SOURCE one of {', '.join(SOURCES)}"
            " (`memory-pipeline capture skips` lists them)"
        )
    urls = ensure_ready(Settings.from_env())
    with connect(urls.app, autocommit=True) as conn:
        done = record(conn, source, native_id.strip())
    typer.echo(
        f"confirmed {done.source}:{done.native_id} as yours (it was {done.ownership}: "
        f"{done.reason}); the next `memory-pipeline run` captures it"
    )
