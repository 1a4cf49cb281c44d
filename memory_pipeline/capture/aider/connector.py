"""AiderConnector: `.aider.chat.history.md` files of named repositories and searched roots.

Aider writes its chat history into the repository it runs in (`<git root>/.aider.chat.history.md`
unless `--chat-history-file` / `AIDER_CHAT_HISTORY_FILE` / `chat-history-file:` in
`.aider.conf.yml` says otherwise), so there is no one home to look in: the user names
repositories (`MEMORY_AIDER_REPOS`) or roots to search (`MEMORY_AIDER_ROOTS`, a bounded walk that
never enters dependency, cache or VCS directories). One task per `# aider chat started at`
session; the file only grows, so a file that shrank or changed before its end is drift the
store ignores.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import date
from pathlib import Path

from memory_pipeline.capture.aider import history as H
from memory_pipeline.capture.files import sort_candidates
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult
from memory_pipeline.capture.protocol import ConnectorOptions
from memory_pipeline.tuning import (
    AIDER_HISTORY_MAX_BYTES,
    AIDER_ROOT_MAX_DEPTH,
    AIDER_SKIP_DIRS,
)

HISTORY_NAME = ".aider.chat.history.md"
INPUT_HISTORY_NAME = ".aider.input.history"
CONF_NAME = ".aider.conf.yml"
_CONF_KEY = re.compile(r"^chat-history-file\s*:\s*(.+?)\s*$", re.M)


def configured_name(repo: Path) -> str | None:
    """`chat-history-file:` of the repository's `.aider.conf.yml`, if any (one plain value)."""
    try:
        text = (repo / CONF_NAME).read_text("utf-8", "replace")[:65536]
    except OSError:
        return None
    match = _CONF_KEY.search(text)
    if not match:
        return None
    value = match.group(1).split(" #", 1)[0].strip().strip("'\"")
    return value or None


