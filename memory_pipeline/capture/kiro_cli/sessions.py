"""Kiro CLI session files (agent engine v2): `<KIRO_HOME>/sessions/cli/<session_id>.jsonl`.

Each session is two files side by side (as Kiro CLI 2.x writes them, documented by the readers
listed in `kiro_cli/README`):

* `<id>.jsonl`: the transcript, append-only, one record a line
  `{"version": "v1", "kind": K, "data": {...}}` with `kind`
  - `Prompt`: `data.message_id`, `data.content` = blocks `{"kind": "text", "data": "<text>"}`
    (also `image`), `data.meta.timestamp` (unix seconds, float in newer builds);
  - `AssistantMessage`: `data.message_id`, `data.content` = `text` blocks (the visible text),
    `toolUse` blocks (`{"toolUseId", "name", "input"}`: tool calls) and `thinking` blocks
    (reasoning), never stored;
  - `ToolResults`: tool output sent back to the model, never stored;
  - `Clear` (`/clear`): the model's context was wiped; the turns before it stay what was said;
  - any other kind is ignored (Kiro adds kinds; none of them is a prompt or an answer).
* `<id>.json`: the session's metadata, rewritten in place: `session_id`, `cwd`, `title` (the
  name `/chat` shows, changed by a rename), `created_at`, `updated_at` (RFC 3339),
  `parent_session_id` (set for a session another session spawned: a subagent),
  `session_created_reason`, `session_state.agent_name`,
  `session_state.rts_model_state.model_info.model_id`, and
  `session_state.conversation_metadata.user_turn_metadatas[]`: one entry per finished user
  turn with `message_ids` (the turn's records), `end_timestamp`, `end_reason`, `result`.

A turn is a `Prompt` and the records up to the next one; its answer is the text of its last
`AssistantMessage` with text. It is complete when its ids are in a `user_turn_metadatas` entry
(the turn ended) or a later prompt follows. Without a sidecar (not written yet) the last turn
counts as complete when its last assistant record has text and no tool call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import parse_time, string
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl
from memory_pipeline.capture.kiro_cli.common import TurnBuilder, issue, read_document
from memory_pipeline.capture.models import ParsedTurn, ParseIssue

KNOWN_KINDS = frozenset({"Prompt", "AssistantMessage", "ToolResults", "Clear"})


@dataclass
class Session:
    session_id: str
    turns: list[ParsedTurn]
    unfinished: bool
    started_at: datetime | None
    sidecar: dict[str, Any] | None
    prompts: list[str] = field(default_factory=list)
    record_versions: list[str] = field(default_factory=list)
    saw_record: bool = False


def sidecar_path(jsonl: Path) -> Path:
    return jsonl.with_suffix(".json")


def _texts(content: Any, kind: str = "text") -> tuple[str, bool]:
    """(joined text blocks, whether any toolUse block) of a record's content."""
    if not isinstance(content, list):
        return "", False
    parts: list[str] = []
    tool = False
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("kind") == kind and isinstance(block.get("data"), str):
            parts.append(block["data"])
        elif block.get("kind") == "toolUse":
            tool = True
    return "\n\n".join(p for p in parts if p.strip()), tool


def _finished_turns(
    sidecar: dict[str, Any] | None,
) -> list[tuple[set[str], datetime | None]] | None:
    """(message ids, end time) of every finished user turn (None: no metadata to go by)."""
    if sidecar is None:
        return None
    state = sidecar.get("session_state")
    meta = state.get("conversation_metadata") if isinstance(state, dict) else None
    turns = meta.get("user_turn_metadatas") if isinstance(meta, dict) else None
    if not isinstance(turns, list):
        return None
    found: list[tuple[set[str], datetime | None]] = []
    for turn in turns:
        if not isinstance(turn, dict) or not isinstance(turn.get("message_ids"), list):
            continue
        ids = {m for m in turn["message_ids"] if isinstance(m, str) and m}
        if ids:
            found.append((ids, parse_time(turn.get("end_timestamp"))))
    return found


# The head of a skipped line that is surely not a prompt (an assistant record or tool output).
_NOT_PROMPT = (b'"AssistantMessage"', b'"ToolResults"')


