"""`memory-pipeline`: the one command-line entry point.

Each command group is a module here; importing it registers its commands on `app`. Heavy imports
(Dagster, the embedding model) happen inside the commands that need them, so
`memory-pipeline --help` and `db status` answer instantly.
"""

from __future__ import annotations

import sys

if sys.argv[1:2] == ["hook"] and sys.argv[2:3] in (["session-start"], ["prompt"]):
    # The agent's hook runs on every prompt: hand it to the thin client before the imports
    # below, which alone take longer than its 0.5 s deadline (serving/hooks/client.py).
    from serving.hooks.client import main as _hook_main

    raise SystemExit(_hook_main(sys.argv[2:]))

import typer

from memory_pipeline.cli import (  # noqa: F401 - importing registers the commands
    backup,
    bench,
    brief,
    capture,
    db,
    dream,
    forget,
    heal,
    hooks,
    inbox,
    pipeline,
    serving,
)
from memory_pipeline.cli.app import app
from memory_pipeline.errors import UserError


def main() -> None:
    try:
        app()
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
