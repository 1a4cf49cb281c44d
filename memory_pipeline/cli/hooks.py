"""`memory-pipeline hook ...` (what the agent runs) and `memory-pipeline hooks ...` (setup).

`hook session-start` / `hook prompt` normally never reach this module: `memory_pipeline.cli`
hands them to the thin client (`serving/hooks/client.py`) before importing Typer and the
command modules, which alone take longer than the per-prompt deadline. They are registered here
too so `--help` lists them and they work however the CLI is invoked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError
from serving.hooks.agents import NAMES as HOOK_AGENTS

hook_app = typer.Typer(
    help="What the agent's hooks run: print memory context for a session start or a prompt.",
    no_args_is_help=True,
)
hooks_app = typer.Typer(
    help=f"Install or remove the memory hooks in an agent's settings ({', '.join(HOOK_AGENTS)}).",
    no_args_is_help=True,
)
app.add_typer(hook_app, name="hook")
app.add_typer(hooks_app, name="hooks")

Deadline = Annotated[
    float | None, typer.Option(help="Seconds before printing nothing (default 1.5 / 0.5).")
]
Tokens = Annotated[int | None, typer.Option(help="Token budget of what is injected.")]


def _client(event_arg: str, deadline: float | None, tokens: int | None) -> None:
    from serving.hooks.client import main

    argv = [event_arg]
    if deadline is not None:
        argv += ["--deadline", str(deadline)]
    if tokens is not None:
        argv += ["--tokens", str(tokens)]
    main(argv)


@hook_app.command("session-start")
def session_start(deadline: Deadline = None, tokens: Tokens = None) -> None:
    """Read a SessionStart payload on stdin; print the repository's memory context, or nothing."""
    _client("session-start", deadline, tokens)


@hook_app.command("prompt")
def prompt(deadline: Deadline = None, tokens: Tokens = None) -> None:
    """Read a UserPromptSubmit payload on stdin; print memories relevant to it, or nothing."""
    _client("prompt", deadline, tokens)


@hook_app.command("serve")
def serve(
    socket: Annotated[str | None, typer.Option(help="Socket path (default MEMORY_HOME's).")] = None,
) -> None:
    """Run the resident hook server in the foreground (clients start it on demand anyway)."""
    from serving.hooks.server import main

    main(["--socket", socket] if socket else [])


Agent = Annotated[str, typer.Argument(help=f"The agent: {', '.join(HOOK_AGENTS)}.")]
Scope = Annotated[
    str,
    typer.Option(help="user (every project), project (.claude/ or .codex/ here), local."),
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the result; write nothing.")]


def _run(agent: str, scope: str, dry_run: bool, install: bool) -> None:
    from memory_pipeline.settings import Settings
    from serving.hooks import install as inst

    if agent not in inst.AGENTS:
        raise UserError(f"unknown agent {agent!r}; use one of: {', '.join(inst.AGENTS)}")
    if scope not in inst.SCOPES:
        raise UserError(f"unknown scope {scope!r}; use one of: {', '.join(inst.SCOPES)}")
    path = inst.hook_file(agent, scope, Settings.from_env(), Path.cwd())
    change = inst.plan_agent(agent, path, install)
    verb = "install" if install else "uninstall"
    if not change.changed:
        say(
            f"{path}: nothing to {verb} (" + ("already installed)" if install else "not installed)")
        )
        return
    if change.remove:
        how = "; install had created it, so it is removed"
    elif change.original_from:
        how = f"; back to the bytes install found (from {change.original_from.name})"
    else:
        how = ""
    if dry_run:
        if change.content is None:
            say(f"{path}: would be removed (dry run, nothing written){how}")
            return
        say(f"{path}: would become (dry run, nothing written){how}:")
        typer.echo(change.content.decode("utf-8"), nl=False)
        return
    done = inst.apply(change)
    backup = f"; the old file is {done.backup}" if done.backup else ""
    say(f"{path}: hooks {verb}ed{how}{backup}")
    note = inst.after_install(agent) if install else None
    if note:
        say(note)
    if install:
        _warm_hook_server()


def _warm_hook_server() -> None:
    """Start the resident hook server now, so the agent's next session start is answered warm
    (a cold server needs longer than the session-start deadline); `run` starts it too."""
    from memory_pipeline.settings import Settings
    from serving.hooks.client import INSTALLED_MARKER, ensure_server, memory_home

    settings = Settings.from_env()
    home = Path(memory_home())
    home.mkdir(parents=True, exist_ok=True)
    (home / INSTALLED_MARKER).touch()
    if settings.reader_url or settings.database_url or settings.pgdata.exists():
        say(f"hook server: {ensure_server(str(home))}")
    # else: no database yet; `memory-pipeline run` creates it and starts the server after


@hooks_app.command("install")
def install(agent: Agent, scope: Scope = "user", dry_run: DryRun = False) -> None:
    """Merge the SessionStart and UserPromptSubmit hooks into the agent's settings (a backup of
    the old file is kept beside it; running it again changes nothing)."""
    _run(agent, scope, dry_run, install=True)


@hooks_app.command("uninstall")
def uninstall(agent: Agent, scope: Scope = "user", dry_run: DryRun = False) -> None:
    """Remove exactly the hooks `hooks install` added, nothing else."""
    _run(agent, scope, dry_run, install=False)
