"""Benchmark figures: printed with the machine and the commit, appended to `BENCHMARKS.md`.

The file starts with a short table of the latest figure for every target (with its commit, load
and date), rebuilt from the history below it on every append; the history is the sections as
they were appended, newest last.
"""

from __future__ import annotations

import os
import platform
import re
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


HEADER = "# Benchmarks\n"
HISTORY = "## History\n\nFigures appended by `memory-pipeline bench`; newest last.\n"
_SECTION = re.compile(
    r"^## (?P<name>.+?)(?: at scale (?P<scale>[\d,]+))? \((?P<when>\d{4}-\d\d-\d\d \d\d:\d\d) UTC"
)
_LOAD = re.compile(r"load average ([\d.]+), ([\d.]+), ([\d.]+)")
_COMMIT = re.compile(r"commit (\S+?)[;,]")


@dataclass(frozen=True)
class _Latest:
    benchmark: str
    scale: str
    figure: str
    value: str
    target: str
    when: str
    load: str
    commit: str


def history(text: str) -> str:
    """The appended sections of a BENCHMARKS.md (everything after its summary), or all of an
    older file that has none."""
    at = text.find(HISTORY)
    if at >= 0:
        return text[at + len(HISTORY) :].lstrip("\n")
    lines = text.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if _SECTION.match(line)), len(lines))
    return "".join(lines[first:])


def latest_targets(text: str) -> list[_Latest]:
    """For each benchmark, scale and figure with a target: its latest value in the history (by
    date, then by order). A part that failed counts only while its benchmark's latest run at
    that scale still reports it failed."""
    found: dict[tuple[str, str, str], tuple[str, int, _Latest]] = {}
    newest_run: dict[tuple[str, str], tuple[str, int]] = {}
    section: tuple[str, str, str, str, str] | None = None  # name, scale, when, load, commit
    for n, line in enumerate(history(text).splitlines()):
        if m := _SECTION.match(line):
            section = (m["name"], m["scale"] or "", m["when"], "", "")
            key = (m["name"], m["scale"] or "")
            newest_run[key] = max(newest_run.get(key, ("", -1)), (m["when"], n))
            run_at = n
            continue
        if section is None:
            continue
        if (load := _LOAD.search(line)) and not section[3]:
            commit = _COMMIT.search(line + ";")
            section = (*section[:3], load[1], commit[1] if commit else "")
            continue
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) != 3 or not cells[2] or cells[0] in ("figure", "---"):
            continue
        name, scale, when, load_1, commit = section
        entry = _Latest(name, scale, cells[0], cells[1], cells[2], when, load_1, commit)
        key3 = (name, scale, re.sub(r": FAILED \(.*$", ": FAILED", cells[0]))
        if key3 not in found or (when, run_at) >= found[key3][:2]:
            found[key3] = (when, run_at, entry)
    out = []
    for (name, scale, figure), (when, run_at, entry) in found.items():
        if figure.endswith(": FAILED") and (when, run_at) != newest_run[(name, scale)]:
            continue
        out.append(entry)
    return sorted(out, key=lambda e: (e.benchmark, -int(e.scale.replace(",", "") or 0)))


def summary(text: str) -> str:
    """The table that opens BENCHMARKS.md: the latest figure for every target."""
    rows = [
        f"| {e.benchmark} | {e.scale} | {e.figure} | {e.value} | {e.target} | {e.commit}"
        f" | {e.load} | {e.when} |"
        for e in latest_targets(text)
    ]
    return "\n".join(
        [
            HEADER,
            "## Latest figure for every target",
            "",
            "Rebuilt from the history below on every `memory-pipeline bench` run; load is the"
            " 1-minute load average on the machine's cores when the run ended.",
            "",
            "| benchmark | scale | figure | value | target | commit | load | date (UTC) |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            HISTORY,
        ]
    )


def append(section: str, path: Path = BENCHMARKS_FILE) -> None:
    """Append a section to the history and rebuild the summary at the top."""
    past = history(path.read_text()) if path.exists() else ""
    body = (past.rstrip("\n") + "\n\n" if past.strip() else "") + section.rstrip("\n") + "\n"
    path.write_text(summary(body) + "\n" + body)
