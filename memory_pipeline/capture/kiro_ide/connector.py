"""KiroIdeConnector: Kiro IDE's agent chats (globalStorage `kiro.kiroagent`) -> ParsedTask.

Roots are `kiro.kiroagent` directories (Linux `~/.config/Kiro/User/globalStorage/kiro.kiroagent`,
macOS `~/Library/Application Support/Kiro/User/globalStorage/kiro.kiroagent`). Units of change
detection:

* new layout: each `workspace-sessions/<ws>/<sessionId>.json` (its version includes the
  directory's `sessions.json`, where renames are written);
* old layout: each `<32-hex workspace hash>` directory (its version is every `.chat` snapshot
  and execution log in it): the snapshots of one workflow are prefixes of each other, so the
  workflow is one task read from its fullest snapshot, whichever file that is today.

Ownership (README table): a session of the chat panel is typed by a person (`kiro_ide:chat`);
an execution started by an agent hook (`workflow` / `sessionType` naming a hook) is
automation (`kiro_ide:hook`); a session without any typed prompt is unknown.
"""

from __future__ import annotations

import os
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import bounded, parse_time, string
from memory_pipeline.capture.codex.text import is_prompt_copy
from memory_pipeline.capture.files import list_dir, special_file
from memory_pipeline.capture.kiro_cli.common import TurnBuilder, issue, read_document
from memory_pipeline.capture.kiro_ide import layouts
from memory_pipeline.capture.models import (
    OwnershipVerdict,
    ParsedTask,
    ParsedTurn,
    ParseIssue,
    ParseResult,
    TaskTitle,
)
from memory_pipeline.capture.protocol import (
    ConnectorOptions,
    days_by_parse,
    discover_candidates,
    guarded_parse,
    root_list,
)

SOURCE = "kiro_ide"
WORKSPACE_SESSIONS = "workspace-sessions"
INDEX = "sessions.json"
HASH_DIR = re.compile(r"^[0-9a-f]{32}$")


