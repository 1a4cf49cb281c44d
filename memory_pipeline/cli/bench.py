"""`memory-pipeline bench`: the performance harness, never part of the default test run."""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError


@app.command()
def bench(
    which: Annotated[
        str, typer.Argument(help="search, embed, ingest, backup, relationships, freshness, or all.")
    ] = "all",
    scale: Annotated[int, typer.Option(help="Memories in the generated corpus.")] = 100_000,
    output: Annotated[
        Path | None, typer.Option(help="Markdown file the figures are appended to.")
    ] = None,
    transcript_mb: Annotated[
        float | None,
        typer.Option(help="ingest: size of the one large transcript (default: scale / 200 MB)."),
    ] = None,
) -> None:
    """Measure search, embedding, ingest, backup and relationship discovery; print the figures
    and append them to BENCHMARKS.md. Runs in a temporary database of its own."""
    from memory_pipeline.bench import BENCHMARKS
    from memory_pipeline.bench.report import BENCHMARKS_FILE, append, render

    names = list(BENCHMARKS) if which == "all" else [which]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise UserError(
            f"no benchmark named {unknown[0]!r}; choose one of: all, {', '.join(BENCHMARKS)}"
        )
    for name in names:
        module = importlib.import_module(BENCHMARKS[name])
        say(f"bench {name} at scale {scale:,} ...")
        started = time.monotonic()
        extra = {"large_mb": transcript_mb} if name == "ingest" and transcript_mb else {}
        figures = module.run(scale=scale, progress=say, **extra)
        section = render(name, scale, figures, time.monotonic() - started)
        typer.echo(section)
        append(section, output or BENCHMARKS_FILE)
