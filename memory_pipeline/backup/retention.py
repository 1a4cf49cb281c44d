"""Which backups to keep: a pure function of the backups that exist, `now`, and two counts.

Semantics (the same as restic's --keep-daily/--keep-weekly, plus two safety rules):

- Only good backups (verified, or marked good in their manifest) count for the rules below.
- daily: the newest good backup of each of the `keep_daily` most recent calendar days that have a
  good backup. Days without one do not use up a slot, so a laptop that was off for two weeks
  still keeps its last `keep_daily` dailies instead of losing them all.
- weekly: the newest good backup of each of the `keep_weekly` most recent ISO weeks (Monday to
  Sunday) that have a good backup; the current week counts. The rules overlap: a backup can be
  both daily and weekly. With 7 and 4 and one backup a day, that keeps the last 7 days plus the
  last backup of each of the 3 weeks before the current one.
- newest good: the newest good backup is always kept, even with both counts 0 or when it is
  months old.
- newest unverified: if the newest backup overall is newer than the newest good one and not good,
  it is kept too: a run may still be writing or verifying it, and if it failed it is the evidence.
  Older not-good backups, including failed ones newer than the newest good, are deleted.
- no good backup at all: nothing is deleted. With nothing verified, the unverified files may be
  the only copies there are; deleting them is for a human to decide.

Days and weeks are calendar days in `now`'s timezone: pass an aware local `now` (e.g.
`datetime.now().astimezone()`) and aware `created_at`s, or all naive local times.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Literal

from memory_pipeline.tuning import BACKUP_KEEP_DAILY, BACKUP_KEEP_WEEKLY

KeepReason = Literal["newest good", "newest unverified", "no good backup", "daily", "weekly"]
DeleteReason = Literal["expired", "not good"]
_REASON_ORDER: tuple[KeepReason, ...] = (
    "newest good",
    "newest unverified",
    "no good backup",
    "daily",
    "weekly",
)


@dataclass(frozen=True)
class BackupRecord:
    id: str
    created_at: datetime
    path: Path
    good: bool  # False means "not known to be good": failed, unverified or still being written


@dataclass(frozen=True)
class Kept:
    backup: BackupRecord
    reasons: tuple[KeepReason, ...]  # every rule that keeps it, in _REASON_ORDER


@dataclass(frozen=True)
class Deleted:
    backup: BackupRecord
    reason: DeleteReason  # "expired": good but outside every rule; "not good": failed/unverified


@dataclass(frozen=True)
class RetentionPlan:
    keep: tuple[Kept, ...]  # newest first
    delete: tuple[Deleted, ...]  # newest first


def plan_retention(
    backups: Iterable[BackupRecord],
    now: datetime,
    *,
    keep_daily: int = BACKUP_KEEP_DAILY,
    keep_weekly: int = BACKUP_KEEP_WEEKLY,
) -> RetentionPlan:
    if keep_daily < 0 or keep_weekly < 0:
        raise ValueError("keep_daily and keep_weekly must be >= 0")
    # Newest first; the id breaks ties so the plan is deterministic.
    ordered = sorted(backups, key=lambda b: (b.created_at, b.id), reverse=True)
    if len({b.id for b in ordered}) != len(ordered):
        raise ValueError("backup ids must be unique")
    tz = now.tzinfo
    for b in ordered:
        if (b.created_at.tzinfo is None) != (tz is None):
            raise ValueError(f"backup {b.id}: created_at and now must both be aware or both naive")

    reasons: dict[str, set[KeepReason]] = {}
    good = [b for b in ordered if b.good]
    if not good:
        for b in ordered:
            reasons[b.id] = {"no good backup"}
    else:
        reasons[good[0].id] = {"newest good"}
        if not ordered[0].good:
            reasons[ordered[0].id] = {"newest unverified"}
        for b in _newest_per_period(good, lambda b: _local_day(b, tz), keep_daily):
            reasons.setdefault(b.id, set()).add("daily")
        for b in _newest_per_period(
            good, lambda b: _local_day(b, tz).isocalendar()[:2], keep_weekly
        ):
            reasons.setdefault(b.id, set()).add("weekly")

    keep = tuple(
        Kept(b, tuple(r for r in _REASON_ORDER if r in reasons[b.id]))
        for b in ordered
        if b.id in reasons
    )
    delete = tuple(
        Deleted(b, "expired" if b.good else "not good") for b in ordered if b.id not in reasons
    )
    return RetentionPlan(keep, delete)


def _local_day(backup: BackupRecord, tz: tzinfo | None) -> date:
    return (backup.created_at if tz is None else backup.created_at.astimezone(tz)).date()


def _newest_per_period(
    newest_first: Sequence[BackupRecord],
    period: Callable[[BackupRecord], Hashable],
    count: int,
) -> list[BackupRecord]:
    """The first (newest) backup of each of the `count` most recent periods that have one."""
    picked: list[BackupRecord] = []
    seen: set[Hashable] = set()
    for b in newest_first:
        if len(seen) == count:
            break
        key = period(b)
        if key not in seen:
            seen.add(key)
            picked.append(b)
    return picked
