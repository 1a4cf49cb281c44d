"""What every source connector returns.

Connectors only parse: they read native files and return these models. They never touch the
database, redact, or hash; the capture store does that once for every source, so the rules for
monotonic append, drift and privacy live in one place. The protocol connectors implement is in
`capture/protocol.py`; the sources are registered in `memory_pipeline/models/sources.py`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from memory_pipeline.models.sources import SOURCE_NAMES

# Every registered source name (memory_pipeline/models/sources.py), as a Literal so pydantic
# refuses any other and the MCP schema lists them.
Source = Literal[SOURCE_NAMES]  # type: ignore[valid-type]
Ownership = Literal["user_owned", "delegated", "unknown"]


class TaskTitle(BaseModel):
    """A task's current name, with where it came from and when that source was observed."""

    text: str
    # e.g. "codex:threads.name", "codex:session_index", "codex:threads.title",
    # "codex:thread_name_updated", "codex:first_prompt", "claude_code:custom-title",
    # "claude_code:ai-title", "chat_import:title"
    source: str
    observed_at: datetime | None = None


class OwnershipVerdict(BaseModel):
    """Task ownership decided from native evidence only. Delegation evidence wins."""

    ownership: Ownership
    # Short stable reason code, e.g. "codex:subagent", "codex:exec", "codex:interactive-cli",
    # "claude_code:sidechain", "claude_code:compaction", "claude_code:warmup",
    # "claude_code:sdk-entrypoint", "claude_code:typed-prompt", "chat_import:user-import".
    reason: str
    # The native fields the verdict rests on, verbatim (never account identifiers).
    evidence: dict[str, Any] = Field(default_factory=dict)


class ParsedTurn(BaseModel):
    """One complete Agent Turn: the user's prompt plus the agent's visible outcome."""

    ordinal: int  # 0-based position among the task's complete turns, in native order
    native_turn_id: str | None = None  # Codex turn_id, Claude prompt record uuid, import message id
    prompt: str
    outcome: str  # final visible answer only: no tool calls, reasoning, commentary, context
    started_at: datetime | None = None
    completed_at: datetime | None = None
    # Native ids of the messages the turn was built from (prompt ones first), for provenance.
    native_message_ids: list[str] = Field(default_factory=list)
    # Speaker names when the source has them (chat imports of two humans).
    prompt_speaker: str | None = None
    outcome_speaker: str | None = None
    # A prompt nobody answered, kept once its conversation went quiet (chat imports only): the
    # outcome is empty. If the answer comes later, the store appends the complete turn after it.
    unanswered: bool = False


class ParsedTask(BaseModel):
    """A native agent task (Codex thread, Claude Code session, imported chat) as read now."""

    source: Source
    native_id: str  # unique within `source`; (source, native_id) is the task identity
    started_at: datetime  # decides the task's daily partition (UTC day)
    title: TaskTitle | None = None
    ownership: OwnershipVerdict
    # Native project context kept as provenance only: cwd, git branch/repository/commit,
    # originator, cli_version, model, entrypoint... It never becomes the semantic project.
    native_context: dict[str, Any] = Field(default_factory=dict)
    turns: list[ParsedTurn] = Field(default_factory=list)  # complete turns only, in order
    unfinished_turn: bool = False  # a last turn exists but is not complete yet (waits)
    # When the unfinished last turn completes by time alone, with no change to the file (a chat
    # import's quiet rule): capture must read the file again then, so the file is not marked
    # captured meanwhile. None when it waits for new content (or there is nothing waiting).
    settles_at: datetime | None = None
    source_path: str
    # The turns are one batch of a long task (the chat import stores a huge conversation in
    # batches): the store aligns them with stored turns by their ordinals, not as the whole task.
    partial: bool = False


class ParseIssue(BaseModel):
    """Something in a file that was skipped; the rest of the file (and the run) goes on."""

    path: str
    line: int | None = None  # 1-based line number when the issue is one line
    # "empty_file", "unreadable", "binary", "invalid_json", "truncated_line", "too_deep",
    # "unknown_record", "changed_while_reading", "line_too_long", "not_a_transcript",
    # "store_failed", "discover_failed", "task_days_failed", ...
    reason: str
    detail: str = ""


class ParseResult(BaseModel):
    tasks: list[ParsedTask] = Field(default_factory=list)
    issues: list[ParseIssue] = Field(default_factory=list)
