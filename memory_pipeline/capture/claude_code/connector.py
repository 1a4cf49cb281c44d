"""ClaudeCodeConnector: discovery, start days, and one ParsedTask per transcript file (§2.1)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.capture.claude_code.chain import live_chain
from memory_pipeline.capture.claude_code.load import describe, load
from memory_pipeline.capture.claude_code.naming import agent_title, session_title
from memory_pipeline.capture.claude_code.ownership import (
    SIDE_REASONS_WITH_TURNS,
    History,
    classify_side_thread,
    is_side_thread,
    read_history,
    session_ownership,
    side_thread,
)
from memory_pipeline.capture.claude_code.records import SOURCE, Loaded, Rec
from memory_pipeline.capture.claude_code.turns import TurnBuild, build_turns, is_inherited
from memory_pipeline.capture.files import sort_candidates
from memory_pipeline.capture.jsonl import JsonlRead
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult
from memory_pipeline.capture.protocol import ConnectorOptions

DEFAULT_SETTLE_AFTER = timedelta(minutes=30)


class ClaudeCodeConnector:
    """Claude Code transcripts under `<claude_home>/projects/` (§2.1)."""

    source = SOURCE

    def __init__(
        self,
        claude_home: Path,
        *,
        settle_after: timedelta | None = DEFAULT_SETTLE_AFTER,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        """`claude_home` is `~/.claude` or `$CLAUDE_CONFIG_DIR`.

        `settle_after`: how long a file must be quiet before a last turn with an answer but no
        end marker counts as complete (None: never; only markers or a next prompt end it).
        """
        self.claude_home = Path(claude_home)
        self.skipped_files: list[ParseIssue] = []  # of the last discover() (capture/files.py)
        self.settle_after = settle_after
        self._now = now or (lambda: datetime.now(UTC))
        self._history: History | None = None
        self._history_key: tuple[int, int] | None = None

    # -- discovery -----------------------------------------------------------------------------

    def discover(self) -> list[Path]:
        """Main session files and side-thread files (old flat and `subagents/` layouts), sorted."""
        self.skipped_files = []
        projects = self.claude_home / "projects"
        if not projects.is_dir():
            return []
        candidates: list[Path] = []
        try:
            for project in projects.iterdir():
                if not project.is_dir():
                    continue
                candidates += project.glob("*.jsonl")
                candidates += project.glob("*/subagents/**/agent-*.jsonl")
        except OSError:
            pass
        # Special files (a FIFO, a directory, a symlink out of the home) are never opened.
        return sort_candidates(candidates, self.claude_home, self.skipped_files)

    # -- days ----------------------------------------------------------------------------------

    def task_days(self, path: Path) -> set[date]:
        """UTC day of the first timestamped threaded record; reads no further than that.

        The same pass and rule as `parse` (so the day always matches `started_at`), and it
        never raises: the sensor and the run planner call it on every changed file.
        """
        try:
            started = load(path, JsonlRead(path), until_started=True).started_at()
        except Exception:
            return set()
        return {started.date()} if started is not None else set()

    # -- parsing -------------------------------------------------------------------------------

    def parse(self, path: Path) -> ParseResult:
        read = JsonlRead(path)
        task: ParsedTask | None = None
        try:
            settled = self._is_settled(path)
            loaded = load(path, read)
            if is_side_thread(path):
                task = self._parse_side_thread(path, loaded, read, settled)
            else:
                task = self._parse_session(path, loaded, read, settled)
        except Exception as exc:  # last resort: bad input must never stop the run
            read.issue("parser_error", describe(exc))
            task = None
        return ParseResult(tasks=[task] if task else [], issues=read.issues)

    def _parse_session(
        self, path: Path, loaded: Loaded, read: JsonlRead, settled: bool
    ) -> ParsedTask | None:
        started_at = _started_at(loaded, read)
        if started_at is None:
            return None
        session_id = _file_session_id(path, loaded)
        chain = live_chain(loaded, read, main_thread=True)
        build = build_turns(chain, loaded, session_id, settled)
        own = [
            rec for rec in loaded.order if not rec.sidechain and not is_inherited(rec, session_id)
        ]
        context = _context(own or loaded.order, project_key=path.parent.name)
        ancestors = sorted(
            {
                sid
                for rec in loaded.order
                for sid in (rec.session_id, rec.snake_session_id)
                if sid is not None and sid != session_id
            }
        )
        if ancestors:
            context["ancestor_session_ids"] = ancestors
        return ParsedTask(
            source=SOURCE,
            native_id=session_id,
            started_at=started_at,
            title=session_title(loaded, session_id),
            ownership=session_ownership(own, build, self._load_history(), session_id),
            native_context=context,
            turns=build.turns,
            unfinished_turn=build.unfinished,
            source_path=str(path),
        )

    def _parse_side_thread(
        self, path: Path, loaded: Loaded, read: JsonlRead, settled: bool
    ) -> ParsedTask | None:
        started_at = _started_at(loaded, read)
        if started_at is None:
            return None
        side = side_thread(path, read)
        parent = _parent_session_id(loaded, path, side.session_dir)
        if parent is None:
            read.issue("not_a_transcript", "side thread without a sessionId")
            return None
        chain = live_chain(loaded, read, main_thread=False)
        first = next((r for r in chain.records if r.type == "user" and r.kind == "human"), None)
        sidechain = any(rec.sidechain for rec in loaded.order)
        verdict = classify_side_thread(side, first.text if first else None, sidechain)
        build = TurnBuild([], False, None, [])
        if verdict.reason in SIDE_REASONS_WITH_TURNS:
            build = build_turns(chain, loaded, None, settled)
        context = _context(loaded.order, project_key=side.project_key)
        context.update(parent_session_id=parent, agent_id=side.agent_id, layout=side.layout)
        if side.workflow_run:
            context["workflow_run"] = side.workflow_run
        return ParsedTask(
            source=SOURCE,
            native_id=f"{parent}/{path.stem}",
            started_at=started_at,
            title=agent_title(side.meta),
            ownership=verdict,
            native_context=context,
            turns=build.turns,
            unfinished_turn=build.unfinished,
            source_path=str(path),
        )

    def _is_settled(self, path: Path) -> bool:
        if self.settle_after is None:
            return False
        try:
            mtime = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)
        except OSError:
            return False
        return self._now() - mtime >= self.settle_after

    def _load_history(self) -> History:
        """Read `history.jsonl` once per change (size, mtime); its problems are not the file's."""
        path = self.claude_home / "history.jsonl"
        try:
            st = path.stat()
        except OSError:
            return History()
        key = (st.st_size, st.st_mtime_ns)
        if self._history is None or self._history_key != key:
            self._history, self._history_key = read_history(path), key
        return self._history


