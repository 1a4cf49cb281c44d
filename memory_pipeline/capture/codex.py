"""Codex CLI connector: rollout files under CODEX_HOME -> ParsedTask (pure parsing, no database).

"Notes §x" below refers to the researched format description, `transcript-formats.md` section 1
(OpenAI Codex CLI). The pipeline of one parse:

1. `_Normaliser` turns every line of any envelope generation (notes §1.1: ≤May 2025 flat files,
   Jul–Sep 2025 bare ResponseItems, the `{timestamp,type,payload}` envelope since Sep 2025) into
   one internal stream of `_Event`s.
2. `_Reducer` folds that stream into turns (notes §1.9), tracks forks (notes §1.3) and remembers
   the thread's own `session_meta`, model and `thread_name_updated` events.
3. `_ownership` classifies the thread from native evidence only (notes §1.4).
4. `_resolve_title` picks the task name: state DB `threads.name`, `session_index.jsonl`, legacy
   `threads.title`, the rollout's `thread_name_updated` (notes §1.1, §1.6, §1.8).

Nothing here raises out of `parse()` for bad input: every problem becomes a `ParseIssue` and the
rest of the file is used.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl
from memory_pipeline.capture.models import (
    OwnershipVerdict,
    ParsedTask,
    ParsedTurn,
    ParseIssue,
    ParseResult,
    TaskTitle,
)

# --- file layout (notes §1.1) -------------------------------------------------------------------

SESSION_DIRS = ("sessions", "archived_sessions")
ARCHIVED_DIR = "archived_sessions"
STATE_DB = "state_5.sqlite"
SESSION_INDEX = "session_index.jsonl"

_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_UUID7_RE = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.I
)

# --- record vocabulary (notes §1.2, §1.5, §1.6) -------------------------------------------------

_ENVELOPE_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
        "world_state",
    }
)
# ResponseItem types that are agent work, never part of the visible outcome (notes §1.5).
_ACTIVITY_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
    }
)
# EventMsg types that are agent work (notes §1.6); everything unlisted is ignored.
_ACTIVITY_EVENTS = frozenset(
    {
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "exec_command_end",
        "patch_apply_end",
        "mcp_tool_call_end",
        "web_search_end",
        "view_image_tool_call",
        "image_generation_end",
        "dynamic_tool_call_request",
        "dynamic_tool_call_response",
        "collab_agent_spawn_end",
        "collab_agent_interaction_end",
        "collab_waiting_end",
        "collab_close_end",
        "collab_resume_end",
    }
)
# Injected context that Codex writes as role:"user" ResponseItems (notes §1.5,
# CONTEXTUAL_USER_FRAGMENTS). Only consulted where no user_message events exist.
_CONTEXT_PREFIXES = (
    "# agents.md instructions for",
    "<user_instructions>",
    "<environment_context>",
    "<instructions>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<subagent_commentary>",
    "<permissions instructions>",
    "<collaboration_mode>",
)
_USER_MESSAGE_BEGIN = "## My request for Codex:"  # notes §1.6 (USER_MESSAGE_BEGIN)
# user_message.kind values of real prompts (older builds: plain; some later builds: user).
_PROMPT_KINDS = frozenset({"plain", "user"})
_MEM_CITATION_RE = re.compile(r"<oai-mem-citation>.*?</oai-mem-citation>", re.S)

# --- ownership vocabulary (notes §1.4) ----------------------------------------------------------

_FIRST_PARTY_ORIGINATORS = frozenset({"codex_cli_rs", "codex-tui", "codex_vscode"})
_USER_CUSTOM_SOURCES = frozenset({"atlas", "chatgpt"})
_DELEGATED_THREAD_SOURCES = frozenset({"subagent", "memory_consolidation"})
_AGENT_IDENTITY_FIELDS = ("agent_nickname", "agent_role", "agent_type", "agent_path")

# A fork's copy of its parent's rollout is written in one burst (notes §1.3): consecutive copied
# lines are milliseconds apart. A gap larger than this inside the copied region means the fork's
# own activity has started (used only when a turn carries no time of its own, see _Reducer).
COPY_BURST_GAP_SECONDS = 2.0


# =================================================================================================
# Connector
# =================================================================================================


class CodexConnector:
    """Reads Codex CLI rollouts (`sessions/**`, `archived_sessions/**`) of one CODEX_HOME."""

    source = "codex"

    def __init__(self, codex_home: Path) -> None:
        self.codex_home = Path(codex_home)
        self._index_cache: tuple[tuple[int, int, int], dict[str, _IndexEntry]] | None = None

    # --- Connector protocol ---------------------------------------------------------------------

    def discover(self) -> list[Path]:
        """Every rollout-*.jsonl / rollout-*.jsonl.zst under sessions/ and archived_sessions/."""
        found: list[Path] = []
        for sub in SESSION_DIRS:
            root = self.codex_home / sub
            if not root.is_dir():
                continue
            for dirpath, _dirnames, filenames in os.walk(root):  # does not follow symlinked dirs
                for name in filenames:
                    if name.startswith("rollout-") and name.endswith((".jsonl", ".jsonl.zst")):
                        path = Path(dirpath) / name
                        if path.is_file():
                            found.append(path)
        return sorted(found)

    def renamed_since(self, since_ns: int) -> tuple[set[Path], int]:
        """Rollouts of threads named after `since_ns` (epoch ns), and the index's mtime.

        A rename is written to `session_index.jsonl` (and the state DB), never to the rollout,
        so the rollout's mtime says nothing about it. Entries without a time count as new.
        """
        try:
            index_mtime = (self.codex_home / SESSION_INDEX).stat().st_mtime_ns
        except OSError:
            return set(), since_ns
        if index_mtime <= since_ns:
            return set(), since_ns
        since = datetime.fromtimestamp(since_ns / 1e9, UTC)
        renamed = {
            thread
            for thread, entry in self._session_index().items()
            if entry.updated_at is None or entry.updated_at > since
        }
        return {p for p in self.discover() if _uuid_from_name(p) in renamed}, index_mtime

    def task_days(self, path: Path) -> set[date]:
        """UTC start day of the file's thread; reads only up to the first line that has a time.

        Uses the same rule as `parse()` (`_start_time_of_line`), so both always agree.
        """
        if _is_compressed(path):
            return set()
        thread_id = _uuid_from_name(path)
        read = JsonlRead(path)
        for _line, obj in iter_jsonl(path, read):
            found = _start_time_of_line(obj, thread_id)
            if found is not None:
                return {found.date()}
        fallback = _uuid7_time(thread_id)
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
                    ParseIssue(
                        path=str(path),
                        reason="parser_error",
                        detail=f"{type(exc).__name__}: {exc}",
                    )
                ]
            )

    # --- parse ----------------------------------------------------------------------------------

    def _parse(self, path: Path) -> ParseResult:
        reduced, issues = _reduce_file(path, prompts_from_items=False)
        if reduced.user_events == 0 and reduced.enveloped_user_items > 0:
            # An enveloped rollout without any user_message event: take prompts from the
            # role:"user" ResponseItems instead (context fragments filtered), one more pass.
            reduced, issues = _reduce_file(path, prompts_from_items=True)
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
        started_at = reduced.started_at or _uuid7_time(thread_id)
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
        title, title_issues = self._resolve_title(
            thread_id, reduced, turns[0].prompt if turns else None
        )
        issues.extend(title_issues)
        task = ParsedTask(
            source="codex",
            native_id=thread_id,
            started_at=started_at,
            title=title,
            ownership=_ownership(reduced.own_meta),
            native_context=self._native_context(path, reduced),
            turns=turns,
            unfinished_turn=reduced.unfinished_turn,
            source_path=str(path),
        )
        return ParseResult(tasks=[task], issues=issues)

    def _native_context(self, path: Path, reduced: _Reducer) -> dict[str, Any]:
        """Provenance only (never the semantic project, never account identifiers)."""
        meta = reduced.own_meta or {}
        ctx: dict[str, Any] = {}
        for key in ("cwd", "originator", "cli_version", "model_provider", "forked_from_id"):
            value = meta.get(key)
            if isinstance(value, str) and value:
                ctx[key] = value
        if "source" in meta:
            ctx["source"] = meta["source"]
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
        ctx["archived"] = self._is_archived(path)
        ctx["rollout_format"] = reduced.rollout_format
        return ctx

    def _is_archived(self, path: Path) -> bool:
        try:
            rel = path.resolve().relative_to(self.codex_home.resolve())
            return bool(rel.parts) and rel.parts[0] == ARCHIVED_DIR
        except (ValueError, OSError):
            return ARCHIVED_DIR in path.parts

    # --- naming (notes §1.1 session_index, §1.6 thread_name_updated, §1.8 state DB) -------------

    def _resolve_title(
        self, thread_id: str, reduced: _Reducer, first_prompt: str | None
    ) -> tuple[TaskTitle | None, list[ParseIssue]]:
        """threads.name > session_index (last valid entry) > threads.title > thread_name_updated.

        Legacy `threads.title` is skipped when it is only Codex's copy of the first prompt (§1.8:
        "title is taken from the first user_message unless a name was set"): deriving a title from
        the first prompt is the store's job, the connector reports native names only.
        """
        row, issues = _read_state_row(self.codex_home / STATE_DB, thread_id)
        if row is not None and row.name:
            return TaskTitle(
                text=row.name, source="codex:threads.name", observed_at=row.updated_at
            ), issues
        entry = self._session_index().get(thread_id)
        if entry is not None and entry.name:
            return TaskTitle(
                text=entry.name, source="codex:session_index", observed_at=entry.updated_at
            ), issues
        if (
            row is not None
            and row.title
            and not _is_prompt_copy(row.title, [row.first_user_message, first_prompt])
        ):
            return TaskTitle(
                text=row.title, source="codex:threads.title", observed_at=row.updated_at
            ), issues
        if reduced.name_event is not None and reduced.name_event[0]:
            name, observed = reduced.name_event
            return TaskTitle(
                text=name, source="codex:thread_name_updated", observed_at=observed
            ), issues
        return None, issues

    def _session_index(self) -> dict[str, _IndexEntry]:
        """`session_index.jsonl`, append-only, last valid entry per id wins; cached by file stat."""
        path = self.codex_home / SESSION_INDEX
        try:
            st = path.stat()
        except OSError:
            return {}
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self._index_cache is not None and self._index_cache[0] == key:
            return self._index_cache[1]
        entries: dict[str, _IndexEntry] = {}
        # Malformed lines are skipped without a ParseIssue: they belong to the index, not to the
        # rollout being parsed, and would be repeated for every thread.
        for _line, obj in iter_jsonl(path, JsonlRead(path)):
            thread = obj.get("id")
            name = obj.get("thread_name", "<missing>")
            if not isinstance(thread, str) or not (name is None or isinstance(name, str)):
                continue
            # A null/empty name is a valid "cleared" entry: later entries win either way.
            entries[thread] = _IndexEntry(
                name=(name or "").strip() or None, updated_at=_parse_time(obj.get("updated_at"))
            )
        self._index_cache = (key, entries)
        return entries


# =================================================================================================
# Small helpers: names, times, text
# =================================================================================================


@dataclass(frozen=True)
class _IndexEntry:
    name: str | None
    updated_at: datetime | None


def _is_compressed(path: Path) -> bool:
    return path.name.endswith(".jsonl.zst")


def _uuid_from_name(path: Path) -> str | None:
    """The thread uuid in `rollout-<time>-<uuid>.jsonl` (the last uuid in the name)."""
    found = _UUID_RE.findall(path.name)
    return found[-1].lower() if found else None


def _uuid7_ms(value: Any) -> int | None:
    """Unix ms embedded in a UUIDv7 (thread and turn ids are v7 in 2026 builds)."""
    if not isinstance(value, str) or not _UUID7_RE.match(value):
        return None
    return int(value[0:8] + value[9:13], 16)


def _uuid7_time(value: Any) -> datetime | None:
    return _from_ms(_uuid7_ms(value))


def _parse_time(value: Any) -> datetime | None:
    """RFC 3339 string (Z or offset; naive means UTC) or unix seconds/ms number -> aware UTC."""
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
        if isinstance(value, str) and value.strip():
            parsed = datetime.fromisoformat(value.strip())
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _from_ms(value: Any) -> datetime | None:
    """Unix milliseconds -> aware UTC (None for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def _ms(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def _strip_user_prefix(text: str) -> str:
    """Drop the legacy `## My request for Codex:` wrapper (state/src/extract.rs)."""
    idx = text.find(_USER_MESSAGE_BEGIN)
    if idx >= 0:
        return text[idx + len(_USER_MESSAGE_BEGIN) :].strip()
    return text.strip()


def _is_context_text(text: str) -> bool:
    return text.lstrip().lower().startswith(_CONTEXT_PREFIXES)


def _clean_outcome(text: str) -> str:
    return _MEM_CITATION_RE.sub("", text).strip()


def _content_text(content: Any, types: Iterable[str]) -> str:
    """Join the text parts of a ResponseItem/TurnItem content list."""
    wanted = set(types)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in wanted:
            text = part.get("text")
            if isinstance(text, str) and text:
                parts.append(text)
    return "\n".join(parts)


def _image_count(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(
        1
        for part in content
        if isinstance(part, dict) and part.get("type") in ("image", "local_image", "input_image")
    )


def _list_len(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def _prompt_text(text: str, images: int) -> str:
    """A prompt's text; an image-only message becomes `[image]` markers so it is not empty."""
    text = _strip_user_prefix(text)
    if text or images <= 0:
        return text
    return " ".join(["[image]"] * images)


def _norm_space(text: str) -> str:
    return " ".join(text.split())


def _is_prompt_copy(title: str, prompts: Iterable[str | None]) -> bool:
    """True when `title` is just (a truncation of) the first prompt."""
    t = _norm_space(_strip_user_prefix(title))
    if not t:
        return True
    for prompt in prompts:
        if not prompt:
            continue
        p = _norm_space(_strip_user_prefix(prompt))
        if t == p or (p.startswith(t.rstrip(".…").rstrip()) and len(t) >= 8):
            return True
    return False


# =================================================================================================
# Start time: shared by task_days() and parse()
# =================================================================================================


def _meta_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The session meta of a line: an envelope `session_meta` payload, or the legacy first line
    `{id, timestamp, instructions[, git, cwd, originator, cli_version]}` (notes §1.1)."""
    if obj.get("type") == "session_meta":
        payload = obj.get("payload")
        return payload if isinstance(payload, dict) else None
    if "type" not in obj and "record_type" not in obj and "id" in obj and "timestamp" in obj:
        return obj
    return None


def _start_time_of_line(obj: dict[str, Any], thread_id: str | None) -> datetime | None:
    """The task start this line determines, if any.

    Rule (the first line that yields a time decides): the thread's own session meta gives its
    `timestamp` (session start); a copied parent meta of a fork gives only its line timestamp
    (the copy time, not the parent's start); any other line gives its line timestamp.
    """
    meta = _meta_of(obj)
    line_ts = _parse_time(obj.get("timestamp")) if meta is not obj else None
    if meta is not None:
        meta_id = meta.get("id")
        if thread_id is None or meta_id is None or str(meta_id).lower() == thread_id:
            return _parse_time(meta.get("timestamp")) or line_ts
    return line_ts


# =================================================================================================
# Envelope normalisation: every generation -> one internal event stream
# =================================================================================================

EventKind = Literal[
    "meta",
    "turn_started",
    "turn_complete",
    "turn_aborted",
    "user",
    "agent",
    "assistant",
    "activity",
    "rollback",
    "name",
    "context",
]


@dataclass(frozen=True)
class _Event:
    kind: EventKind
    line: int
    ts: datetime | None
    # "event": event_msg (or legacy bare item, which is the only source there);
    # "item": paginated item_completed TurnItem (notes §1.6)
    origin: Literal["event", "item"] = "event"
    turn_id: str | None = None
    text: str = ""
    phase: str | None = None
    msg_id: str | None = None
    time_ms: int | None = None  # turn_started: latest possible own start (v7 id / started_at)
    ordinal: int | None = None  # RolloutLine.ordinal (JUL), for subagent_history_start_ordinal
    payload: dict[str, Any] = field(default_factory=dict)


class _Normaliser:
    """Maps raw JSON objects to `_Event`s and counts what the reducer must know about."""

    def __init__(self, read: JsonlRead, prompts_from_items: bool) -> None:
        self.read = read
        self.prompts_from_items = prompts_from_items
        self.unknown: dict[str, list[int]] = {}  # record type -> [first line, count]
        self.user_events = 0  # user_message events + item_completed UserMessage
        self.enveloped_user_items = 0  # non-context role:user response_items in the envelope
        self.saw_codex_record = False
        self.bare_items = False
        self.enveloped = False

    def events(self, line: int, obj: dict[str, Any]) -> list[_Event]:
        if obj.get("record_type") is not None:  # Jul–Sep 2025 `{"record_type":"state"}` lines
            self.saw_codex_record = True
            return []
        meta = _meta_of(obj)
        if meta is not None and meta is obj:  # legacy first line
            self.saw_codex_record = True
            self.bare_items = True
            return [_Event("meta", line, _parse_time(obj.get("timestamp")), payload=obj)]
        rtype = obj.get("type")
        if "payload" in obj and isinstance(rtype, str):
            if rtype not in _ENVELOPE_TYPES:
                self._unknown(rtype, line)
                return []
            self.saw_codex_record = True
            self.enveloped = True
            return self._enveloped(line, obj, rtype)
        if isinstance(rtype, str) and ("role" in obj or rtype in _ACTIVITY_ITEMS):
            # ≤Sep 2025: bare ResponseItems, no envelope, no timestamps (notes §1.1).
            self.saw_codex_record = True
            self.bare_items = True
            return self._response_item(line, None, obj, bare=True, ordinal=None)
        self._unknown(str(rtype) if rtype is not None else "<no type>", line)
        return []

    def _unknown(self, rtype: str, line: int) -> None:
        seen = self.unknown.setdefault(rtype, [line, 0])
        seen[1] += 1

    def unknown_issues(self) -> list[ParseIssue]:
        return [
            ParseIssue(
                path=str(self.read.path),
                line=first,
                reason="unknown_record",
                detail=f"type={rtype!r} ({count} line{'s' if count != 1 else ''}) ignored",
            )
            for rtype, (first, count) in self.unknown.items()
        ]

    def _enveloped(self, line: int, obj: dict[str, Any], rtype: str) -> list[_Event]:
        ts = _parse_time(obj.get("timestamp"))
        payload = obj.get("payload")
        ordinal = obj.get("ordinal") if isinstance(obj.get("ordinal"), int) else None
        if not isinstance(payload, dict):
            self.read.issue("invalid_record", f"{rtype} payload is not an object", line)
            return []
        if rtype == "session_meta":
            return [_Event("meta", line, ts, payload=payload, ordinal=ordinal)]
        if rtype == "turn_context":
            return [_Event("context", line, ts, payload=payload, ordinal=ordinal)]
        if rtype == "response_item":
            return self._response_item(line, ts, payload, bare=False, ordinal=ordinal)
        if rtype == "event_msg":
            return self._event_msg(line, ts, payload, ordinal)
        return []  # compacted, inter-agent communication, world_state: not turn content

    def _response_item(
        self, line: int, ts: datetime | None, item: dict[str, Any], bare: bool, ordinal: int | None
    ) -> list[_Event]:
        itype = item.get("type")
        if itype in _ACTIVITY_ITEMS:
            return [_Event("activity", line, ts, ordinal=ordinal)]
        if itype != "message":
            return []  # ghost_snapshot, compaction, unknown items: no turn content
        role = item.get("role")
        msg_id = item.get("id") if isinstance(item.get("id"), str) else None
        phase = item.get("phase") if isinstance(item.get("phase"), str) else None
        if role == "assistant":
            text = _content_text(item.get("content"), ("output_text", "text"))
            return [
                _Event(
                    "assistant", line, ts, text=text, phase=phase, msg_id=msg_id, ordinal=ordinal
                )
            ]
        if role != "user":
            return []  # developer/system: permissions, collaboration mode... (notes §1.5)
        text = _content_text(item.get("content"), ("input_text", "text"))
        if _is_context_text(text):
            return []
        images = _image_count(item.get("content"))
        if not bare:
            # Enveloped role:user items duplicate user_message events or are injected context:
            # prompts come from event_msg.user_message (notes §1.5), unless the file has none.
            if text.strip() or images:
                self.enveloped_user_items += 1
            if not self.prompts_from_items:
                return []
        prompt = _prompt_text(text, images)
        if not prompt:
            return []
        if bare:
            self.user_events += 1
        return [_Event("user", line, ts, text=prompt, msg_id=msg_id, ordinal=ordinal)]

    def _event_msg(
        self, line: int, ts: datetime | None, p: dict[str, Any], ordinal: int | None
    ) -> list[_Event]:
        etype = p.get("type")
        turn_id = p.get("turn_id") if isinstance(p.get("turn_id"), str) else None
        if etype in ("task_started", "turn_started"):
            started = _parse_time(p.get("started_at"))
            time_ms = _uuid7_ms(turn_id)
            if time_ms is None and started is not None:
                # started_at is whole unix seconds: take the end of that second, so a turn that
                # began in the same second as its (forked) thread still counts as the thread's.
                time_ms = (_ms(started) or 0) + 999
            return [
                _Event(
                    "turn_started",
                    line,
                    ts,
                    turn_id=turn_id,
                    time_ms=time_ms,
                    ordinal=ordinal,
                    payload={"started_at": started},
                )
            ]
        if etype in ("task_complete", "turn_complete"):
            return [_Event("turn_complete", line, ts, turn_id=turn_id, payload=p, ordinal=ordinal)]
        if etype == "turn_aborted":
            return [_Event("turn_aborted", line, ts, turn_id=turn_id, ordinal=ordinal)]
        if etype == "user_message":
            self.user_events += 1
            message = p.get("message") if isinstance(p.get("message"), str) else ""
            kind = p.get("kind")
            if (isinstance(kind, str) and kind not in _PROMPT_KINDS) or _is_context_text(message):
                # Sep–Oct 2025 builds also emitted user_message events for injected context,
                # marked with `kind` (InputMessageKind: user_instructions, environment_context).
                return []
            images = _list_len(p.get("images")) + _list_len(p.get("local_images"))
            prompt = _prompt_text(message, images)
            client_id = p.get("client_id") if isinstance(p.get("client_id"), str) else None
            if not prompt:
                return []
            return [_Event("user", line, ts, text=prompt, msg_id=client_id, ordinal=ordinal)]
        if etype == "agent_message":
            message = p.get("message")
            if not isinstance(message, str) or not message.strip():
                return []
            phase = p.get("phase") if isinstance(p.get("phase"), str) else None
            return [_Event("agent", line, ts, text=message, phase=phase, ordinal=ordinal)]
        if etype == "item_completed":
            return self._turn_item(line, ts, p, turn_id, ordinal)
        if etype == "thread_rolled_back":
            n = p.get("num_turns")
            if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
                return [_Event("rollback", line, ts, payload={"num_turns": n}, ordinal=ordinal)]
            self.read.issue("invalid_record", "thread_rolled_back without num_turns", line)
            return []
        if etype == "thread_name_updated":
            return [_Event("name", line, ts, payload=p, ordinal=ordinal)]
        if etype in _ACTIVITY_EVENTS:
            return [_Event("activity", line, ts, turn_id=turn_id, ordinal=ordinal)]
        return []  # token_count, context_compacted, review mode, unknown events: ignored

    def _turn_item(
        self,
        line: int,
        ts: datetime | None,
        p: dict[str, Any],
        turn_id: str | None,
        ordinal: int | None,
    ) -> list[_Event]:
        """`item_completed` (paginated history mode, notes §1.6)."""
        item = p.get("item")
        if not isinstance(item, dict):
            return []
        itype = item.get("type")
        item_id = item.get("id") if isinstance(item.get("id"), str) else None
        if itype == "UserMessage":
            content = item.get("content")
            prompt = _prompt_text(_content_text(content, ("text",)), _image_count(content))
            self.user_events += 1
            if not prompt:
                return []
            return [
                _Event(
                    "user",
                    line,
                    ts,
                    origin="item",
                    turn_id=turn_id,
                    text=prompt,
                    msg_id=item_id,
                    ordinal=ordinal,
                )
            ]
        if itype == "AgentMessage":
            text = _content_text(item.get("content"), ("Text", "text"))
            if not text.strip():
                return []
            phase = item.get("phase") if isinstance(item.get("phase"), str) else None
            return [
                _Event(
                    "agent",
                    line,
                    ts,
                    origin="item",
                    turn_id=turn_id,
                    text=text,
                    phase=phase,
                    msg_id=item_id,
                    ordinal=ordinal,
                )
            ]
        if itype in ("Reasoning", "CommandExecution", "McpToolCall", "FileChange", "WebSearch"):
            return [_Event("activity", line, ts, turn_id=turn_id, ordinal=ordinal)]
        return []


# =================================================================================================
# Turn reducer (notes §1.9)
# =================================================================================================

TurnStatus = Literal["open", "completed", "aborted", "failed", "superseded", "incomplete"]


@dataclass
class _Msg:
    text: str
    line: int
    ts: datetime | None
    msg_id: str | None = None
    phase: str | None = None


@dataclass
class _Turn:
    turn_id: str
    explicit: bool  # opened by task_started (else an implicit turn of an older rollout)
    inherited: bool  # part of a fork's copy of its parent (notes §1.3)
    started_at: datetime | None
    status: TurnStatus = "open"
    completed_at: datetime | None = None
    prompts: list[_Msg] = field(default_factory=list)  # user_message events / legacy items
    item_prompts: list[_Msg] = field(default_factory=list)  # item_completed UserMessage
    agent: list[_Msg] = field(default_factory=list)  # agent_message events + AgentMessage items
    assistant: list[_Msg] = field(default_factory=list)  # role:assistant response_items
    last_agent_message: str | None = None
    trailing_activity: bool = False  # agent work seen after the last non-commentary answer

    def prompt(self) -> str:
        msgs = self.prompts or self.item_prompts
        return "\n\n".join(m.text for m in msgs if m.text).strip()

    def prompt_ids(self) -> list[str]:
        return [m.msg_id for m in (self.prompts or self.item_prompts) if m.msg_id]

    def has_content(self) -> bool:
        return bool(self.prompts or self.item_prompts or self.agent or self.assistant)

    def outcome(self) -> tuple[str, _Msg | None]:
        """The final visible answer (notes §1.9), never commentary, reasoning or tool output.

        1. task_complete.last_agent_message; 2. the last agent message with phase final_answer;
        3. the last agent message without a phase that is not a known commentary text (0.104
        wrote the phase only on the response_item); 4. the last role:assistant response_item
        that is not commentary.
        """
        if self.last_agent_message:
            text = _clean_outcome(self.last_agent_message)
            if text:
                return text, self._message_with_text(text)
        commentary = {
            _clean_outcome(m.text)
            for m in (*self.agent, *self.assistant)
            if m.phase == "commentary"
        }
        for msg in reversed(self.agent):
            if msg.phase == "final_answer" and _clean_outcome(msg.text):
                return _clean_outcome(msg.text), msg
        for msg in reversed(self.agent):
            text = _clean_outcome(msg.text)
            if msg.phase is None and text and text not in commentary:
                return text, msg
        for msg in reversed(self.assistant):
            text = _clean_outcome(msg.text)
            if msg.phase != "commentary" and text and text not in commentary:
                return text, msg
        return "", None

    def _message_with_text(self, text: str) -> _Msg | None:
        for msg in reversed([*self.agent, *self.assistant]):
            if _clean_outcome(msg.text) == text:
                return msg
        return None


class _Reducer:
    """Folds the event stream of one rollout into turns, identity and provenance."""

    def __init__(self, path: Path) -> None:
        self.thread_id: str | None = _uuid_from_name(path)
        self.own_meta: dict[str, Any] | None = None
        self.started_at: datetime | None = None
        self.creation_ms: int | None = _uuid7_ms(self.thread_id)
        self.turns: list[_Turn] = []  # closed turns in native order (what rollback truncates)
        self.current: _Turn | None = None
        self.unfinished_turn = False
        self.model: str | None = None
        self.name_event: tuple[str | None, datetime | None] | None = None
        self.user_events = 0
        self.enveloped_user_items = 0
        self.lines_seen = 0
        self.saw_codex_record = False
        self.rollout_format = "unknown"
        # fork bookkeeping (notes §1.3)
        self._in_copy = False
        self._copy_last_ts: datetime | None = None
        self._history_start_ordinal: int | None = None

    # --- driving --------------------------------------------------------------------------------

    def observe_line(self, obj: dict[str, Any]) -> None:
        """Per raw line, before its events: start time (same rule as task_days)."""
        self.lines_seen += 1
        if self.started_at is None:
            self.started_at = _start_time_of_line(obj, self.thread_id)
        if self.thread_id is None:
            meta = _meta_of(obj)
            if meta is not None and isinstance(meta.get("id"), str) and meta["id"]:
                self.thread_id = meta["id"].lower()
                self.creation_ms = _uuid7_ms(self.thread_id)

    def feed(self, ev: _Event) -> None:
        if ev.kind == "meta":
            self._on_meta(ev)
            return
        inherited = self._inherited(ev)
        handler = getattr(self, f"_on_{ev.kind}")
        handler(ev, inherited)

    def finish(self) -> None:
        turn = self.current
        self.current = None
        if turn is None:
            return
        if turn.explicit:
            # task_started without a terminal event at EOF: the session may still be live.
            turn.status = "incomplete"
        elif self._implicit_complete_at_eof(turn):
            turn.status = "completed"
        else:
            turn.status = "incomplete"
        if turn.status == "incomplete" and not turn.inherited and (turn.explicit or turn.prompt()):
            self.unfinished_turn = True
        self._close(turn)

    def complete_turns(self) -> list[ParsedTurn]:
        """Complete own turns, 0-based ordinals in native order.

        A completed turn needs a prompt. Its outcome may be "" (task_complete with
        last_agent_message null and no agent text, e.g. a tool-only turn): it is still a finished
        exchange the user started, so it is kept. Turns without any prompt (e.g. a manual
        /compact) are not Agent Turns and are left out. Aborted, failed, superseded and unfinished
        turns never take an ordinal, so they cannot shift the ordinals of later turns.
        """
        out: list[ParsedTurn] = []
        for turn in self.turns:
            if turn.inherited or turn.status != "completed":
                continue
            prompt = turn.prompt()
            if not prompt:
                continue
            outcome, outcome_msg = turn.outcome()
            ids = turn.prompt_ids()
            if outcome_msg is not None and outcome_msg.msg_id:
                ids.append(outcome_msg.msg_id)
            completed_at = turn.completed_at
            if completed_at is None and outcome_msg is not None:
                completed_at = outcome_msg.ts
            out.append(
                ParsedTurn(
                    ordinal=len(out),
                    native_turn_id=turn.turn_id,
                    prompt=prompt,
                    outcome=outcome,
                    started_at=turn.started_at,
                    completed_at=completed_at,
                    native_message_ids=ids,
                )
            )
        return out

    # --- metas and forks ------------------------------------------------------------------------

    def _on_meta(self, ev: _Event) -> None:
        meta = ev.payload
        meta_id = meta.get("id")
        meta_id = meta_id.lower() if isinstance(meta_id, str) else None
        if self.thread_id is None and meta_id:
            self.thread_id = meta_id
            self.creation_ms = _uuid7_ms(meta_id)
        own = meta_id == self.thread_id or (meta_id is None and self.own_meta is None)
        if not own:
            # A fork copies the parent's rollout, including the parent's session_meta: that meta
            # is not ours, and what follows it is the parent's history (notes §1.3).
            self._in_copy = True
            self._copy_last_ts = ev.ts
            return
        self._in_copy = False  # our own meta again (resume): any copied region is over
        if self.own_meta is None:
            # The first own session_meta decides ownership and context (notes §1.4).
            self.own_meta = meta
            created = _parse_time(meta.get("timestamp"))
            if created is not None:
                self.creation_ms = _ms(created)
            start_ordinal = meta.get("subagent_history_start_ordinal")
            if isinstance(start_ordinal, int) and not isinstance(start_ordinal, bool):
                self._history_start_ordinal = start_ordinal

    def _inherited(self, ev: _Event) -> bool:
        """Does this event belong to the parent's history copied into a fork?

        * A subagent rollout marks its inherited prefix with subagent_history_start_ordinal
          (JUL): lines with a smaller `ordinal` are the parent's (notes §1.9).
        * After a foreign session_meta we are in the copied region. It ends at the first turn
          whose own start time (its UUIDv7 turn_id, else task_started.started_at) is not older
          than this thread's creation: the parent's turns all predate the fork. Turns without a
          time of their own (older rollouts) end it when the copy burst ends: copied lines are
          written back to back, so a gap > COPY_BURST_GAP_SECONDS between lines means new
          activity.
        """
        if (
            self._history_start_ordinal is not None
            and ev.ordinal is not None
            and ev.ordinal < self._history_start_ordinal
        ):
            return True
        if not self._in_copy:
            return False
        if ev.kind == "turn_started" and ev.time_ms is not None and self.creation_ms is not None:
            if ev.time_ms >= self.creation_ms:
                self._in_copy = False
                return False
            self._copy_last_ts = ev.ts or self._copy_last_ts
            return True
        if ev.ts is not None and self._copy_last_ts is not None:
            gap = (ev.ts - self._copy_last_ts).total_seconds()
            if gap > COPY_BURST_GAP_SECONDS:
                self._in_copy = False
                return False
        if ev.ts is not None:
            self._copy_last_ts = ev.ts
        return True

    # --- turn events ----------------------------------------------------------------------------

    def _on_turn_started(self, ev: _Event, inherited: bool) -> None:
        self._finish_current()
        self.current = _Turn(
            turn_id=ev.turn_id or self._implicit_id(ev),
            explicit=True,
            inherited=inherited,
            started_at=ev.ts or ev.payload.get("started_at"),
        )

    def _on_user(self, ev: _Event, inherited: bool) -> None:
        msg = _Msg(ev.text, ev.line, ev.ts, ev.msg_id)
        if ev.origin == "item":
            target = self._turn_for(ev.turn_id)
            if target is not None and target.explicit:
                target.item_prompts.append(msg)
                return
        turn = self.current
        if turn is None or not turn.explicit:
            # Older rollouts have no task_started: every user_message opens an implicit turn
            # (notes §1.9, handle_user_message); the previous implicit turn ends here.
            self._finish_current()
            turn = _Turn(
                turn_id=self._implicit_id(ev),
                explicit=False,
                inherited=inherited,
                started_at=ev.ts,
            )
            self.current = turn
        (turn.item_prompts if ev.origin == "item" else turn.prompts).append(msg)

    def _on_agent(self, ev: _Event, inherited: bool) -> None:
        turn = self._turn_for(ev.turn_id) if ev.origin == "item" else self.current
        if turn is None:
            return  # agent text outside any turn has no prompt to belong to
        turn.agent.append(_Msg(ev.text, ev.line, ev.ts, ev.msg_id, ev.phase))
        if turn is self.current:
            turn.trailing_activity = ev.phase == "commentary"

    def _on_assistant(self, ev: _Event, inherited: bool) -> None:
        turn = self.current
        if turn is None:
            return
        turn.assistant.append(_Msg(ev.text, ev.line, ev.ts, ev.msg_id, ev.phase))
        if ev.text.strip():
            turn.trailing_activity = ev.phase == "commentary"

    def _on_activity(self, ev: _Event, inherited: bool) -> None:
        if self.current is not None:
            self.current.trailing_activity = True

    def _on_turn_complete(self, ev: _Event, inherited: bool) -> None:
        turn = self._turn_for(ev.turn_id, fallback_current=True)
        if turn is None:
            return
        last = ev.payload.get("last_agent_message")
        turn.last_agent_message = last if isinstance(last, str) else None
        if turn.status != "aborted":  # like Codex, a late completion does not revive an abort
            # JUL: task_complete.error means the turn failed (notes §1.6): no final answer.
            turn.status = "failed" if ev.payload.get("error") else "completed"
        turn.completed_at = ev.ts or _parse_time(ev.payload.get("completed_at"))
        if turn is self.current:
            self.current = None
            self._close(turn)

    def _on_turn_aborted(self, ev: _Event, inherited: bool) -> None:
        # Interrupted/replaced turns are not complete turns: skipped, not captured (notes §1.9).
        turn = self._turn_for(ev.turn_id, fallback_current=True)
        if turn is None:
            return
        turn.status = "aborted"
        if turn is self.current:
            self.current = None
            self._close(turn)

    def _on_rollback(self, ev: _Event, inherited: bool) -> None:
        # thread_rolled_back{num_turns}: the last N turns leave the history (notes §1.6, §1.9;
        # Codex's handle_thread_rollback truncates its finished-turn list, aborted ones included).
        self._finish_current()
        n = ev.payload["num_turns"]
        if n:
            del self.turns[-n:]

    def _on_name(self, ev: _Event, inherited: bool) -> None:
        thread = ev.payload.get("thread_id")
        if inherited or (isinstance(thread, str) and thread.lower() != self.thread_id):
            return
        name = ev.payload.get("thread_name")
        name = name.strip() if isinstance(name, str) else None
        self.name_event = (name or None, ev.ts)  # latest wins; a null name clears it

    def _on_context(self, ev: _Event, inherited: bool) -> None:
        model = ev.payload.get("model")
        if not inherited and isinstance(model, str) and model:
            self.model = model

    # --- helpers --------------------------------------------------------------------------------

    def _implicit_id(self, ev: _Event) -> str:
        # Codex's synthetic id for implicit turns is `rollout-<index>` (notes §1.9); we use the
        # 1-based line number of the turn's first record, which is stable under appends.
        return f"rollout-{ev.line}"

    def _turn_for(self, turn_id: str | None, fallback_current: bool = True) -> _Turn | None:
        if turn_id is not None:
            if self.current is not None and self.current.turn_id == turn_id:
                return self.current
            for turn in reversed(self.turns):
                if turn.turn_id == turn_id:
                    return turn
        return self.current if fallback_current else None

    def _finish_current(self) -> None:
        """Close the open turn because something new started."""
        turn = self.current
        self.current = None
        if turn is None:
            return
        if turn.explicit:
            # A new task_started without a terminal event for this one (crash, then resume).
            turn.status = "superseded"
        else:
            # An implicit turn ends at the next user message: complete iff it has an answer.
            turn.status = "completed" if turn.outcome()[0] else "incomplete"
        self._close(turn)

    def _close(self, turn: _Turn) -> None:
        # Like Codex's finish_current_turn: empty implicit turns are dropped.
        if turn.explicit or turn.has_content():
            self.turns.append(turn)

    @staticmethod
    def _implicit_complete_at_eof(turn: _Turn) -> bool:
        """The LAST implicit turn of an older rollout (no task_complete exists in that format).

        It counts as complete only if it has a non-commentary answer and the agent did nothing
        after that answer (no tool call, reasoning or commentary after it). A file that ends in
        agent work is mid-turn and waits for a later run.
        """
        return bool(turn.outcome()[0]) and not turn.trailing_activity


def _reduce_file(path: Path, prompts_from_items: bool) -> tuple[_Reducer, list[ParseIssue]]:
    read = JsonlRead(path)
    norm = _Normaliser(read, prompts_from_items)
    reducer = _Reducer(path)
    for line, obj in iter_jsonl(path, read):
        reducer.observe_line(obj)
        for ev in norm.events(line, obj):
            reducer.feed(ev)
    reducer.finish()
    reducer.user_events = norm.user_events
    reducer.enveloped_user_items = norm.enveloped_user_items
    reducer.saw_codex_record = norm.saw_codex_record
    if norm.enveloped and norm.bare_items:
        reducer.rollout_format = "mixed"
    elif norm.enveloped:
        reducer.rollout_format = "rollout_items"  # {timestamp,type,payload}, since Sep 2025
    elif norm.bare_items:
        reducer.rollout_format = "bare_items"  # ≤ Sep 2025 first line + bare ResponseItems
    return reducer, [*read.issues, *norm.unknown_issues()]


# =================================================================================================
# Ownership (notes §1.4, "Proposed rule (Codex)")
# =================================================================================================


def _ownership(meta: dict[str, Any] | None) -> OwnershipVerdict:
    """Classify from the thread's first own session_meta. Delegation evidence always wins."""
    if meta is None:
        return OwnershipVerdict(ownership="unknown", reason="codex:no-session-meta")
    fields = (
        "source",
        "originator",
        "thread_source",
        "parent_thread_id",
        *_AGENT_IDENTITY_FIELDS,
    )
    evidence = {k: meta[k] for k in fields if meta.get(k) is not None}
    source = meta.get("source")
    originator = meta.get("originator")
    thread_source = meta.get("thread_source")

    def verdict(ownership: Literal["user_owned", "delegated", "unknown"], reason: str):
        return OwnershipVerdict(ownership=ownership, reason=reason, evidence=evidence)

    # 1. spawned by an agent
    if isinstance(source, dict) and "subagent" in source:
        return verdict("delegated", f"codex:subagent{_subagent_kind(source['subagent'])}")
    if isinstance(source, dict) and "internal" in source:
        kind = source["internal"]
        reason = f"codex:internal:{kind}" if isinstance(kind, str) else "codex:internal"
        return verdict("delegated", reason)
    if thread_source in _DELEGATED_THREAD_SOURCES:
        return verdict("delegated", f"codex:thread_source:{thread_source}")
    if meta.get("parent_thread_id") is not None:
        return verdict("delegated", "codex:parent_thread")
    if any(meta.get(k) is not None for k in _AGENT_IDENTITY_FIELDS):
        return verdict("delegated", "codex:agent_identity")
    # 2. automated / non-interactive
    if source == "exec" or originator == "codex_exec":
        return verdict("delegated", "codex:exec")
    if source == "mcp":
        return verdict("delegated", "codex:mcp")
    # 3. interactive first-party clients
    if source == "cli":
        return verdict("user_owned", "codex:interactive-cli")
    if source == "vscode":
        if isinstance(originator, str) and (
            originator in _FIRST_PARTY_ORIGINATORS or originator.startswith("Codex ")
        ):
            return verdict("user_owned", "codex:first-party-ide")
        return verdict("unknown", "codex:third-party-client")
    if isinstance(source, dict) and "custom" in source:
        if source["custom"] in _USER_CUSTOM_SOURCES:
            return verdict("user_owned", f"codex:custom:{source['custom']}")
        return verdict("unknown", "codex:custom-unknown")
    # 4. unknown: missing source (pre-Oct-2025 rollouts; Codex would default it to vscode, we
    # do not), "unknown", unrecognised strings or shapes
    if source is None:
        return verdict("unknown", "codex:no-source")
    return verdict("unknown", "codex:unknown-source")


def _subagent_kind(value: Any) -> str:
    """`review`, `compact`, `memory_consolidation`, `{"other":…}`, `{"thread_spawn":{…}}`."""
    if isinstance(value, str) and value:
        return f":{value}"
    if isinstance(value, dict) and len(value) == 1:
        (kind,) = value.keys()
        return f":{kind}"
    return ""


# =================================================================================================
# State DB (notes §1.8): read-only, optional, schema varies by version
# =================================================================================================


@dataclass(frozen=True)
class _StateRow:
    name: str | None
    title: str | None
    first_user_message: str | None
    updated_at: datetime | None


def _read_state_row(db: Path, thread_id: str) -> tuple[_StateRow | None, list[ParseIssue]]:
    if not db.is_file():
        return None, []
    try:
        uri = db.resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=1.0)
    except (sqlite3.Error, OSError, ValueError) as exc:
        return None, [_db_issue(db, exc)]
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(threads)")}
        if "id" not in columns:
            return None, []  # no threads table (or not this schema): nothing to read
        wanted = [
            c
            for c in ("name", "title", "first_user_message", "updated_at", "updated_at_ms")
            if c in columns
        ]
        if not wanted:
            return None, []
        quoted = ", ".join(f'"{c}"' for c in wanted)
        row = conn.execute(f"SELECT {quoted} FROM threads WHERE id = ?", (thread_id,)).fetchone()
        if row is None:
            return None, []
        values = dict(zip(wanted, row, strict=True))
    except sqlite3.Error as exc:
        return None, [_db_issue(db, exc)]
    finally:
        conn.close()

    def text(key: str) -> str | None:
        value = values.get(key)
        return value.strip() or None if isinstance(value, str) else None

    updated = _from_ms(values.get("updated_at_ms")) or _parse_time(values.get("updated_at"))
    return _StateRow(
        name=text("name"),
        title=text("title"),
        first_user_message=text("first_user_message"),
        updated_at=updated,
    ), []


def _db_issue(db: Path, exc: BaseException) -> ParseIssue:
    return ParseIssue(
        path=str(db), reason="state_db_unreadable", detail=f"{type(exc).__name__}: {exc}"
    )
