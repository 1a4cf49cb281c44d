"""`memory-pipeline`: the one command-line entry point.

Each command group is a module here; importing it registers its commands on `app`. Heavy imports
(Dagster, the embedding model) happen inside the commands that need them, so
`memory-pipeline --help` and `db status` answer instantly.
"""

from __future__ import annotations

import typer

from memory_pipeline.cli import backup, db, pipeline, serving  # noqa: F401 - registers commands
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
