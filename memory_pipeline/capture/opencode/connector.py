"""OpenCodeConnector: OpenCode sessions of every storage generation -> ParsedTask.

The unit capture reads is a file: a JSON session file (`storage/session/<projectID>/<id>.json`,
or the legacy `project/<dir>/storage/session/info/<id>.json`) carries one task; a SQLite database
(`opencode.db`) carries every session it holds. A session stored in more than one generation (an
upgrade copies the old store forward and leaves it) is read only from the newest one.

`state_paths()` gives the change fingerprint (protocol.StateOutsideTranscripts): the JSON
generation writes a session's messages and parts as separate small files, so the session file's
own stat says nothing about a new answer; the database changes in place, mostly in its `-wal`.
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

from memory_pipeline.capture.files import sort_candidates
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult
from memory_pipeline.capture.opencode import turns as T
from memory_pipeline.capture.opencode.storage import (
    RawSession,
    json_state_paths,
    read_json,
    read_json_session,
    read_sqlite,
    sqlite_session_ids,
    sqlite_starts,
    sqlite_state_paths,
    state_of,
)
from memory_pipeline.capture.protocol import ConnectorOptions


def is_database(path: Path) -> bool:
    return path.suffix == ".db"


class OpenCodeConnector:
    """OpenCode's data directory (`$XDG_DATA_HOME/opencode`, default ~/.local/share/opencode)."""

    source = T.SOURCE

    def __init__(self, data_home: Path, database: Path | None = None) -> None:
        """`database`: `$OPENCODE_DB` when set (absolute, or relative to the data home)."""
        self.data_home = Path(data_home)
        if database is not None and not Path(database).is_absolute():
            database = self.data_home / database
        self.database = Path(database) if database is not None else None
        self.skipped_files: list[ParseIssue] = []

    # --- discovery --------------------------------------------------------------------------

    def databases(self) -> list[Path]:
        found: list[Path] = []
        if self.database is not None:
            found.append(self.database)
        try:
            with os.scandir(self.data_home) as it:
                for entry in it:
                    if entry.name.startswith("opencode") and entry.name.endswith(".db"):
                        found.append(Path(entry.path))
        except OSError:
            pass
        return sorted(set(found))

    def discover(self) -> list[Path]:
        """Databases, then JSON session files not also held by a newer generation, sorted."""
        self.skipped_files = []
        dbs = sort_candidates(
            [p for p in self.databases() if p.exists() or p.is_symlink()],
            self.data_home if self.database is None else self.database.parent,
            self.skipped_files,
        )
        in_db: set[str] = set()
        for db in dbs:
            in_db |= sqlite_session_ids(db)
        current: list[Path] = []
        sessions = self.data_home / "storage" / "session"
        try:
            for project in sorted(sessions.iterdir()):
                if project.is_dir() and not project.is_symlink():
                    current += [p for p in project.glob("*.json") if p.stem not in in_db]
        except OSError:
            pass
        current = sort_candidates(current, self.data_home, self.skipped_files)
        seen = in_db | {p.stem for p in current}
        legacy: list[Path] = []
        try:
            for project in sorted((self.data_home / "project").iterdir()):
                info = project / "storage" / "session" / "info"
                legacy += [p for p in info.glob("*.json") if p.stem not in seen]
        except OSError:
            pass
        legacy = sort_candidates(legacy, self.data_home, self.skipped_files)
        return sorted([*dbs, *current, *legacy])

    def state_paths(self, path: Path) -> list[Path]:
        """Every path whose stat makes up `path`'s version (protocol.StateOutsideTranscripts)."""
        path = Path(path)
        return sqlite_state_paths(path) if is_database(path) else json_state_paths(path)

    # --- days -------------------------------------------------------------------------------

    def task_days(self, path: Path) -> set[date]:
        """Start days, the cheap way: the session file or the DB's session rows; a session
        with no usable creation time costs a read of its messages (no parts), as in parse()."""
        path = Path(path)
        try:
            if is_database(path):
                sessions = sqlite_starts(path, lambda created: T.from_ms(created) is not None)
                return {s.date() for s in map(T.started_at, sessions) if s is not None}
            info = read_json(path, [])
            if info is None:
                return set()
            start = T.started_at(RawSession(id=path.stem, info=info, generation="json"))
            if start is None:  # as parse(): the first message's time
                start = T.started_at(read_json_session(path, []) or RawSession("", {}, "json"))
            return {start.date()} if start is not None else set()
        except Exception:  # parse() records what is wrong; a peek gives no day
            return set()

    # --- parse ------------------------------------------------------------------------------

    def parse(self, path: Path) -> ParseResult:
        path = Path(path)
        issues: list[ParseIssue] = []
        try:
            if is_database(path):
                sessions = read_sqlite(path, issues)
            else:
                before = state_of(json_state_paths(path))
                one = read_json_session(path, issues)
                sessions = [one] if one is not None else []
                if state_of(json_state_paths(path)) != before:
                    # OpenCode wrote while we read: no half session; the next look reads it.
                    detail = "the session's files changed while they were read"
                    issues.append(
                        ParseIssue(path=str(path), reason="changed_while_reading", detail=detail)
                    )
                    return ParseResult(issues=issues)
            tasks = []
            for session in sessions:
                task = self._task(path, session, issues)
                if task is not None:
                    tasks.append(task)
        except Exception as exc:  # last-resort guard: parse() never raises for bad input
            detail = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
            return ParseResult(
                issues=[*issues, ParseIssue(path=str(path), reason="parser_error", detail=detail)]
            )
        return ParseResult(tasks=tasks, issues=issues)

    def _task(self, path: Path, session: RawSession, issues: list[ParseIssue]) -> ParsedTask | None:
        where = str(path) if not is_database(path) else f"{path}#session/{session.id}"
        start = T.started_at(session)
        if start is None:
            issues.append(ParseIssue(path=where, reason="no_start_time", detail="no time.created"))
            return None
        turns, unfinished = T.build_turns(session)
        return ParsedTask(
            source="opencode",
            native_id=session.id,
            started_at=start,
            title=T.title(session),
            ownership=T.ownership(session, turns),
            native_context=T.native_context(session),
            turns=turns,
            unfinished_turn=unfinished,
            source_path=str(path),
        )


def build(roots: list[Path], options: ConnectorOptions) -> OpenCodeConnector:
    """The registry's factory: OpenCode's data directory (`$XDG_DATA_HOME/opencode`) and
    `$OPENCODE_DB` when set (a path ending in `.db`; relative to the data directory if not
    absolute, as OpenCode reads it)."""
    database = next((r for r in roots if r.suffix == ".db"), None)
    homes = [r for r in roots if r.suffix != ".db"]
    home = homes[0] if homes else Path("~/.local/share/opencode").expanduser()
    return OpenCodeConnector(home, database=database)
