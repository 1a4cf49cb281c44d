from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_pipeline.backup.retention import BackupRecord, RetentionPlan, plan_retention

# Wednesday 19 March 2025, ISO week 2025-W12 (Mon 17 .. Sun 23 March).
NOW = datetime(2025, 3, 19, 12, 0, tzinfo=UTC)


def _backup(day: date, *, good: bool = True, hour: int = 2, tz: timezone = UTC) -> BackupRecord:
    created = datetime(day.year, day.month, day.day, hour, 0, tzinfo=tz)
    backup_id = created.strftime("%Y%m%dT%H%M")
    return BackupRecord(backup_id, created, Path("/backups") / backup_id, good)


def _daily(last: date, days: int, **kwargs) -> list[BackupRecord]:
    return [_backup(last - timedelta(days=i), **kwargs) for i in range(days)]


def _kept(plan: RetentionPlan) -> dict[str, tuple[str, ...]]:
    return {k.backup.id: k.reasons for k in plan.keep}


def _deleted(plan: RetentionPlan) -> dict[str, str]:
    return {d.backup.id: d.reason for d in plan.delete}


def test_thirty_days_of_dailies_keep_7_daily_4_weekly() -> None:
    backups = _daily(date(2025, 3, 19), 30)  # 18 Feb .. 19 Mar, one at 02:00 each day
    plan = plan_retention(backups, NOW, keep_daily=7, keep_weekly=4)
    assert _kept(plan) == {
        "20250319T0200": ("newest good", "daily", "weekly"),  # newest of W12 (current week)
        "20250318T0200": ("daily",),
        "20250317T0200": ("daily",),
        "20250316T0200": ("daily", "weekly"),  # Sunday: newest of W11
        "20250315T0200": ("daily",),
        "20250314T0200": ("daily",),
        "20250313T0200": ("daily",),
        "20250309T0200": ("weekly",),  # newest of W10
        "20250302T0200": ("weekly",),  # newest of W09
    }
    assert set(_deleted(plan).values()) == {"expired"}
    assert len(plan.delete) == 21
    assert [k.backup.created_at for k in plan.keep] == sorted(
        (k.backup.created_at for k in plan.keep), reverse=True
    )


def test_newest_good_kept_even_when_older_than_the_daily_window() -> None:
    backups = _daily(date(2025, 1, 10), 3)  # backups stopped more than two months ago
    plan = plan_retention(backups, NOW, keep_daily=0, keep_weekly=0)
    assert _kept(plan) == {"20250110T0200": ("newest good",)}
    assert _deleted(plan) == {"20250109T0200": "expired", "20250108T0200": "expired"}


def test_days_without_backups_do_not_use_up_daily_slots() -> None:
    # Machine was off for three weeks: the last 7 backups are still kept as dailies.
    backups = _daily(date(2025, 2, 20), 10)
    plan = plan_retention(backups, NOW, keep_daily=7, keep_weekly=0)
    assert sorted(_kept(plan)) == [f"202502{d}T0200" for d in range(14, 21)]


def test_newer_failed_backups_do_not_cost_the_newest_good_one() -> None:
    good = _daily(date(2025, 3, 16), 5)  # 12 .. 16 March
    failed = _daily(date(2025, 3, 19), 3, good=False)  # 17 .. 19 March
    plan = plan_retention(good + failed, NOW, keep_daily=1, keep_weekly=0)
    assert _kept(plan) == {
        "20250319T0200": ("newest unverified",),  # may still be running; else the evidence
        "20250316T0200": ("newest good", "daily"),
    }
    assert _deleted(plan) == {
        "20250318T0200": "not good",
        "20250317T0200": "not good",
        "20250315T0200": "expired",
        "20250314T0200": "expired",
        "20250313T0200": "expired",
        "20250312T0200": "expired",
    }