def read_sidecar(jsonl: Path) -> tuple[dict[str, Any] | None, list[ParseIssue]]:
    path = sidecar_path(jsonl)
    if not path.exists():
        return None, []
    value, issues = read_document(path)
    if value is not None and not isinstance(value, dict):
        return None, [issue(path, "not_a_transcript", "the session sidecar is not an object")]
    return value, issues


def read_session(path: Path) -> tuple[Session | None, list[ParseIssue]]:
    """The session's turns. Records are tied to their turn by the sidecar's message ids where it
    has them: an assistant record a finished turn does not list belongs to a turn whose prompt
    line is damaged, and is never glued onto the turn before. Without such ids, a skipped line
    that may have been a prompt seals the open turn: what follows cannot be told to be its."""
    sidecar, issues = read_sidecar(path)
    finished = _finished_turns(sidecar)
    skipped: list[tuple[int, bool]] = []  # (line, may have been a prompt)

    def on_skip(line: int, head: bytes) -> None:
        skipped.append((line, not any(marker in head for marker in _NOT_PROMPT)))

    read = JsonlRead(path, on_skip=on_skip)
    builder = TurnBuilder()
    session = Session(
        session_id=string((sidecar or {}).get("session_id")) or path.stem,
        turns=[],
        unfinished=False,
        started_at=parse_time((sidecar or {}).get("created_at")),
        sidecar=sidecar,
    )
    members: set[str] | None = None  # the open turn's message ids per the sidecar
    end: datetime | None = None
    sealed = False  # a line that may have been a later prompt was lost after the open turn
    last_had_tool = False
    first_prompt_at: datetime | None = None
    for line, obj in iter_jsonl(path, read):
        if skipped and skipped[-1][1] and builder.open is not None and members is None:
            sealed = True
        skipped.clear()
        kind = obj.get("kind")
        data = obj.get("data")
        if not isinstance(kind, str) or (
            kind in ("Prompt", "AssistantMessage") and not isinstance(data, dict)
        ):
            issues.append(issue(path, "bad_record", "not a Kiro session record", line))
            sealed = sealed or (builder.open is not None and members is None)
            continue
        if kind not in KNOWN_KINDS:
            continue
        session.saw_record = True
        version = string(obj.get("version"))
        if version and version not in session.record_versions:
            session.record_versions.append(version)
        if kind == "Prompt":
            text, _ = _texts(data.get("content"))
            meta = data.get("meta")
            at = parse_time(meta.get("timestamp")) if isinstance(meta, dict) else None
            first_prompt_at = first_prompt_at or at
            mid = string(data.get("message_id"))
            if sealed:
                builder.drop()
            sealed, last_had_tool = False, False
            if not text.strip():
                builder._close()
                members = None
                continue  # an image-only prompt: nothing to remember
            session.prompts.append(text)
            builder.prompt(text, native_turn_id=mid, at=at, message_id=mid)
            members, end = None, None
            for ids, ended in finished or []:
                if mid in ids:
                    members, end = ids, ended
        elif kind == "AssistantMessage":
            text, tool = _texts(data.get("content"))
            mid = string(data.get("message_id"))
            if builder.open is None or sealed:
                continue
            if members is not None and mid not in members:
                continue  # a record of a later turn whose prompt line was lost
            if text:
                builder.answer(text, message_id=mid)
            elif mid:
                builder.open.message_ids.append(mid)
            last_had_tool = tool
            if members is not None and members <= set(builder.open.message_ids):
                builder.finish(end)
    issues.extend(read.issues)
    if skipped and skipped[-1][1] and builder.open is not None and members is None:
        sealed = True
    if sealed:
        builder.drop()
    elif finished is None and builder.open is not None and not last_had_tool:
        builder.finish()  # no sidecar yet: an answer without a pending tool call ends the turn
    elif (
        members is not None
        and builder.open is not None
        and builder.open.answer is not None
        and end is not None
    ):
        # the sidecar says the turn ended (not every id it lists is an assistant record)
        builder.finish(end)
    session.turns, session.unfinished = builder.result()
    session.started_at = session.started_at or first_prompt_at
    if not session.saw_record and sidecar is None:
        return None, issues  # neither a sidecar nor any record: not a Kiro session
    return session, issues