def _started_at(loaded: Loaded, read: JsonlRead) -> datetime | None:
    """Timestamp of the first threaded record (the same rule as `task_days`)."""
    first = loaded.started_at()
    if first is None and read.lines_read > 0:
        read.issue("no_threaded_records", "no timestamped user/assistant/system record yet")
    return first


def _file_session_id(path: Path, loaded: Loaded) -> str:
    """The file name is the sessionId (corpus §10: 0 mismatches); else the newest record's."""
    stem = path.stem
    sessions = [rec.session_id for rec in loaded.order if rec.session_id]
    if not sessions or stem in sessions:
        return stem
    return sessions[-1]


def _parent_session_id(loaded: Loaded, path: Path, session_dir: str | None) -> str | None:
    """The session a side thread belongs to, so that one damaged record cannot move the thread
    to another task identity: its `<sessionId>/subagents/` directory when the records agree;
    else (old flat layout) the sessionId whose main file lies beside it, else the one most of
    its records carry (the earliest on a tie)."""
    sessions = Counter(rec.session_id for rec in loaded.order if rec.session_id)
    if session_dir is not None and (not sessions or session_dir in sessions):
        return session_dir
    beside = [sid for sid in sessions if _has_sibling(path, f"{sid}.jsonl")]
    if beside:
        return max(beside, key=lambda sid: sessions[sid])
    return sessions.most_common(1)[0][0] if sessions else None


def _has_sibling(path: Path, name: str) -> bool:
    try:
        return path.with_name(name).is_file()
    except (OSError, ValueError):  # a session id with a slash or a NUL names no file
        return False


def _context(records: Iterable[Rec], project_key: str | None) -> dict[str, Any]:
    """Provenance only (never account identifiers): first cwd (and every cwd when there were
    several), latest branch/version/model."""
    context: dict[str, Any] = {}
    if project_key:
        context["project_key"] = project_key
    cwds: dict[str, None] = {}
    for rec in records:
        if rec.cwd:
            cwds.setdefault(rec.cwd)
        if rec.cwd and "cwd" not in context:
            context["cwd"] = rec.cwd
        if rec.entrypoint and "entrypoint" not in context:
            context["entrypoint"] = rec.entrypoint
        if rec.git_branch:
            context["git_branch"] = rec.git_branch
        if rec.version:
            context["cli_version"] = rec.version
        if rec.model and not rec.api_error:
            context["model"] = rec.model
    if len(cwds) > 1:  # the session moved: every directory it ran in (MEMORY_EXCLUDE)
        context["cwds"] = list(cwds)
    return context


def build(roots: list[Path], options: ConnectorOptions) -> ClaudeCodeConnector:
    """The registry's factory (memory_pipeline/models/sources.py): one CLAUDE_CONFIG_DIR."""
    return ClaudeCodeConnector(roots[0])
