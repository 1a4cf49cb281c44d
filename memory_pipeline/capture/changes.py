"""Which partitions a change to the source roots touches (for the sensor, the catch-up, `run`).

A file needs capturing when its version, size and mtime (`protocol.file_state`: for a store that
changes through other paths, a SQLite database and its `-wal`, all of them), differs from what
the last capture stored for its path (`source_files.captured_size/captured_mtime_ns`), or when
its path was never captured. Each file is compared with the database, not with a watermark: a
file copied with its old mtime (`cp -p`, `rsync -a`, an unzipped export, a folder moved in), a
file restored with an older mtime, and a truncated or replaced file are all seen on the next
look.

A look over thousands of unchanged files costs one stat each plus one query. Only a file that
differs is peeked at (`task_days`), and the peek is cached in `source_files` under the size and
mtime it was made for (the cache capture keeps too), so a file is peeked once per version.

Connectors parse third-party formats: a connector raising on one file (or while listing its
roots) is logged and recorded in `capture_skips`, that file is left out of this look, and the
look goes on with every other file.

The transcript sensor (`watch`) requests each version of a file once: what it requested and what
it could not peek at is kept in `sensor_file_requests` (sql/015), not in its Dagster cursor, which
Dagster stores with every tick and which therefore holds only the rename watermarks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg

from memory_pipeline.capture.files import skipped_files
from memory_pipeline.capture.models import ParseIssue
from memory_pipeline.capture.protocol import (
    Connector,
    FileState,
    NamesOutsideTranscripts,
    file_state,
    one_line,
)
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.capture.store import path_text, record_file_issue, unrecorded_file_issues
from memory_pipeline.capture.unreadable import no_task_issue
from memory_pipeline.partitions import partition_days

PEEK_FAILED = "task_days_failed"  # capture_skips reason: the connector raised while peeking
DISCOVER_FAILED = "discover_failed"  # capture_skips reason: the connector raised while listing
NAMES_FAILED = "names_failed"  # capture_skips reason: the connector raised reading task names
ANY_SOURCE = "*"  # a rename watermark for every source (carried over from the old cursor)

log = logging.getLogger(__name__)

# A file version the sensor already dealt with: (size, mtime_ns, look again at ns or 0).
Handled = tuple[int, int, int]
REQUESTED, PEEK_FAILED_OUTCOME = "requested", "peek_failed"  # sensor_file_requests.outcome


@dataclass(frozen=True)
class FileChange:
    """A file whose tasks need capturing: where it is, its state on disk, its partition days."""

    source: str
    path: str
    state: FileState
    days: frozenset[date]
    stored: FileState | None = None  # what capture last stored for the path (None: never)
    # Found through a rename recorded outside the transcript: the names' watermark then.
    renamed_at_ns: int | None = None

    @property
    def renamed(self) -> bool:
        return self.renamed_at_ns is not None

    @property
    def key(self) -> str:
        """The file's key wherever it is stored (`source_files.path`)."""
        return path_text(self.path)[0]

    @property
    def version(self) -> str:
        """This version of the file against the store: a restore to an earlier state after a
        capture, or a second rename, is a new version, never mistaken for an old request."""
        return f"{self.key}:{self.state}:{self.stored}:{self.renamed_at_ns}"


@dataclass(frozen=True)
class Failure:
    """A connector call that raised: recorded as a file skip, retried when the file changes."""

    source: str
    path: str
    reason: str
    detail: str
    state: FileState | None = None

    @property
    def key(self) -> str:
        return path_text(self.path)[0]

    def describe(self) -> str:
        return f"{self.reason}: {self.source} {self.key}: {self.detail}"


@dataclass
class Scan:
    changes: list[FileChange] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    # Files the caller had already handled in this state and still not captured: left alone.
    handled: dict[str, Handled] = field(default_factory=dict)
    names_ns: dict[str, int] = field(default_factory=dict)  # per source: the rename watermark
    files_seen: int = 0

    @property
    def days(self) -> set[date]:
        return {d for c in self.changes for d in c.days}


