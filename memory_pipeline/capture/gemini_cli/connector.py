"""GeminiCliConnector: Gemini CLI's recorded sessions -> ParsedTask.

Root: Gemini CLI's directory, `~/.gemini` (Linux and macOS alike), or `$GEMINI_CLI_HOME/.gemini`
when GEMINI_CLI_HOME replaces the home directory (`utils/paths.ts` `homedir()`). Below it
(google-gemini/gemini-cli @ 5411f113, `services/chatRecordingService.ts`, `config/storage.ts`):

* `tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.json`: a legacy session document;
* `tmp/<project>/chats/session-<...>-<id8>.jsonl`: a session log (current versions);
* `tmp/<project>/chats/<parentSessionId>/<sessionId>.jsonl`: a subagent's log;
* `tmp/<project>/logs.json` (typed prompts) and `.project_root`, `projects.json` (the project's
  root directory): read beside a session, see `projects.py`.

One session file is one task (identity: `sessionId`) and one unit of change detection. The
formats are `records.py`, turns `turns.py`, ownership `ownership.py`. Native fields kept as
provenance: `projectHash`, the project directory's name, the root (`cwd`), `directories`,
`kind`, the last `model`; the title is the session's `summary` (Gemini's own summary of it).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import bounded, parse_time, string
from memory_pipeline.capture.files import list_dir
from memory_pipeline.capture.gemini_cli import records, turns
from memory_pipeline.capture.gemini_cli.ownership import ownership
from memory_pipeline.capture.gemini_cli.projects import LOGS, ProjectFiles
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult, TaskTitle
from memory_pipeline.capture.protocol import (
    ConnectorOptions,
    days_by_parse,
    discover_candidates,
    guarded_parse,
    root_list,
)

SOURCE = "gemini_cli"
PREFIX = "session-"


class GeminiCliConnector:
    source = SOURCE

    def __init__(self, roots: list[Path] | Path) -> None:
        self.roots = root_list(roots)
        self.projects = ProjectFiles()
        self.skipped_files: list[ParseIssue] = []

    # --- protocol -------------------------------------------------------------------------------

    def discover(self) -> list[Path]:
        self.skipped_files = []
        return discover_candidates(self.roots, _candidates, self.skipped_files)

    def task_days(self, path: Path) -> set[date]:
        """The same start rule as parse(): parse is the peek (a session is one file)."""
        return days_by_parse(self.parse, path)

    def parse(self, path: Path) -> ParseResult:
        return guarded_parse(self._parse, Path(path))

    # --- one session file -----------------------------------------------------------------------

    def _parse(self, path: Path) -> ParseResult:
        if path.name.endswith(".jsonl"):
            conv, issues = records.read_log(path)
        else:
            conv, issues = records.read_document(path)
        if conv is None:
            return ParseResult(issues=issues)
        meta = conv.meta
        session_id = string(meta.get("sessionId"))
        if not session_id or not session_id.strip():
            issues.append(records.issue(path, "no_session_id", "no sessionId"))
            return ParseResult(issues=issues)
        built = turns.build(conv)
        started = parse_time(meta.get("startTime")) or built.first_at
        if started is None:
            issues.append(records.issue(path, "no_start_time", "no startTime, no timestamps"))
            return ParseResult(issues=issues)
        # a subagent's log lies in its parent session's directory: chats/<parent>/<id>.jsonl
        nested = path.parent.parent.name == "chats" and path.name.endswith(".jsonl")
        parent = path.parent.name if nested else None
        chats = path.parent if parent is None else path.parent.parent
        project_dir = chats.parent
        gemini_dir = project_dir.parent.parent
        project_hash = string(meta.get("projectHash"))
        context: dict[str, Any] = {"format": conv.generation, "project_dir": project_dir.name}
        if project_hash:
            context["project_hash"] = project_hash
        root, how = self.projects.project_root(gemini_dir, project_dir, project_hash)
        if root:
            context["cwd"], context["cwd_source"] = root, how
        if meta.get("directories"):
            context["directories"] = bounded(meta["directories"][:20])
        if meta.get("kind") is not None:
            context["kind"] = bounded(meta["kind"])
        if parent:
            context["parent_session_id"] = parent
        if built.model:
            context["model"] = built.model
        for key, count in (("rewinds", conv.rewinds), ("checkpoints", conv.checkpoints)):
            if count:
                context[key] = count
        if built.replays:
            context["replayed_turns"] = built.replays
        log_read, typed = self.projects.typed(project_dir, session_id)
        task = ParsedTask(
            source=SOURCE,
            native_id=session_id,
            started_at=started,
            title=_title(meta),
            ownership=ownership(
                meta.get("kind"), parent, log_read, typed, project_dir / LOGS, len(built.prompts)
            ),
            native_context=context,
            turns=built.turns,
            unfinished_turn=built.unfinished,
            source_path=str(path),
        )
        return ParseResult(tasks=[task], issues=issues)


def _title(meta: dict[str, Any]) -> TaskTitle | None:
    text = string(meta.get("summary"))
    if not text or not text.strip():
        return None
    observed = parse_time(meta.get("lastUpdated"))
    return TaskTitle(
        text=" ".join(text.split())[:300], source="gemini_cli:summary", observed_at=observed
    )


def _candidates(root: Path) -> list[Path]:
    candidates: list[Path] = []
    for chats in _dirs(root / "tmp", "chats"):
        for entry in list_dir(chats):
            name = entry.name
            if name.startswith(PREFIX) and name.endswith(".jsonl"):
                candidates.append(entry)
            elif name.startswith(PREFIX) and name.endswith(".json"):
                # a resumed legacy session goes on in `<name>.jsonl` (a migration)
                if not (chats / f"{name}l").exists():
                    candidates.append(entry)
            elif _is_dir(entry):
                candidates += [p for p in list_dir(entry) if p.name.endswith(".jsonl")]
    return candidates


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir() and not path.is_symlink()
    except OSError:
        return False


def _dirs(tmp: Path, name: str) -> list[Path]:
    """`tmp/<project>/<name>` for every project directory (never through a symlink)."""
    return [p / name for p in list_dir(tmp) if _is_dir(p) and _is_dir(p / name)]


def build(roots: list[Path], options: ConnectorOptions | None = None) -> GeminiCliConnector:
    """The registry's factory (memory_pipeline/models/sources.py)."""
    return GeminiCliConnector(list(roots))


__all__ = ["GeminiCliConnector", "build"]
