"""Benchmark figures: printed with the machine and the commit, appended to `BENCHMARKS.md`."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory_pipeline.settings import REPO_ROOT

BENCHMARKS_FILE = REPO_ROOT / "BENCHMARKS.md"


@dataclass(frozen=True)
class Figure:
    """One measured figure, with its target when the issue sets one."""

    name: str
    value: float
    unit: str
    target: str | None = None  # e.g. "<= 50 ms"; None when the figure is only reported
    met: bool | None = None  # whether the target holds; None without a target

    def render(self) -> str:
        value = (
            f"{self.value:,.3f}".rstrip("0").rstrip(".") if self.value % 1 else f"{self.value:,.0f}"
        )
        target = ""
        if self.target is not None:
            target = f"{self.target} ({'met' if self.met else 'NOT met'})"
        return f"| {self.name} | {value} {self.unit} | {target} |"


def machine() -> str:
    """Core count, load and commit: a figure means nothing without them."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores, load average {load}, Python {platform.python_version()}, "
        f"commit {_commit()}"
    )


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.stdout.strip() + ("+dirty" if dirty else "")


def render(benchmark: str, scale: int, figures: list[Figure], seconds: float) -> str:
    """One Markdown section: heading, machine line, and a table of figures."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"## {benchmark} at scale {scale:,} ({when})",
        "",
        f"{machine()}; took {seconds:,.0f} s.",
        "",
        "| figure | value | target |",
        "|---|---|---|",
        *(f.render() for f in figures),
        "",
    ]
    return "\n".join(lines)


def append(section: str, path: Path = BENCHMARKS_FILE) -> None:
    if not path.exists():
        path.write_text(
            "# Benchmarks\n\nFigures appended by `memory-pipeline bench`; newest last.\n\n"
        )
    with path.open("a") as f:
        f.write(section + "\n")
