"""Capture every task that started in a window of days, from every connector.

A partition run reads only the files that hold tasks of its days (known from `source_files`,
refreshed when a file's size or mtime changes) and commits one file at a time, so a run that
fails halfway leaves whole files captured and the rest for the retry. Bad input never stops the
run, isolated by line, task, file and source:

* a bad line is a ParseIssue of its connector (recorded), the rest of the file is used;
* a task whose storing fails (a connector bug, a value the database refuses) is rolled back alone
  (a savepoint), recorded as a `store_failed` task skip, and the file's other tasks are stored;
* a file whose `task_days`, parse or storing fails as a whole is rolled back alone and recorded
  (`task_days_failed`, `parser_error`, `store_failed`); the run goes on with the next file;
* a connector whose `discover()` fails is recorded (`discover_failed`); the others go on;
* a special file with a transcript's name (a FIFO, a device, a directory, a symlink out of the
  source root) is never opened: recorded as `not_a_regular_file` / `symlink_outside_source`.

A file with a failed task, or with a task that will complete by time alone (`settles_at`, the chat
import's quiet rule), is not marked captured, so the hourly catch-up reads it again. Only a lost
database connection stops the run: then nothing could be recorded, and the run's retry resumes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from pathlib import Path

import psycopg

from memory_pipeline.capture.files import skipped_files
from memory_pipeline.capture.jsonl import JsonlRead
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult
from memory_pipeline.capture.protocol import Connector, FileState, file_state, one_line
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.capture.store import (
    clear_store_failure,
    path_text,
    record_file_issue,
    record_store_failure,
    store_task,
    task_day,
    unrecorded_file_issues,
)
from memory_pipeline.capture.unreadable import no_task_issue
from memory_pipeline.forget.privacy import CaptureRules

log = logging.getLogger(__name__)


def file_days(
    conn: psycopg.Connection,
    connector: Connector,
    path: Path,
    report: CaptureReport | None = None,
) -> tuple[set[date], FileState | None]:
    """The task start days of a file (cached unless the file changed), and its version."""
    state = file_state(connector, path)
    if state is None:
        return set(), None
    key = path_text(str(path))[0]
    row = conn.execute(
        "SELECT size, mtime_ns, task_days FROM source_files WHERE path = %s", [key]
    ).fetchone()
    if row and (row[0], row[1]) == state:
        return set(row[2]), state
    days = connector.task_days(path)
    if not days:  # no task: a file of bad lines is recorded once per version (unreadable.py)
        issue = no_task_issue(connector, path)
        if issue is not None:
            record_file_issue(conn, connector.source, issue, report or CaptureReport())
    conn.execute(
        "INSERT INTO source_files (path, source, size, mtime_ns, task_days)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET size = EXCLUDED.size,"
        " mtime_ns = EXCLUDED.mtime_ns, task_days = EXCLUDED.task_days, scanned_at = now()",
        [key, connector.source, *state, sorted(days)],
    )
    return days, state


def capture_window(
    conn: psycopg.Connection,
    connectors: Iterable[Connector],
    start: date,
    end: date,
    progress: Callable[[str], None] | None = None,
) -> CaptureReport:
    """Capture tasks whose start day d satisfies start <= d < end."""
    CaptureRules.from_settings()  # a bad MEMORY_EXCLUDE / MEMORY_PRIVATE rule stops the run here
    report = CaptureReport()
    for connector in connectors:
        before = report.source_counts()
        try:
            _capture_connector(conn, connector, start, end, report, progress)
        finally:
            report.count_source(connector.source, before)
    return report


def _capture_connector(
    conn: psycopg.Connection,
    connector: Connector,
    start: date,
    end: date,
    report: CaptureReport,
    progress: Callable[[str], None] | None,
) -> None:
    """One connector's files of the window, counted into `report`."""
    try:
        paths = connector.discover()
    except Exception as exc:
        _failed(conn, connector.source, "", "discover_failed", exc, report)
        return
    with conn.transaction():  # special files, never opened (files.py): the same row each run
        for issue in unrecorded_file_issues(conn, connector.source, skipped_files(connector)):
            record_file_issue(conn, connector.source, issue, report)
    for path in paths:
        report.files_seen += 1
        try:
            with conn.transaction():
                days, st = file_days(conn, connector, path, report)
        except Exception as exc:
            _failed(conn, connector.source, str(path), "task_days_failed", exc, report)
            continue
        if st is None or not any(start <= d < end for d in days):
            continue
        result = _parse(connector, path)
        report.files_parsed += 1
        try:
            file_report = _store_file(conn, connector, path, result, days, st, start, end)
        except Exception as exc:
            _failed(conn, connector.source, str(path), "store_failed", exc, report)
            continue
        report.merge(file_report)
        if progress and report.files_parsed % 25 == 0:
            progress(f"{connector.source}: {report.files_parsed} files parsed")


