"""KiroCliConnector: every store Kiro CLI (and Amazon Q Developer CLI) has written -> ParsedTask.

Roots (each may hold any of these; a missing one is skipped):

* `KIRO_HOME` (default `~/.kiro`): `sessions/cli/<id>.jsonl` + `<id>.json` (agent engine v2)
  and `.cli_bash_history` (the REPL's typed prompts, ownership evidence);
* the data directory (Linux `~/.local/share/kiro-cli`, macOS `~/Library/Application
  Support/kiro-cli`; Amazon Q Developer CLI: `.../amazon-q`, its history in
  `~/.aws/amazonq`): `data.sqlite3` with the `conversations_v2` / `conversations` tables.

One file is one unit of change detection: the SQLite database (all its conversations; its
version includes the `-wal` file) and each session transcript (its version includes its `.json`
sidecar, where the turn-end marks and the title are written).
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import bounded, from_ms, string
from memory_pipeline.capture.codex.text import is_prompt_copy
from memory_pipeline.capture.kiro_cli import sessions, sqlite
from memory_pipeline.capture.kiro_cli.common import issue, loads
from memory_pipeline.capture.kiro_cli.conversation import read_conversation
from memory_pipeline.capture.kiro_cli.ownership import ownership
from memory_pipeline.capture.kiro_cli.typed import TypedPrompts
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult, TaskTitle
from memory_pipeline.capture.protocol import (
    ConnectorOptions,
    days_by_parse,
    discover_candidates,
    guarded_parse,
    root_list,
)

SOURCE = "kiro_cli"
SESSIONS_DIR = ("sessions", "cli")


class KiroCliConnector:
    source = SOURCE

    def __init__(self, roots: list[Path] | Path) -> None:
        self.roots = root_list(roots)
        self.typed = TypedPrompts(self.roots)
        self.skipped_files: list[ParseIssue] = []

    # --- protocol -------------------------------------------------------------------------------

    def discover(self) -> list[Path]:
        self.skipped_files = []
        return discover_candidates(self.roots, _candidates, self.skipped_files)

    def state_paths(self, path: Path) -> list[Path]:
        path = Path(path)
        if path.name == sqlite.DB_NAME:
            return sqlite.state_paths(path)
        return [path, sessions.sidecar_path(path)]

    def task_days(self, path: Path) -> set[date]:
        """The same start rule as parse(): parse is the peek (a store is small and a session
        file's start is in its sidecar or first prompt)."""
        return days_by_parse(self.parse, path)

    def parse(self, path: Path) -> ParseResult:
        path = Path(path)
        if path.name == sqlite.DB_NAME:
            return guarded_parse(self._parse_store, path)
        return guarded_parse(self._parse_session, path)

    # --- SQLite store ---------------------------------------------------------------------------

    def _parse_store(self, db: Path) -> ParseResult:
        rows, issues = sqlite.read_rows(db)
        tasks: dict[str, ParsedTask] = {}
        for row in rows:
            where = f"{row.table} row {row.rowid}"
            if isinstance(row.value, bytes) and not row.value:
                issues.append(issue(db, "too_large", f"{where}: value over the size limit"))
                continue
            if row.value is None:
                issues.append(issue(db, "bad_record", f"{where}: no value"))
                continue
            value, why = loads(row.value)
            if why is not None:
                reason = "too_deep" if why == "too_deep" else "invalid_json"
                issues.append(issue(db, reason, f"{where}: {why}"))
                continue
            conv = read_conversation(value)
            if conv is None:
                issues.append(issue(db, "bad_record", f"{where}: not a conversation state"))
                continue
            if conv.bad_entries:
                issues.append(
                    issue(db, "bad_record", f"{where}: {conv.bad_entries} history entries skipped")
                )
            native_id = row.conversation_id or conv.conversation_id
            if not native_id:
                issues.append(issue(db, "no_conversation_id", where))
                continue
            started = from_ms(row.created_at) or conv.started_at
            if started is None:
                issues.append(issue(db, "no_start_time", f"{where}: no time in the conversation"))
                continue
            context: dict[str, Any] = {"store": row.table, "history_format": conv.generation}
            if row.key:
                context["cwd"] = row.key
            if conv.model:
                context["model"] = conv.model
            task = ParsedTask(
                source=SOURCE,
                native_id=native_id,
                started_at=started,
                ownership=ownership(conv.prompts, self.typed),
                native_context=context,
                turns=conv.turns,
                unfinished_turn=conv.unfinished,
                source_path=str(db),
            )
            kept = tasks.get(native_id)
            # The same conversation in both tables (a migrated store): the fuller copy.
            if kept is None or len(task.turns) > len(kept.turns):
                tasks[native_id] = task
        return ParseResult(tasks=list(tasks.values()), issues=issues)

    # --- v2 session files -----------------------------------------------------------------------

    def _parse_session(self, path: Path) -> ParseResult:
        session, issues = sessions.read_session(path)
        if session is None:
            if not any(i.reason in ("empty_file", "unreadable") for i in issues):
                issues.append(issue(path, "not_a_transcript", "no Kiro session records"))
            return ParseResult(issues=issues)
        if session.started_at is None:
            issues.append(issue(path, "no_start_time", "no created_at and no prompt timestamp"))
            return ParseResult(issues=issues)
        side = session.sidecar or {}
        context: dict[str, Any] = {"store": "sessions/cli"}
        for key in ("cwd", "parent_session_id", "session_created_reason"):
            if string(side.get(key)):
                context[key] = side[key]
        state = side.get("session_state") if isinstance(side.get("session_state"), dict) else {}
        if string(state.get("agent_name")):
            context["agent_name"] = state["agent_name"]
        model_state = state.get("rts_model_state")
        info = model_state.get("model_info") if isinstance(model_state, dict) else None
        if isinstance(info, dict) and string(info.get("model_id")):
            context["model"] = info["model_id"]
        if session.record_versions:
            context["record_versions"] = bounded(session.record_versions)
        task = ParsedTask(
            source=SOURCE,
            native_id=session.session_id,
            started_at=session.started_at,
            title=_title(side, session.prompts),
            ownership=ownership(session.prompts, self.typed, session.sidecar),
            native_context=context,
            turns=session.turns,
            unfinished_turn=session.unfinished,
            source_path=str(path),
        )
        return ParseResult(tasks=[task], issues=issues)


def _title(sidecar: dict[str, Any], prompts: list[str]) -> TaskTitle | None:
    """The sidecar's `title`, unless it is only the first prompt (then the store derives one)."""
    text = string(sidecar.get("title"))
    if not text or not text.strip() or is_prompt_copy(text, prompts[:1]):
        return None
    observed = sessions.parse_time(sidecar.get("updated_at"))
    return TaskTitle(text=text.strip(), source="kiro_cli:title", observed_at=observed)


def _candidates(root: Path) -> list[Path]:
    candidates: list[Path] = []
    db = root / sqlite.DB_NAME
    if os.path.lexists(db):
        candidates.append(db)
    cli = root.joinpath(*SESSIONS_DIR)
    if cli.is_dir():
        try:
            candidates += [p for p in cli.iterdir() if p.name.endswith(".jsonl")]
        except OSError:
            pass
    return candidates


def build(roots: list[Path], options: ConnectorOptions | None = None) -> KiroCliConnector:
    """The registry's factory (memory_pipeline/models/sources.py)."""
    return KiroCliConnector(list(roots))


__all__ = ["KiroCliConnector", "build"]
