"""A transcript file in which no task could be read: one recorded file skip, `no_task_found`.

Capture is planned by task day, and a file whose lines are all bad (random bytes, a binary
file with a `.jsonl` name, a format we do not read) has no task and so no day: no partition run
would ever parse it, and its bad lines would never be recorded anywhere. The peek that finds no
task day in a non-empty file (capture's `file_days`, the sensor's look) therefore parses the file
once per version and, when that finds no task either, returns one file issue saying what the
lines were. Files that are still being written (only a half-written last line) and empty files
are not recorded: they are a moment, not a problem.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from memory_pipeline.capture.models import ParseIssue
from memory_pipeline.capture.protocol import Connector, one_line

NO_TASK_FOUND = "no_task_found"  # capture_skips reason (kind 'file')
_MOMENTARY = frozenset({"truncated_line", "changed_while_reading", "empty_file"})


def no_task_issue(connector: Connector, path: Path) -> ParseIssue | None:
    """The file skip for a file without any readable task, or None. Never raises."""
    try:
        if path.stat().st_size == 0:
            return None
        result = connector.parse(path)
    except Exception as exc:  # a connector bug: still a file nobody could read
        return ParseIssue(path=str(path), reason=NO_TASK_FOUND, detail=one_line(exc))
    if result.tasks:
        return None
    counts = Counter(i.reason for i in result.issues if i.reason not in _MOMENTARY)
    if not counts:
        return None
    first = next(i for i in result.issues if i.reason not in _MOMENTARY)
    where = f" at line {first.line}" if first.line else ""
    kinds = ", ".join(f"{reason} {n:,}" for reason, n in counts.most_common())
    detail = f"no task could be read; skipped: {kinds}; first: {first.reason}{where}"
    return ParseIssue(path=str(path), reason=NO_TASK_FOUND, detail=detail[:500])