def _store_file(
    conn: psycopg.Connection,
    connector: Connector,
    path: Path,
    result: ParseResult | _Streamed,
    days: set[date],
    st: FileState,
    start: date,
    end: date,
) -> CaptureReport:
    """Store one parsed file in one transaction; its counts, merged by the caller on success."""
    report = CaptureReport()
    with conn.transaction():
        complete = True
        for task in result.tasks:  # a streamed file's tasks arrive one at a time
            if _in_window(task, start, end) is False:
                continue  # (a start time without a UTC day fails in _store_task, recorded)
            stored = _store_task(conn, task, report)
            if not stored or task.settles_at is not None:
                complete = False  # read the file again: a retry, or the quiet rule's turn
        for issue in result.issues:  # after the tasks: a stream knows them at its end
            record_file_issue(conn, connector.source, issue, report)
        if complete and all(start <= d < end for d in days):
            # Every task of the file is now stored as of this size and mtime.
            conn.execute(
                "UPDATE source_files SET captured_size = %s, captured_mtime_ns = %s"
                " WHERE path = %s",
                [*st, path_text(str(path))[0]],
            )
    return report


def _in_window(task: ParsedTask, start: date, end: date) -> bool | None:
    """Whether the task starts in the window; None when its start cannot even be placed."""
    try:
        return start <= task_day(task) < end
    except (OverflowError, ValueError, AttributeError, TypeError):
        return None


def _store_task(conn: psycopg.Connection, task: ParsedTask, report: CaptureReport) -> bool:
    """Store one task in a savepoint; on failure roll it back alone and record it."""
    task_report = CaptureReport()
    try:
        with conn.transaction():
            store_task(conn, task, task_report)
            clear_store_failure(conn, task)
    except Exception as exc:
        _reraise_if_disconnected(conn)
        log.warning("storing %s task %r failed: %s", task.source, task.native_id[:80], exc)
        record_store_failure(conn, task, one_line(exc))
        report.tasks_seen += 1
        report.count_skip(task.source, task.native_id[:80], "store_failed")
        return False
    report.merge(task_report)
    return True


def _failed(
    conn: psycopg.Connection,
    source: str,
    path: str,
    reason: str,
    exc: Exception,
    report: CaptureReport,
) -> None:
    """Record a file or connector whose processing failed as a whole; the run goes on."""
    _reraise_if_disconnected(conn)
    log.warning("%s %s: %s: %s", source, path or "(connector)", reason, one_line(exc))
    issue = ParseIssue(path=path, reason=reason, detail=one_line(exc))
    with conn.transaction():
        record_file_issue(conn, source, issue, report)


def _reraise_if_disconnected(conn: psycopg.Connection) -> None:
    """A lost connection is not bad input: stop the run (its retry resumes where it stopped)."""
    if conn.closed or conn.broken:
        raise


class _Streamed:
    """A file whose connector streams (the chat import): tasks are parsed while they are
    stored, so a 500 MB file is never held whole; `issues` is complete once `tasks` is spent."""

    def __init__(self, connector: Connector, path: Path) -> None:
        self.read = JsonlRead(path=path)
        self.issues = self.read.issues
        self._connector, self._path = connector, path

    @property
    def tasks(self) -> Iterator[ParsedTask]:
        try:
            yield from self._connector.stream(self._path, self.read)  # type: ignore[attr-defined]
        except Exception as exc:  # a connector bug: the tasks so far stay, the rest is recorded
            log.exception("connector %s failed on %s", self._connector.source, self._path)
            self.read.issue("parser_error", one_line(exc))


def _parse(connector: Connector, path: Path) -> ParseResult | _Streamed:
    if hasattr(connector, "stream"):
        return _Streamed(connector, path)
    # Connectors turn bad input into ParseIssues; this guard keeps a connector bug on one
    # file from stopping the capture of every other file.
    try:
        return connector.parse(path)
    except Exception as exc:
        log.exception("connector %s failed on %s", connector.source, path)
        issue = ParseIssue(path=str(path), reason="parser_error", detail=one_line(exc))
        return ParseResult(issues=[issue])
