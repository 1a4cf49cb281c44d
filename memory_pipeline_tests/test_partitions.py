"""Where the daily partitions start: a new home's first captured day (kept once), the most
recent N days, or an explicit day; never 2020-01-01 on a new install. Tasks older than the first
partition belong to it (test_sensor.py captures one); `memory-pipeline run` keeps a new home's
earliest transcript day (test_main_command.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_pipeline.errors import UserError
from memory_pipeline.partitions import (
    FLOOR,
    START_FILE,
    configured_first_day,
    pin_first_day,
    record_first_day,
    recorded_first_day,
)
from memory_pipeline.settings import Settings

TODAY = datetime.now(UTC).date()


def settings(monkeypatch: pytest.MonkeyPatch, home: Path, **env: str) -> Settings:
    monkeypatch.setenv("MEMORY_HOME", str(home))
    for name in ("MEMORY_PARTITION_START", "MEMORY_PARTITION_DAYS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


def first_partition_in_a_new_process(home: Path, **env: str) -> str:
    """The first partition key of the definitions a fresh process builds for `home`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PARTITION")}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from memory_pipeline.definitions import defs\n"
            "from memory_pipeline.partitions import daily\n"
            "print(daily.get_first_partition_key())",
        ],
        env={**clean, "MEMORY_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return out.stdout.strip()


def test_a_new_home_starts_today_and_then_at_its_first_captured_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    s = settings(monkeypatch, home)
    assert configured_first_day(s) == TODAY  # nothing captured: one day, not six years
    first = TODAY - timedelta(days=40)
    pin_first_day(s, lambda: [TODAY - timedelta(days=3), first, TODAY])
    assert recorded_first_day(home) == first
    assert first_partition_in_a_new_process(home) == first.isoformat()
    # Kept once: a later, older transcript belongs to the first partition instead.
    pin_first_day(s, lambda: [first - timedelta(days=300)])
    assert configured_first_day(s) == first


def test_the_most_recent_n_days_or_an_explicit_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    record_first_day(home, TODAY - timedelta(days=500))
    s = settings(monkeypatch, home, MEMORY_PARTITION_DAYS="30")
    assert configured_first_day(s) == TODAY - timedelta(days=29)
    s = settings(monkeypatch, home, MEMORY_PARTITION_START="2024-03-01")
    assert configured_first_day(s) == date(2024, 3, 1)
    assert (
        first_partition_in_a_new_process(home, MEMORY_PARTITION_DAYS="7")
        == (TODAY - timedelta(days=6)).isoformat()
    )
    # Neither setting: the day the home kept.
    assert configured_first_day(settings(monkeypatch, home)) == TODAY - timedelta(days=500)


def test_a_kept_day_is_bounded_and_written_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert record_first_day(home, date(1900, 1, 1))
    assert recorded_first_day(home) == FLOOR
    assert not record_first_day(home, date(2025, 1, 1))
    assert recorded_first_day(home) == FLOOR
    (home / START_FILE).write_text("garbage")  # an unreadable record: start today, as new
    assert recorded_first_day(home) is None


@given(
    st.text(max_size=20).filter(lambda v: "\0" not in v and v.strip() and not _is_day(v.strip()))
)
def test_a_bad_start_setting_is_one_clear_line(value: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORY_PARTITION_START", value)
        with pytest.raises(UserError, match=r"MEMORY_PARTITION_START=.* YYYY-MM-DD$"):
            Settings.from_env()


@given(st.text(max_size=20).filter(lambda v: "\0" not in v and v.strip() and not _whole(v.strip())))
def test_a_bad_days_setting_is_one_clear_line(value: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMORY_PARTITION_DAYS", value)
        with pytest.raises(UserError, match=r"MEMORY_PARTITION_DAYS=.*whole number >= 0$"):
            Settings.from_env()


def _whole(value: str) -> bool:
    return value.isascii() and value.isdigit()


def _is_day(value: str) -> bool:
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True
