"""The one partitioning scheme: UTC days, from the home's first captured day.

Captured work belongs to the day its task started, so a long-running thread keeps one partition
while it grows. `end_offset=1` makes today a partition, so the sensor can capture live sessions.
Dagster's partition machinery is built for thousands of partitions, not one per task or message.

Where the days start (read once per process, when the definitions are built):
- `MEMORY_PARTITION_START=YYYY-MM-DD`: that day;
- `MEMORY_PARTITION_DAYS=N`: the most recent N days (today included), moving with the date;
- otherwise the home's first captured day, kept in MEMORY_HOME/partitions-start: written once,
  by the first `memory-pipeline run` (the earliest day of the transcripts it found, before it
  builds the definitions) or by the first capture (the day the definitions started at); before
  that, today. So a new install's partition bar starts at its own history, not years earlier.

The first partition holds every day before it too (`day_window`, `partition_day`): a transcript
copied in with an old timestamp, or a chat exported years ago and imported today, is requested,
captured and processed as part of the first partition, never dropped for its date.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg

from memory_pipeline.settings import Settings

# backfill_policy is marked beta in Dagster 1.13; we rely on it knowingly (one run per backfill).
warnings.filterwarnings("ignore", category=dg.BetaWarning)

# The first partition reaches back to this day: older task dates are not dates an agent wrote.
FLOOR = date(1970, 1, 1)
START_FILE = "partitions-start"  # MEMORY_HOME/...: the home's first partition day

# A backfill over any range of days is one run: every partitioned asset works on a day range.
single_run = dg.BackfillPolicy.single_run()

_first: date | None = None
_daily: dg.DailyPartitionsDefinition | None = None


def _today() -> date:
    return datetime.now(UTC).date()


def configured_first_day(settings: Settings, today: date | None = None) -> date:
    """The first partition day the settings and the home's record give (see the module doc)."""
    today = today or _today()
    if settings.partition_start is not None:
        return min(settings.partition_start, today)
    if settings.partition_days > 0:
        return today - timedelta(days=settings.partition_days - 1)
    recorded = recorded_first_day(settings.memory_home)
    return min(recorded, today) if recorded else today


def recorded_first_day(home: Path) -> date | None:
    try:
        return date.fromisoformat((home / START_FILE).read_text().strip())
    except (OSError, ValueError):
        return None  # none yet (or an unreadable one: the definitions start today)


def record_first_day(home: Path, day: date) -> bool:
    """Keep `day` (not before FLOOR, not after today) as the home's first partition day unless
    one is kept already; True if this call wrote it. Atomic: a reader sees a whole date or none."""
    if recorded_first_day(home) is not None:
        return False
    day = min(max(day, FLOOR), _today())
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=home, prefix=".partitions-start.")
        with os.fdopen(fd, "w") as f:
            f.write(f"{day.isoformat()}\n")
        try:
            os.link(tmp, home / START_FILE)  # fails if another process kept one meanwhile
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    except OSError:
        return False  # a read-only home: the definitions start today, as before any capture
    return True


def pin_first_day(settings: Settings, task_days: Callable[[], Iterable[date]]) -> None:
    """Before this process builds its partitions: with neither setting given and no day kept
    yet, keep the earliest of `task_days()` (today when there is none)."""
    if settings.partition_start is not None or settings.partition_days > 0:
        return
    if recorded_first_day(settings.memory_home) is not None:
        return
    record_first_day(settings.memory_home, min([*task_days(), _today()]))


def first_day() -> date:
    """This process's first partition day: fixed at the first call, like the definitions."""
    global _first
    if _first is None:
        _first = configured_first_day(Settings.from_env())
    return _first


def daily_partitions() -> dg.DailyPartitionsDefinition:
    global _daily
    if _daily is None:
        _daily = dg.DailyPartitionsDefinition(
            start_date=first_day().isoformat(), end_offset=1, timezone="UTC"
        )
    return _daily


def partition_day(day: date) -> date | None:
    """The partition a task of `day` belongs to: its own day, the first partition for any day
    before it, None for a day after today (no partition yet) or before FLOOR."""
    if day > _today() or day < FLOOR:
        return None
    return max(day, first_day())


def partition_days(days: Iterable[date]) -> set[date]:
    """The partitions tasks of these days belong to (see `partition_day`)."""
    return {p for p in map(partition_day, days) if p is not None}


def day_window(context: dg.AssetExecutionContext) -> tuple[date, date]:
    """The task days [start, end) a run of the partition (or range) covers: its window, reaching
    back to FLOOR when it starts at the first partition."""
    window = context.partition_time_window
    start = window.start.date()
    return (FLOOR if start <= first_day() else start), window.end.date()


def __getattr__(name: str) -> Any:
    if name == "daily":  # built on first use, so `memory-pipeline run` can record the start first
        return daily_partitions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