class KiroIdeConnector:
    source = SOURCE

    def __init__(self, roots: list[Path] | Path) -> None:
        self.roots = root_list(roots)
        self.skipped_files: list[ParseIssue] = []
        self._index_cache: dict[Path, tuple[tuple[int, int], Any]] = {}

    # --- protocol -------------------------------------------------------------------------------

    def discover(self) -> list[Path]:
        self.skipped_files = []
        found = discover_candidates(self.roots, _session_files, self.skipped_files)
        for root in self.roots:
            if not root.is_dir():
                continue
            for entry in list_dir(root):
                if not HASH_DIR.match(entry.name):
                    continue
                if entry.is_symlink() or not entry.is_dir():
                    problem = special_file(entry, root)
                    if problem is not None and entry.is_symlink():
                        self.skipped_files.append(problem)
                    continue
                if any(p.suffix == ".chat" for p in list_dir(entry)):
                    found.append(entry)
        return sorted(set(found))

    def state_paths(self, path: Path) -> list[Path]:
        path = Path(path)
        if path.is_dir():
            paths = [path, *self._chat_files(path)]
            for sub in list_dir(path):
                if sub.is_dir() and not sub.is_symlink():
                    paths += [f for f in list_dir(sub) if f.is_file() and not f.suffix]
            return paths
        return [path, path.with_name(INDEX)]

    def task_days(self, path: Path) -> set[date]:
        return days_by_parse(self.parse, path)

    def parse(self, path: Path) -> ParseResult:
        return guarded_parse(self._parse_any, Path(path))

    def _parse_any(self, path: Path) -> ParseResult:
        if path.is_dir():
            return self._parse_chat_dir(path)
        return self._parse_session(path)

    # --- new layout -----------------------------------------------------------------------------

    def _index(self, path: Path) -> tuple[Any, list[ParseIssue]]:
        try:
            st = os.stat(path)
        except OSError:
            return None, []
        hit = self._index_cache.get(path)
        if hit and hit[0] == (st.st_size, st.st_mtime_ns):
            return hit[1], []
        value, issues = read_document(path)
        if not issues:
            self._index_cache[path] = ((st.st_size, st.st_mtime_ns), value)
        return value, issues

    def _parse_session(self, path: Path) -> ParseResult:
        doc, issues = read_document(path)
        if doc is None:
            return ParseResult(issues=issues)
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            return ParseResult(issues=[issue(path, "not_a_transcript", "no history list")])
        session_id = string(doc.get("sessionId")) or path.stem
        index, index_issues = self._index(path.with_name(INDEX))
        issues += index_issues
        entry = layouts.session_entry(index, session_id)
        builder = TurnBuilder()
        prompts: list[str] = []
        last_role = None
        for n, item in enumerate(doc["history"]):
            message = item.get("message") if isinstance(item, dict) else None
            if not isinstance(message, dict):
                issues.append(issue(path, "bad_record", f"history[{n}] has no message"))
                continue
            role = message.get("role")
            text = layouts.content_text(message.get("content"))
            mid = string(message.get("id"))
            if role == "user":
                typed = layouts.user_text(text)
                if not typed:
                    continue  # injected context or a system prompt, not a turn
                prompts.append(typed)
                builder.prompt(typed, native_turn_id=mid, message_id=mid)
                last_role = "user"
            elif role == "assistant":
                answer = layouts.answer_text(text)
                logs = item.get("promptLogs")
                if (
                    not answer
                    and isinstance(logs, dict)
                    and isinstance(logs.get("completion"), str)
                ):
                    answer = layouts.answer_text(logs["completion"])
                builder.answer(answer, message_id=mid)
                last_role = "assistant" if answer else last_role
        if last_role == "assistant":
            builder.finish()
        turns, waiting = builder.result()
        started = _time(entry.get("dateCreated")) or _time(doc.get("dateCreated"))
        if started is None:
            issues.append(issue(path, "no_start_time", "no dateCreated in sessions.json"))
            return ParseResult(issues=issues)
        workspace = string(entry.get("workspaceDirectory")) or layouts.decode_workspace(
            path.parent.name
        )
        context: dict[str, Any] = {"layout": "workspace-sessions"}
        if workspace:
            context["workspace"] = workspace
            context["cwd"] = workspace
        for key, name in (("sessionType", "session_type"), ("selectedModel", "model")):
            if string(doc.get(key)):
                context[name] = doc[key]
        title_text = string(entry.get("title")) or string(doc.get("title"))
        task = ParsedTask(
            source=SOURCE,
            native_id=session_id,
            started_at=started,
            title=_title(title_text, prompts),
            ownership=_ownership(prompts, {"sessionType": doc.get("sessionType")}),
            native_context=context,
            turns=turns,
            unfinished_turn=waiting,
            source_path=str(path),
        )
        return ParseResult(tasks=[task], issues=issues)

    # --- old layout -----------------------------------------------------------------------------

    def _chat_files(self, directory: Path) -> list[Path]:
        return sorted(p for p in list_dir(directory) if p.suffix == ".chat")

    def _parse_chat_dir(self, directory: Path) -> ParseResult:
        issues: list[ParseIssue] = []
        groups: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
        for path in self._chat_files(directory):
            problem = special_file(path, directory)
            if problem is not None:
                issues.append(problem)
                continue
            doc, found = read_document(path)
            issues += found
            if doc is None:
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("chat"), list):
                issues.append(issue(path, "not_a_transcript", "no chat list"))
                continue
            meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
            key = string(meta.get("workflowId")) or string(doc.get("executionId")) or path.stem
            groups.setdefault(key, []).append((path, doc))
        logs = self._execution_logs(directory, issues)
        tasks = []
        for workflow, snapshots in sorted(groups.items()):
            task = self._workflow(directory, workflow, snapshots, logs, issues)
            if task is not None:
                tasks.append(task)
        return ParseResult(tasks=tasks, issues=issues)

    def _execution_logs(self, directory: Path, issues: list[ParseIssue]) -> dict[str, str]:
        """executionId -> the execution's final answer, from the logs beside the snapshots."""
        answers: dict[str, str] = {}
        for sub in list_dir(directory):
            if not sub.is_dir() or sub.is_symlink():
                continue
            for path in list_dir(sub):
                if path.suffix or not path.is_file() or path.is_symlink():
                    continue
                log, found = read_document(path)
                if log is None:
                    issues += [i for i in found if i.reason != "empty_file"]
                    continue
                exec_id = string(log.get("executionId")) if isinstance(log, dict) else None
                answer = layouts.execution_answer(log)
                if exec_id and answer:
                    answers[exec_id] = answer
        return answers

    def _workflow(
        self,
        directory: Path,
        workflow: str,
        snapshots: list[tuple[Path, dict[str, Any]]],
        logs: dict[str, str],
        issues: list[ParseIssue],
    ) -> ParsedTask | None:
        def meta(doc: dict[str, Any]) -> dict[str, Any]:
            m = doc.get("metadata")
            return m if isinstance(m, dict) else {}

        def order(item: tuple[Path, dict[str, Any]]) -> tuple[int, int, str]:
            m = meta(item[1])
            end = m.get("endTime") if isinstance(m.get("endTime"), int) else 0
            return (len(item[1]["chat"]), end, item[0].name)

        fullest_path, fullest = max(snapshots, key=order)
        # The answer each execution gave, keyed by the prompt it answered (its last human text).
        logged: dict[str, str] = {}
        for _path, doc in snapshots:
            exec_id = string(doc.get("executionId"))
            humans = [
                layouts.user_text(m.get("content", ""))
                for m in doc["chat"]
                if isinstance(m, dict)
                and m.get("role") == "human"
                and isinstance(m.get("content"), str)
            ]
            humans = [h for h in humans if h]
            if exec_id and exec_id in logs and humans:
                logged[humans[-1]] = logs[exec_id]
        builder = TurnBuilder()
        prompts: list[str] = []
        for n, message in enumerate(fullest["chat"]):
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                issues.append(issue(fullest_path, "bad_record", f"chat[{n}] is not a message"))
                continue
            role = message.get("role")
            if role == "human":
                typed = layouts.user_text(message["content"])
                if not typed:
                    continue
                prompts.append(typed)
                builder.prompt(typed)
                if typed in logged:
                    builder.answer(logged[typed])
            elif role == "bot":
                answer = layouts.answer_text(message["content"])
                if answer:
                    builder.answer(answer)
        m = meta(fullest)
        if builder.open is not None and builder.open.answer is not None and m.get("endTime"):
            builder.finish(_time(m.get("endTime")))
        turns, waiting = builder.result()
        starts = [_time(meta(doc).get("startTime")) for _p, doc in snapshots]
        started = min((s for s in starts if s is not None), default=None)
        if started is None:
            issues.append(issue(fullest_path, "no_start_time", "no metadata.startTime"))
            return None
        context: dict[str, Any] = {"layout": "chat-files", "workspace_hash": directory.name}
        for key, name in (("modelId", "model"), ("workflow", "workflow")):
            if string(m.get(key)):
                context[name] = m[key]
        exec_ids = [string(doc.get("executionId")) for _p, doc in snapshots]
        context["execution_ids"] = bounded(sorted(e for e in exec_ids if e))
        return ParsedTask(
            source=SOURCE,
            native_id=workflow,
            started_at=started,
            ownership=_ownership(prompts, {"workflow": m.get("workflow")}),
            native_context=context,
            turns=_renumber(turns),
            unfinished_turn=waiting,
            source_path=str(directory),
        )