def scan_changes(
    conn: psycopg.Connection,
    connectors: Iterable[Connector],
    handled: Mapping[str, Handled] | None = None,
    renamed_after_ns: Mapping[str, int] | int = 0,
    now_ns: int | None = None,
) -> Scan:
    """Files that differ from what capture stored, with their partition days.

    `handled` maps a file's key to a version the caller already dealt with (requested, or a
    recorded failure): such a file is neither peeked nor returned again until it changes or
    its look-again time (if any) has come. Renames outside transcripts are looked for after
    `renamed_after_ns` (per source, or one value for all). Peeks are cached and failures
    recorded in the database before returning.
    """
    handled = handled or {}
    now_ns = now_ns if now_ns is not None else _now_ns()
    rows = conn.execute(
        "SELECT path, size, mtime_ns, task_days, captured_size, captured_mtime_ns FROM source_files"
    ).fetchall()
    cached = {r[0]: ((r[1], r[2]), r[3]) for r in rows}
    captured = {r[0]: (r[4], r[5]) for r in rows}
    scan = Scan()
    peeked: list[tuple[str, str, FileState, list[date]]] = []

    def days_of(
        connector: Connector, path: Path, key: str, state: FileState
    ) -> frozenset[date] | None:
        hit = cached.get(key)
        if hit and hit[0] == state:
            return frozenset(partition_days(hit[1]))
        try:
            days = connector.task_days(path)
        except Exception as exc:  # a connector bug on one file must not stop the look
            failure = Failure(connector.source, str(path), PEEK_FAILED, one_line(exc), state)
            log.warning("%s", failure.describe())
            scan.failures.append(failure)
            return None
        if not days:  # no task: a file of bad lines is recorded once per version
            issue = no_task_issue(connector, path)
            if issue is not None:
                scan.failures.append(
                    Failure(connector.source, str(path), issue.reason, issue.detail)
                )
        peeked.append((key, connector.source, state, sorted(days)))
        return frozenset(partition_days(days))

    for connector in connectors:
        try:
            paths = connector.discover()
        except Exception as exc:
            failure = Failure(connector.source, "", DISCOVER_FAILED, one_line(exc))
            log.warning("%s", failure.describe())
            scan.failures.append(failure)
            paths = []
        special = unrecorded_file_issues(conn, connector.source, skipped_files(connector))
        for issue in special:  # never opened (files.py); recorded below, once
            scan.failures.append(Failure(connector.source, issue.path, issue.reason, issue.detail))
        for path in paths:
            scan.files_seen += 1
            state = file_state(connector, path)
            if state is None:
                continue  # vanished since it was listed
            key = path_text(str(path))[0]
            stored = captured.get(key)
            if stored == state:
                continue
            entry = handled.get(key)
            if entry and entry[:2] == state and not (entry[2] and now_ns >= entry[2]):
                scan.handled[key] = entry
                continue
            days = days_of(connector, path, key, state)
            if days is not None:
                scan.changes.append(
                    FileChange(connector.source, str(path), state, days, _known(stored))
                )
        if isinstance(connector, NamesOutsideTranscripts):
            since = (
                renamed_after_ns.get(connector.source, renamed_after_ns.get(ANY_SOURCE, 0))
                if isinstance(renamed_after_ns, Mapping)
                else renamed_after_ns
            )
            scan.names_ns[connector.source] = since
            try:
                renamed, names_ns = connector.renamed_since(since)
            except Exception as exc:
                failure = Failure(connector.source, "", NAMES_FAILED, one_line(exc))
                log.warning("%s", failure.describe())
                scan.failures.append(failure)
                continue
            scan.names_ns[connector.source] = max(since, names_ns)
            for path in sorted(renamed):
                state = file_state(connector, path)
                if state is None:
                    continue
                key = path_text(str(path))[0]
                days = days_of(connector, path, key, state)
                if days is not None:
                    stored = _known(captured.get(key))
                    scan.changes.append(
                        FileChange(connector.source, str(path), state, days, stored, names_ns)
                    )

    with conn.transaction():
        _cache_peeks(conn, peeked)
        for failure in scan.failures:
            issue = ParseIssue(path=failure.path, reason=failure.reason, detail=failure.detail)
            record_file_issue(conn, failure.source, issue, CaptureReport())
    return scan


@dataclass
class WatchCursor:
    """The transcript sensor's Dagster cursor: per source, the watermark of renames recorded
    outside transcripts. A few bytes: per-file state lives in `sensor_file_requests`."""

    names_ns: dict[str, int] = field(default_factory=dict)

    VERSION = 2

    @classmethod
    def load(cls, raw: str | None) -> WatchCursor:
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            return cls()
        if data.get("v") != cls.VERSION:
            # The old cursor (the newest mtime seen) says nothing per file, which the store says
            # anyway; it stays the rename watermark, so an upgrade requests no old rename again.
            old = data.get("mtime_ns")
            return cls(names_ns={ANY_SOURCE: old} if isinstance(old, int) else {})
        return cls(names_ns={k: int(v) for k, v in data.get("names_ns", {}).items()})

    def dump(self) -> str:
        return json.dumps({"v": self.VERSION, "names_ns": self.names_ns}, separators=(",", ":"))


@dataclass
class WatchOutcome:
    """One look of the transcript sensor: what to request, and the cursor to keep."""

    request: list[FileChange]
    deferred: list[FileChange]
    failures: list[Failure]
    cursor: WatchCursor
    files_seen: int

    @property
    def days(self) -> set[date]:
        return {d for c in self.request for d in c.days}


