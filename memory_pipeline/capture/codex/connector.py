"""CodexConnector: Codex CLI rollouts under CODEX_HOME -> ParsedTask (pure parsing, no database).

One parse: `reduce_file` reads the rollout (records -> events -> turns), `ownership` classifies
the thread, `resolve_title` names it. Neither `parse()` nor `task_days()` raises for any input:
every problem becomes a `ParseIssue` (or, for `task_days`, a line that gives no day) and the rest
of the file is used.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import (
    bounded,
    exception_detail,
    uuid7_time,
    uuid_from_name,
)
from memory_pipeline.capture.codex.naming import SessionIndex, resolve_title
from memory_pipeline.capture.codex.ownership import ownership
from memory_pipeline.capture.codex.records import ThreadStart, iter_records
from memory_pipeline.capture.codex.reduce import Reducer, reduce_file
from memory_pipeline.capture.files import sort_candidates
from memory_pipeline.capture.jsonl import JsonlRead
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult
from memory_pipeline.capture.protocol import ConnectorOptions

# File layout (notes §1.1).
SESSION_DIRS = ("sessions", "archived_sessions")
ARCHIVED_DIR = "archived_sessions"


class CodexConnector:
    """Reads Codex CLI rollouts (`sessions/**`, `archived_sessions/**`) of one CODEX_HOME."""

    source = "codex"

    def __init__(self, codex_home: Path) -> None:
        self.codex_home = Path(codex_home)
        self._index = SessionIndex(self.codex_home)
        self.skipped_files: list[ParseIssue] = []  # of the last discover() (capture/files.py)

    # --- Connector protocol ---------------------------------------------------------------------

    def discover(self) -> list[Path]:
        """Every rollout-*.jsonl / rollout-*.jsonl.zst under sessions/ and archived_sessions/."""
        self.skipped_files = []
        found: list[Path] = []
        for sub in SESSION_DIRS:
            root = self.codex_home / sub
            if not root.is_dir():
                continue
            candidates: list[Path] = []
            for dirpath, dirnames, filenames in os.walk(root):  # does not follow symlinked dirs
                for name in (*filenames, *dirnames):
                    if name.startswith("rollout-") and name.endswith((".jsonl", ".jsonl.zst")):
                        candidates.append(Path(dirpath) / name)
            # Special files (a FIFO, a directory, a symlink out of the home) are never opened.
            found += sort_candidates(candidates, self.codex_home, self.skipped_files)
        return sorted(found)

    def renamed_since(self, since_ns: int) -> tuple[set[Path], int]:
        """Rollouts of threads named after `since_ns` (epoch ns), and the index's mtime.

        A rename is written to `session_index.jsonl` (and the state DB), never to the rollout,
        so the rollout's mtime says nothing about it. Entries without a time count as new.
        """
        index_mtime = self._index.mtime_ns()
        if index_mtime is None or index_mtime <= since_ns:
            return set(), since_ns
        since = datetime.fromtimestamp(since_ns / 1e9, UTC)
        renamed = {
            thread
            for thread, entry in self._index.entries().items()
            if entry.updated_at is None or entry.updated_at > since
        }
        return {p for p in self.discover() if uuid_from_name(p) in renamed}, index_mtime

    def task_days(self, path: Path) -> set[date]:
        """UTC start day of the file's thread; reads only up to the first line that has a time.

        Uses the same rule as `parse()` (`ThreadStart`), so both always agree. Never raises: the
        sensor and `memory-pipeline run` call it before any job, for every changed file. A line
        that cannot be interpreted gives no time, as it does in `parse()`.
        """
        path = Path(path)
        if _is_compressed(path):
            return set()
        start = ThreadStart(uuid_from_name(path))
        for _line, obj in iter_records(path, JsonlRead(path)):
            try:
                start.observe(obj)
            except Exception:  # parse() records this line as bad_record; it gives no time
                continue
            if start.started_at is not None:
                return {start.started_at.date()}
        fallback = uuid7_time(start.thread_id)  # as parse(): the v7 id's time, if nothing else
        return {fallback.date()} if fallback is not None else set()

    def parse(self, path: Path) -> ParseResult:
        path = Path(path)
        if _is_compressed(path):
            # No zstd dependency: reported, never silently skipped (notes §1.1).
            return ParseResult(
                issues=[
                    ParseIssue(
                        path=str(path),
                        reason="compressed_unsupported",
                        detail="zstd-compressed rollout (.jsonl.zst) is not supported",
                    )
                ]
            )
        try:
            return self._parse(path)
        except Exception as exc:  # last-resort guard: parse() must never raise for bad input
            return ParseResult(
                issues=[
                    ParseIssue(path=str(path), reason="parser_error", detail=exception_detail(exc))
                ]
            )

    # --- parse ----------------------------------------------------------------------------------

    def _parse(self, path: Path) -> ParseResult:
        reduced, issues = reduce_file(path, prompts_from_items=False)
        if reduced.user_events == 0 and reduced.enveloped_user_items > 0:
            # An enveloped rollout without any user_message event: take prompts from the
            # role:"user" ResponseItems instead (context fragments filtered), one more pass.
            reduced, issues = reduce_file(path, prompts_from_items=True)
            issues.append(
                ParseIssue(
                    path=str(path),
                    reason="prompts_from_response_items",
                    detail="no user_message events; prompts taken from response_item messages",
                )
            )

        if reduced.lines_seen == 0 and any(
            i.reason in ("empty_file", "unreadable") for i in issues
        ):
            return ParseResult(issues=issues)
        if not reduced.saw_codex_record:
            issues.append(
                ParseIssue(path=str(path), reason="not_a_transcript", detail="no Codex records")
            )
            return ParseResult(issues=issues)
        thread_id = reduced.thread_id
        if thread_id is None:
            issues.append(
                ParseIssue(
                    path=str(path),
                    reason="no_thread_id",
                    detail="no uuid in the file name and no session_meta id",
                )
            )
            return ParseResult(issues=issues)
        started_at = reduced.started_at or uuid7_time(thread_id)
        if started_at is None:
            issues.append(
                ParseIssue(path=str(path), reason="no_start_time", detail="no timestamp found")
            )
            return ParseResult(issues=issues)
        if reduced.own_meta is None:
            issues.append(
                ParseIssue(
                    path=str(path),
                    reason="missing_session_meta",
                    detail=f"no session_meta for thread {thread_id}",
                )
            )

        turns = reduced.complete_turns()
        title, title_issues = resolve_title(
            self.codex_home,
            self._index,
            thread_id,
            reduced.name_event,
            turns[0].prompt if turns else None,
        )
        issues.extend(title_issues)
        task = ParsedTask(
            source="codex",
            native_id=thread_id,
            started_at=started_at,
            title=title,
            ownership=ownership(reduced.own_meta),
            native_context=self._native_context(path, reduced),
            turns=turns,
            unfinished_turn=reduced.unfinished_turn,
            source_path=str(path),
        )
        return ParseResult(tasks=[task], issues=issues)

    def _native_context(self, path: Path, reduced: Reducer) -> dict[str, Any]:
        """Provenance only (never the semantic project, never account identifiers)."""
        meta = reduced.own_meta or {}
        ctx: dict[str, Any] = {}
        for key in ("cwd", "originator", "cli_version", "model_provider", "forked_from_id"):
            value = meta.get(key)
            if isinstance(value, str) and value:
                ctx[key] = value
        if "source" in meta:
            ctx["source"] = bounded(meta["source"])
        git = meta.get("git")
        if isinstance(git, dict):
            git_ctx = {
                k: git[k]
                for k in ("commit_hash", "branch", "repository_url")
                if isinstance(git.get(k), str) and git[k]
            }
            if git_ctx:
                ctx["git"] = git_ctx
        if reduced.model:
            ctx["model"] = reduced.model
        cwds = list(dict.fromkeys([c for c in [ctx.get("cwd"), *reduced.cwds] if c]))
        if len(cwds) > 1:  # the thread moved: every directory it ran in (MEMORY_EXCLUDE)
            ctx["cwds"] = cwds
        ctx["archived"] = self._is_archived(path)
        ctx["rollout_format"] = reduced.rollout_format
        return ctx

    def _is_archived(self, path: Path) -> bool:
        try:
            rel = path.resolve().relative_to(self.codex_home.resolve())
            return bool(rel.parts) and rel.parts[0] == ARCHIVED_DIR
        except (ValueError, OSError):
            return ARCHIVED_DIR in path.parts


def _is_compressed(path: Path) -> bool:
    return path.name.endswith(".jsonl.zst")


def build(roots: list[Path], options: ConnectorOptions) -> CodexConnector:
    """The registry's factory (memory_pipeline/models/sources.py): one CODEX_HOME."""
    return CodexConnector(roots[0])