def _renumber(turns: list[ParsedTurn]) -> list[ParsedTurn]:
    return [t.model_copy(update={"ordinal": i}) for i, t in enumerate(turns)]


def _ownership(prompts: list[str], fields: dict[str, Any]) -> OwnershipVerdict:
    evidence = {k: bounded(v) for k, v in fields.items() if v is not None}
    marker = " ".join(str(v) for v in evidence.values()).lower()
    if "hook" in marker:
        return OwnershipVerdict(ownership="delegated", reason="kiro_ide:hook", evidence=evidence)
    if prompts:
        evidence["first_prompt"] = prompts[0][:200]
        return OwnershipVerdict(ownership="user_owned", reason="kiro_ide:chat", evidence=evidence)
    return OwnershipVerdict(ownership="unknown", reason="kiro_ide:no-prompt", evidence=evidence)


def _title(text: str | None, prompts: list[str]) -> TaskTitle | None:
    if not text or not text.strip() or is_prompt_copy(text, prompts[:1]):
        return None
    return TaskTitle(text=text.strip(), source="kiro_ide:title")


def _time(value: Any) -> datetime | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return parse_time(value)


def _session_files(root: Path) -> list[Path]:
    """New layout: `workspace-sessions/<ws>/<sessionId>.json` (not the `sessions.json` index)."""
    candidates: list[Path] = []
    sessions = root / WORKSPACE_SESSIONS
    if sessions.is_dir():
        for ws in list_dir(sessions):
            if ws.is_dir() and not ws.is_symlink():
                candidates += [p for p in list_dir(ws) if p.suffix == ".json" and p.name != INDEX]
    return candidates


def build(roots: list[Path], options: ConnectorOptions | None = None) -> KiroIdeConnector:
    """The registry's factory (memory_pipeline/models/sources.py)."""
    return KiroIdeConnector(list(roots))
