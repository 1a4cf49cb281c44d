"""Which partitions a change to the source roots touches (for the sensor and the schedule)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg

from memory_pipeline.capture.models import Connector, NamesOutsideTranscripts
from memory_pipeline.partitions import PARTITION_START

FIRST_DAY = date.fromisoformat(PARTITION_START)


def _mtime_ns(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def partition_days(days: Iterable[date]) -> set[date]:
    """Only days that exist as partitions: from PARTITION_START to today (UTC)."""
    last = datetime.now(UTC).date()
    return {d for d in days if FIRST_DAY <= d <= last}


def changed_since(connectors: Iterable[Connector], since_ns: int) -> tuple[set[date], int]:
    """Task days of files modified after `since_ns`, and the newest mtime seen (the new cursor).

    Only changed files are peeked at (`task_days` reads a file's first records), so a tick over
    thousands of unchanged transcripts costs one stat each.
    """
    days: set[date] = set()
    newest = since_ns
    for connector in connectors:
        for path in connector.discover():
            mtime = _mtime_ns(path)
            if mtime is None or mtime <= since_ns:
                continue
            newest = max(newest, mtime)
            days |= connector.task_days(path)
        if isinstance(connector, NamesOutsideTranscripts):
            renamed, names_mtime = connector.renamed_since(since_ns)
            newest = max(newest, names_mtime)
            for path in renamed:
                days |= connector.task_days(path)
    return partition_days(days), newest


def changed_against_store(
    conn: psycopg.Connection, connectors: Iterable[Connector], renamed_after_ns: int
) -> set[date]:
    """Task days of files that differ from what the last capture stored (or were never stored),
    and of tasks renamed after `renamed_after_ns`."""
    known = {
        path: (size, mtime)
        for path, size, mtime in conn.execute(
            "SELECT path, captured_size, captured_mtime_ns FROM source_files"
        )
    }
    days: set[date] = set()
    for connector in connectors:
        for path in connector.discover():
            try:
                st = path.stat()
            except OSError:
                continue
            if known.get(str(path)) != (st.st_size, st.st_mtime_ns):
                days |= connector.task_days(path)
        if isinstance(connector, NamesOutsideTranscripts):
            for path in connector.renamed_since(renamed_after_ns)[0]:
                days |= connector.task_days(path)
    return partition_days(days)
