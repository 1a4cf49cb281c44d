"""The Typer application every command module registers on, and how commands talk to the user."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Persistent memory for AI coding agents: a Dagster asset graph over PostgreSQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def say(message: str) -> None:
    """Progress and status go to stderr, so stdout stays clean for --json output."""
    typer.echo(message, err=True)


def safe_url(url: str) -> str:
    """A URL with any password replaced, for printing."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    auth, tail = rest.split("@", 1)
    user = auth.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in auth else ''}@{tail}"