def watch(
    conn: psycopg.Connection,
    connectors: Iterable[Connector],
    cursor: WatchCursor,
    in_flight: Callable[[], tuple[set[date], set[date]]],
    settle_ns: int,
    now_ns: int | None = None,
) -> WatchOutcome:
    """Decide one tick of the transcript sensor.

    `in_flight()` gives the days of waiting and of in-progress runs; it is asked after the
    files were looked at, so a run still waiting then reads them later than this look did.
    Every changed file is requested once per version, except that a change whose days all
    belong to a waiting run is only noted (that run reads the file when it starts) and a file
    change touching a day a run is processing right now waits for the next tick (not noted, so
    it is seen again once that run is over). A requested file still not captured `settle_ns`
    after its last change is requested once more: a chat import's unanswered last prompt is
    captured only after the quiet period, and a run may have died. Renames are never deferred
    (their watermark moves on).
    """
    now_ns = now_ns if now_ns is not None else _now_ns()
    known = _load_requests(conn)
    scan = scan_changes(conn, connectors, known, cursor.names_ns, now_ns)
    waiting, running = in_flight() if scan.changes else (set(), set())
    noted: dict[str, tuple[Handled, str]] = {}
    request, deferred = [], []
    for change in scan.changes:
        if not change.days:
            continue  # no partition to capture; its cached peek keeps seeing it cheap
        if change.days & running and not change.days <= waiting and not change.renamed:
            deferred.append(change)
            continue
        if not change.days <= waiting:
            request.append(change)
        settle_at = change.state[1] + settle_ns
        noted[change.key] = ((*change.state, settle_at if settle_at > now_ns else 0), REQUESTED)
    for failure in scan.failures:
        if failure.state is not None:  # recorded once; looked at again when the file changes
            noted[failure.key] = ((*failure.state, 0), PEEK_FAILED_OUTCOME)
    # Rows of files captured as is, changed again or gone since: no longer needed.
    stale = [key for key in known if key not in scan.handled and key not in noted]
    with conn.transaction():
        _save_requests(conn, noted, stale)
    return WatchOutcome(
        request=request,
        deferred=deferred,
        failures=scan.failures,
        cursor=WatchCursor(names_ns=scan.names_ns),
        files_seen=scan.files_seen,
    )


def _load_requests(conn: psycopg.Connection) -> dict[str, Handled]:
    rows = conn.execute(
        "SELECT path, size, mtime_ns, recheck_at FROM sensor_file_requests"
    ).fetchall()
    return {r[0]: (r[1], r[2], int(r[3].timestamp() * 1e9) if r[3] else 0) for r in rows}


def _save_requests(
    conn: psycopg.Connection, noted: dict[str, tuple[Handled, str]], stale: list[str]
) -> None:
    if stale:
        conn.execute("DELETE FROM sensor_file_requests WHERE path = ANY(%s)", [stale])
    if not noted:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sensor_file_requests (path, size, mtime_ns, outcome, recheck_at)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET size = EXCLUDED.size,"
            " mtime_ns = EXCLUDED.mtime_ns, outcome = EXCLUDED.outcome,"
            " recheck_at = EXCLUDED.recheck_at, updated_at = now()",
            [
                [key, size, mtime, outcome, _from_ns(recheck) if recheck else None]
                for key, ((size, mtime, recheck), outcome) in noted.items()
            ],
        )


def changed_since(connectors: Iterable[Connector], since_ns: int) -> tuple[set[date], int]:
    """Task days of files modified after `since_ns` (their own days, not yet their partitions:
    `memory-pipeline run` records the first one before the partitions are defined), and the
    newest mtime seen.

    Without a database (`memory-pipeline run` plans with since_ns=0: every file). A connector
    raising on a file is logged and that file left out; capture then records it when it reads it.
    """
    days: set[date] = set()
    newest = since_ns
    for connector in connectors:
        try:
            paths = connector.discover()
        except Exception as exc:
            log.warning("%s could not list its files: %s", connector.source, one_line(exc))
            paths = []
        for path in paths:
            state = file_state(connector, path)
            if state is None:
                continue
            mtime = state[1]
            if mtime <= since_ns:
                continue
            newest = max(newest, mtime)
            days |= _safe_days(connector, path)
        if isinstance(connector, NamesOutsideTranscripts):
            try:
                renamed, names_mtime = connector.renamed_since(since_ns)
            except Exception as exc:
                log.warning("%s cannot read task names: %s", connector.source, one_line(exc))
                continue
            newest = max(newest, names_mtime)
            for path in renamed:
                days |= _safe_days(connector, path)
    return days, newest


def _cache_peeks(
    conn: psycopg.Connection, peeked: list[tuple[str, str, FileState, list[date]]]
) -> None:
    """Store peeks in the cache capture reads (`source_files`), keyed by the state peeked."""
    if not peeked:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO source_files (path, source, size, mtime_ns, task_days)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET size = EXCLUDED.size,"
            " mtime_ns = EXCLUDED.mtime_ns, task_days = EXCLUDED.task_days, scanned_at = now()",
            [[key, source, size, mtime, days] for key, source, (size, mtime), days in peeked],
        )


def _known(stored: tuple[int | None, int | None] | None) -> FileState | None:
    if stored is None or stored[0] is None or stored[1] is None:
        return None
    return (stored[0], stored[1])


def _safe_days(connector: Connector, path: Path) -> set[date]:
    try:
        return connector.task_days(path)
    except Exception as exc:
        log.warning(
            "%s could not read the task days of %s: %s",
            connector.source,
            path_text(str(path))[0],
            one_line(exc),
        )
        return set()


def _now_ns() -> int:
    return int(datetime.now(UTC).timestamp() * 1e9)


def _from_ns(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)
