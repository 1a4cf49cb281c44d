"""`memory-pipeline dream ...`: run the dream cycle, review what it changed, undo or approve it.

`dream run` runs the cycle here, outside Dagster (the noon schedule and the post_learn sensor
run it inside): `user_triggered` by default, `--type session_start` when an agent asks at the
start of a session. Every run lands in `dream_cycle_runs` whatever its type.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

dream_app = typer.Typer(
    help="The dream cycle: run it, list and show runs, reject or approve what it changed.",
    no_args_is_help=True,
)
app.add_typer(dream_app, name="dream")

CLI_RUN_TYPES = ("user_triggered", "session_start")


def _connect():  # type: ignore[no-untyped-def]
    from memory_pipeline.db import connect, ensure_ready

    urls = ensure_ready(Settings.from_env())
    return connect(urls.app, autocommit=True)


@dream_app.command("run")
def dream_run(
    run_type: Annotated[
        str,
        typer.Option("--type", help="user_triggered (default) or session_start (an agent asks)."),
    ] = "user_triggered",
) -> None:
    """Run the dream cycle now and print what it did (and where its digest is)."""
    from memory_pipeline.dream.cycle import run_dream_cycle
    from memory_pipeline.dream.definitions import dream_config
    from memory_pipeline.embedding.spaces import embedder_for

    if run_type not in CLI_RUN_TYPES:
        raise UserError(f"--type must be one of {', '.join(CLI_RUN_TYPES)}")
    settings = Settings.from_env()
    config = dream_config(
        settings.memory_home,
        settings.ollama_host,
        settings.dream_model,
        settings.ollama_timeout_s,
        settings.dream_call_budget,
        settings.dream_approval,
    )
    embedder = embedder_for(settings.embedding_space, settings.ollama_host)
    with _connect() as conn:
        report = run_dream_cycle(
            conn,
            run_type=run_type,
            day=datetime.now(UTC).date(),
            embedder=embedder,
            config=config,
        )
    typer.echo(report.line())
    typer.echo(f"run {report.run_id}; digest: {report.digest_path}")


@dream_app.command("list")
def dream_list(
    limit: Annotated[int, typer.Option(help="How many runs, newest first.")] = 20,
) -> None:
    """Dream runs, newest first: type, status, candidates and what they changed."""
    from memory_pipeline.dream.store import fail_interrupted_runs

    with _connect() as conn:
        for dead in fail_interrupted_runs(conn):
            say(f"dream run {dead[:8]} was left running by a process that ended: marked failed")
        rows = conn.execute(
            "SELECT id::text, run_type, status, started_at, backend,"
            " coalesce(candidates_generated, 0), coalesce(candidates_accepted, 0),"
            " coalesce(candidates_deferred, 0), coalesce(candidates_rejected, 0),"
            " memories_created, memories_superseded, candidates_held, error"
            " FROM dream_cycle_runs ORDER BY started_at DESC LIMIT %s",
            [max(1, limit)],
        ).fetchall()
    if not rows:
        typer.echo("no dream runs yet; start one with `memory-pipeline dream run`")
    for r in rows:
        when = r[3].astimezone().strftime("%Y-%m-%d %H:%M")
        what = (
            f"{r[5]} candidates: {r[6]} accepted, {r[7]} deferred, {r[8]} rejected;"
            f" {r[9]} new, {r[10]} superseded" + (f", {r[11]} held" if r[11] else "")
        )
        if r[2] == "failed":
            what = f"failed: {(r[12] or '').splitlines()[0][:120]}"
        typer.echo(f"{r[0][:8]}  {when}  {r[1]:<14} {r[2]:<9} {r[4] or '-':<14} {what}")


@dream_app.command("show")
def dream_show(
    run: Annotated[str, typer.Argument(help="Run id (or its first characters).")],
) -> None:
    """A run's digest: new memories, superseded ones (before and after), rejected candidates."""
    with _connect() as conn:
        rows = conn.execute(
            "SELECT id::text, digest, status, error FROM dream_cycle_runs"
            " WHERE id::text LIKE %s ORDER BY started_at DESC LIMIT 2",
            [run.strip().lower() + "%"],
        ).fetchall()
    if not rows:
        raise UserError(f"no dream run {run}; see `memory-pipeline dream list`")
    if len(rows) > 1:
        raise UserError(f"{run} names more than one run; give more characters of its id")
    run_id, digest, status, error = rows[0]
    if status == "failed":
        typer.echo(f"run {run_id} failed and stored nothing: {error}")
        return
    typer.echo(digest or f"run {run_id} is {status}; it has no digest yet")


@dream_app.command("reject")
def dream_reject(
    memory: Annotated[str, typer.Argument(help="A dream memory's id, or a memory it superseded.")],
    reason: Annotated[str, typer.Option("--reason", help="Why: fed back into later runs.")],
) -> None:
    """Undo a dream-cycle change: the memory becomes user_rejected and anything it superseded is
    active again. The reason is injected into the next runs' Thinker."""
    from uuid import UUID

    from memory_pipeline.dream.store import reject_memory

    try:
        memory_id = str(UUID(memory.strip()))
    except ValueError:
        raise UserError(
            f"{memory!r} is not a memory id; copy one from `dream show <run>`"
        ) from None
    if not reason.strip():
        raise UserError('give a reason: --reason "why this is wrong"')
    with _connect() as conn:
        done = reject_memory(conn, memory_id, reason.strip())
    typer.echo(f"rejected {done['rejected_memory']}")
    for restored in done["restored"]:
        typer.echo(f"restored {restored} (active again)")


@dream_app.command("approve")
def dream_approve(
    candidates: Annotated[
        list[str] | None, typer.Argument(help="Candidate ids (or prefixes) to store.")
    ] = None,
    all_held: Annotated[bool, typer.Option("--all", help="Store every held candidate.")] = False,
) -> None:
    """With MEMORY_DREAM_APPROVAL on, accepted candidates wait here: without arguments, list
    them; with ids (or --all), store them now (embedded and searchable at once)."""
    from memory_pipeline.dream.store import approve, held_candidates
    from memory_pipeline.embedding.spaces import embedder_for

    settings = Settings.from_env()
    with _connect() as conn:
        if not candidates and not all_held:
            held = held_candidates(conn)
            if not held:
                typer.echo("nothing waits for approval")
            for cid, run_id, op, title, _ in held:
                typer.echo(f"{cid[:8]}  run {run_id[:8]}  {op:<9} {title}")
            if held:
                say("store with `memory-pipeline dream approve <id>...` or `--all`")
            return
        embedder = embedder_for(settings.embedding_space, settings.ollama_host)
        stored = approve(conn, None if all_held else candidates, embedder)
    if not stored:
        raise UserError("no held candidate matches; list them with `memory-pipeline dream approve`")
    for cid, memory_id in stored:
        typer.echo(f"stored {cid[:8]} as memory {memory_id}")