class AiderConnector:
    source = H.SOURCE

    def __init__(
        self,
        repos: Iterable[Path] = (),
        roots: Iterable[Path] = (),
        history_file: str | None = None,
    ) -> None:
        """`history_file`: `AIDER_CHAT_HISTORY_FILE` (absolute, or a name in each repository)."""
        self.repos = [Path(p) for p in repos]
        self.roots = [Path(p) for p in roots]
        self.history_file = history_file or None
        self.skipped_files: list[ParseIssue] = []

    # --- discovery --------------------------------------------------------------------------

    def _names(self, repo: Path) -> list[Path]:
        names = [repo / HISTORY_NAME]
        configured = configured_name(repo)
        if configured:
            names.append(Path(configured) if os.path.isabs(configured) else repo / configured)
        if self.history_file and not os.path.isabs(self.history_file):
            names.append(repo / self.history_file)
        return names

    def _walk(self, root: Path) -> list[Path]:
        """Repositories under `root` holding a history file (or an aider config), bounded."""
        found: list[Path] = []
        base_depth = len(root.parts)
        for dirpath, dirnames, filenames in os.walk(root):  # does not follow symlinked dirs
            here = Path(dirpath)
            if HISTORY_NAME in filenames or CONF_NAME in filenames:
                found.append(here)
            if len(here.parts) - base_depth >= AIDER_ROOT_MAX_DEPTH:
                dirnames[:] = []
            else:
                dirnames[:] = sorted(
                    d for d in dirnames if d not in AIDER_SKIP_DIRS and d != ".aider.tags.cache.v4"
                )
        return found

    def discover(self) -> list[Path]:
        self.skipped_files = []
        repos = [r for r in self.repos if r.is_dir()]
        for root in self.roots:
            if root.is_dir():
                repos += self._walk(root)
        found: list[Path] = []
        for repo in dict.fromkeys(repos):
            candidates = [p for p in self._names(repo) if p.exists() or p.is_symlink()]
            found += sort_candidates(candidates, repo, self.skipped_files)
        if self.history_file and os.path.isabs(self.history_file):
            explicit = Path(self.history_file)
            if explicit.exists() or explicit.is_symlink():
                found += sort_candidates([explicit], explicit.parent, self.skipped_files)
        return sorted(set(found))

    def state_paths(self, path: Path) -> list[Path]:
        """The chat history is the transcript; the input history only times its prompts."""
        return [Path(path)]

    # --- reading ----------------------------------------------------------------------------

    def _read(self, path: Path, issues: list[ParseIssue]) -> bytes | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            issues.append(ParseIssue(path=str(path), reason="unreadable", detail=str(exc)[:200]))
            return None
        try:
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(AIDER_HISTORY_MAX_BYTES + 1)
        except OSError as exc:
            issues.append(ParseIssue(path=str(path), reason="unreadable", detail=str(exc)[:200]))
            return None
        if len(data) > AIDER_HISTORY_MAX_BYTES:
            issues.append(
                ParseIssue(
                    path=str(path),
                    reason="file_too_large",
                    detail=f"read the first {AIDER_HISTORY_MAX_BYTES:,} bytes",
                )
            )
            data = data[: data.rfind(b"\n", 0, AIDER_HISTORY_MAX_BYTES) + 1]
        if not data.strip():
            issues.append(ParseIssue(path=str(path), reason="empty_file"))
        return data

    def task_days(self, path: Path) -> set[date]:
        """Header lines only: every session's start day."""
        path = Path(path)
        try:
            data = self._read(path, [])
            if not data:
                return set()
            days = set()
            for raw in data.split(b"\n"):
                if not raw.startswith(b"# aider chat started at "):
                    continue
                try:
                    match = H.HEADER.match(raw.decode("utf-8").rstrip("\r"))
                except UnicodeDecodeError:
                    continue
                when = H.local_time(match.group(1)) if match else None
                if when is not None:
                    days.add(when.date())
            return days
        except Exception:
            return set()

    def parse(self, path: Path) -> ParseResult:
        path = Path(path)
        issues: list[ParseIssue] = []
        try:
            return self._parse(path, issues)
        except Exception as exc:  # last resort: parse() never raises for bad input
            detail = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
            return ParseResult(
                issues=[*issues, ParseIssue(path=str(path), reason="parser_error", detail=detail)]
            )

    def _parse(self, path: Path, issues: list[ParseIssue]) -> ParseResult:
        where = str(path)
        data = self._read(path, issues)
        if not data:
            return ParseResult(issues=issues)
        lines = H.read_lines(data, where, issues)
        sessions = H.sessions_of(lines, where, issues)
        if not sessions:
            issues.append(
                ParseIssue(path=where, reason="not_a_transcript", detail="no aider session header")
            )
            return ParseResult(issues=issues)
        inputs = H.input_history(path.parent / INPUT_HISTORY_NAME)
        tasks: list[ParsedTask] = []
        seen: dict[str, int] = {}
        for index, session in enumerate(sessions):
            if session.started_at is None:
                continue  # recorded as bad_timestamp
            occurrence = seen.get(session.header_time, 0)
            seen[session.header_time] = occurrence + 1
            built = H.build(session, where, issues)
            last = index == len(sessions) - 1
            H.prompt_times(built.turns, built.prompts_raw, session.started_at, inputs)
            task = ParsedTask(
                source="aider",
                native_id=H.native_id(path, session, occurrence),
                started_at=session.started_at,
                title=None,  # aider names nothing; the store derives one from the first prompt
                ownership=H.ownership(built.command_line),
                native_context=self._context(path, session, built),
                turns=built.turns,
                unfinished_turn=last and built.waiting,
                source_path=where,
            )
            tasks.append(task)
        return ParseResult(tasks=tasks, issues=issues)

    def _context(self, path: Path, session: H.Session, built: H.Built) -> dict[str, object]:
        ctx: dict[str, object] = {
            "repository": str(path.parent),
            "cwd": str(path.parent),
            "history_file": path.name,
            "header_time": session.header_time,
            "header_line": session.header_line,
            "time_zone": "local",
        }
        for line in session.lines[:12]:
            text = line.text or ""
            for prefix, key in (
                ("> Aider v", "aider_version"),
                ("> Main model: ", "model"),
                ("> Model: ", "model"),
            ):
                if text.startswith(prefix) and key not in ctx:
                    ctx[key] = text[len(prefix) :].strip().split(" ", 1)[0]
        return ctx


def build(roots: list[Path], options: ConnectorOptions) -> AiderConnector:
    """The registry's factory. Roots are MEMORY_AIDER_REPOS and MEMORY_AIDER_ROOTS (split on
    `:` and on `,`), each searched to a bounded depth (a named repository is found at depth 0),
    and AIDER_CHAT_HISTORY_FILE: a file path (absolute) or a file name looked for in each
    repository."""
    dirs: list[Path] = []
    history_file: str | None = None
    for root in roots:
        for piece in str(root).split(","):
            piece = piece.strip()
            if not piece:
                continue
            path = Path(piece).expanduser()
            if path.is_dir():
                dirs.append(path)
            elif path.suffix in (".md", ".txt") or path.is_file():
                history_file = str(path)
    return AiderConnector(roots=dirs, history_file=history_file)
