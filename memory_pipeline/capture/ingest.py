"""Capture every task that started in a window of days, from every connector.

A partition run reads only the files that hold tasks of its days (known from `source_files`,
refreshed when a file's size or mtime changes) and commits one file at a time, so a run that
fails halfway leaves whole files captured and the rest for the retry. Bad input never stops the
run: parser problems are recorded skips.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path

import psycopg

from memory_pipeline.capture.models import Connector, ParseIssue, ParseResult
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.capture.store import record_file_issue, store_task, task_day

log = logging.getLogger(__name__)


def file_days(
    conn: psycopg.Connection, connector: Connector, path: Path
) -> tuple[set[date], os.stat_result | None]:
    """The task start days of a file (cached unless the file changed), and its stat."""
    try:
        st = path.stat()
    except OSError:
        return set(), None
    row = conn.execute(
        "SELECT size, mtime_ns, task_days FROM source_files WHERE path = %s", [str(path)]
    ).fetchone()
    if row and row[0] == st.st_size and row[1] == st.st_mtime_ns:
        return set(row[2]), st
    days = connector.task_days(path)
    conn.execute(
        "INSERT INTO source_files (path, source, size, mtime_ns, task_days)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET size = EXCLUDED.size,"
        " mtime_ns = EXCLUDED.mtime_ns, task_days = EXCLUDED.task_days, scanned_at = now()",
        [str(path), connector.source, st.st_size, st.st_mtime_ns, sorted(days)],
    )
    return days, st


def capture_window(
    conn: psycopg.Connection,
    connectors: Iterable[Connector],
    start: date,
    end: date,
    progress: Callable[[str], None] | None = None,
) -> CaptureReport:
    """Capture tasks whose start day d satisfies start <= d < end."""
    report = CaptureReport()
    for connector in connectors:
        paths = connector.discover()
        for path in paths:
            report.files_seen += 1
            with conn.transaction():
                days, st = file_days(conn, connector, path)
            if st is None or not any(start <= d < end for d in days):
                continue
            result = _parse(connector, path)
            report.files_parsed += 1
            with conn.transaction():
                for issue in result.issues:
                    record_file_issue(conn, connector.source, issue, report)
                for task in result.tasks:
                    if start <= task_day(task) < end:
                        store_task(conn, task, report)
                if all(start <= d < end for d in days):
                    # Every task of the file is now stored as of this size and mtime.
                    conn.execute(
                        "UPDATE source_files SET captured_size = %s, captured_mtime_ns = %s"
                        " WHERE path = %s",
                        [st.st_size, st.st_mtime_ns, str(path)],
                    )
            if progress and report.files_parsed % 25 == 0:
                progress(f"{connector.source}: {report.files_parsed} files parsed")
    return report


def _parse(connector: Connector, path: Path) -> ParseResult:
    # Connectors turn bad input into ParseIssues; this guard keeps a connector bug on one
    # file from stopping the capture of every other file.
    try:
        return connector.parse(path)
    except Exception as exc:
        log.exception("connector %s failed on %s", connector.source, path)
        issue = ParseIssue(
            path=str(path), reason="parser_error", detail=f"{type(exc).__name__}: {exc}"
        )
        return ParseResult(issues=[issue])