def test_failed_days_do_not_use_up_daily_slots() -> None:
    good = _daily(date(2025, 3, 12), 5)  # 8 .. 12 March
    failed = _daily(date(2025, 3, 19), 7, good=False)  # 13 .. 19 March
    plan = plan_retention(good + failed, NOW, keep_daily=3, keep_weekly=0)
    kept = _kept(plan)
    assert kept.pop("20250319T0200") == ("newest unverified",)
    assert sorted(kept) == ["20250310T0200", "20250311T0200", "20250312T0200"]


def test_bad_backups_older_than_newest_good_are_deleted_even_inside_the_window() -> None:
    backups = [
        _backup(date(2025, 3, 19), hour=3),
        _backup(date(2025, 3, 19), hour=2, good=False),
        _backup(date(2025, 3, 18), good=False),
        _backup(date(2025, 3, 17)),
    ]
    plan = plan_retention(backups, NOW, keep_daily=7, keep_weekly=4)
    assert _kept(plan) == {
        "20250319T0300": ("newest good", "daily", "weekly"),
        "20250317T0200": ("daily",),
    }
    assert _deleted(plan) == {"20250319T0200": "not good", "20250318T0200": "not good"}


def test_only_the_newest_good_backup_of_a_day_is_its_daily() -> None:
    backups = [
        _backup(date(2025, 3, 19), hour=9, good=False),
        _backup(date(2025, 3, 19), hour=8),
        _backup(date(2025, 3, 19), hour=7),
        _backup(date(2025, 3, 18), hour=23),
        _backup(date(2025, 3, 18), hour=1),
    ]
    plan = plan_retention(backups, NOW, keep_daily=2, keep_weekly=0)
    assert _kept(plan) == {
        "20250319T0900": ("newest unverified",),
        "20250319T0800": ("newest good", "daily"),
        "20250318T2300": ("daily",),
    }


def test_no_good_backup_deletes_nothing() -> None:
    backups = _daily(date(2025, 3, 19), 10, good=False)
    plan = plan_retention(backups, NOW)
    assert plan.delete == ()
    assert {k.reasons for k in plan.keep} == {("no good backup",)}
    assert plan_retention([], NOW) == RetentionPlan((), ())


def test_weeks_are_iso_weeks_across_a_year_boundary() -> None:
    # Mon 30 Dec 2024 is in ISO week 2025-W01, together with Sun 5 Jan 2025.
    backups = [_backup(date(2025, 1, 5)), _backup(date(2024, 12, 30)), _backup(date(2024, 12, 29))]
    now = datetime(2025, 1, 6, 12, tzinfo=UTC)
    plan = plan_retention(backups, now, keep_daily=0, keep_weekly=2)
    assert _kept(plan) == {
        "20250105T0200": ("newest good", "weekly"),
        "20241229T0200": ("weekly",),  # 2024-W52
    }


def test_days_are_calendar_days_in_nows_timezone() -> None:
    plus_two = timezone(timedelta(hours=2))
    # 23:30 UTC on 17 March is already 01:30 on 18 March at UTC+2.
    night = BackupRecord("night", datetime(2025, 3, 17, 23, 30, tzinfo=UTC), Path("n"), True)
    noon = BackupRecord("noon", datetime(2025, 3, 18, 12, 0, tzinfo=plus_two), Path("m"), True)
    # At UTC+2 both are on 18 March: one daily. In UTC they are on 17 and 18 March: two.
    local = plan_retention([night, noon], NOW.astimezone(plus_two), keep_daily=2, keep_weekly=0)
    assert _kept(local) == {"noon": ("newest good", "daily")}
    utc = plan_retention([night, noon], NOW, keep_daily=2, keep_weekly=0)
    assert _kept(utc) == {"noon": ("newest good", "daily"), "night": ("daily",)}


def test_invalid_input() -> None:
    one = _backup(date(2025, 3, 19))
    with pytest.raises(ValueError, match="unique"):
        plan_retention([one, one], NOW)
    with pytest.raises(ValueError, match=">= 0"):
        plan_retention([one], NOW, keep_daily=-1)
    with pytest.raises(ValueError, match="aware"):
        plan_retention([one], NOW.replace(tzinfo=None))
