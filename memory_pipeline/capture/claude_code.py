"""Claude Code source connector: one Captured Task per session file, side threads classified.

Pure parsing: reads `<claude_home>/projects/**.jsonl` (and `history.jsonl` for ownership) and
returns `ParsedTask`s. Section references (§2.x, §3) are to `shared/notes/transcript-formats.md`.

Rules chosen where the notes leave a choice (each is repeated where it is implemented):

* Chain (§2.2 "Tree"). Records are indexed by `uuid` (first occurrence wins, so resume replays
  that rewrite the same uuids change nothing). The live leaf is the last non-sidechain user or
  assistant record in byte order; a `last-prompt`/`summary` `leafUuid` written *after* it and
  naming a record on another branch wins (the user went back to that branch; a leafUuid that is
  an ancestor of the last message is not trusted to drop turns). The chain is walked
  up through `parentUuid`, then `logicalParentUuid` across a `compact_boundary`. A parent that is
  missing from the file stops the walk at the first record of the file (a resumed file that starts
  mid-chain); anywhere else it is a `broken_chain` issue and the walk goes on with the previous
  record in byte order, so one corrupt line does not lose the turns above it.
* Turns (§2.5). A turn starts at a human prompt record; command (`<command-name>` /
  `<command-message>`), `!` shell input, task notifications, coordinator and `promptSource:"system"`
  records also start a new cycle, so they end the turn before them. Only human prompts and slash
  commands that the agent answered become turns. The outcome is the text of the assistant
  blocks after the turn's last `tool_use` (thinking, tool calls, tool results, attachments, system
  records, `isMeta` and API-error/`<synthetic>` messages excluded).
* Completion. A turn with an outcome is complete when a later cycle starts, or when an end marker
  follows the outcome (`system` `turn_duration`/`stop_hook_summary`, or `stop_reason:"end_turn"`
  on the outcome message). For the LAST turn of a file with no such marker (older builds leave
  `stop_reason` null), the turn is complete once the file has been quiet for `settle_after`
  (default 30 minutes, by mtime). A file that ends after a `tool_use`/`tool_result` has no outcome
  yet: `unfinished_turn=True`. Interrupted turns (`[Request interrupted by user…`) and turns whose
  last assistant message is an API error are skipped; they never get an ordinal, so ordinals of
  later turns do not move.
* Identity. `native_turn_id` is the prompt record's `uuid` (always present; `promptId` only
  exists in late 2.1.x). `native_message_ids` = prompt uuid + the outcome's `message.id`s.
* Resumed history (§2.2, §3). A record is inherited from another session when its `sessionId`
  differs from the file's session or its snake-case `session_id` differs from its `sessionId`
  (the ancestor marker). Inherited prompts end the turn before them but never become turns here
  (they belong to the ancestor's file). Only in-file evidence is used: reading the ancestor file
  would make this file's turns change when the ancestor is deleted by the 30-day cleanup.
* Side threads (§2.1, §2.3, §2.4) are returned as their own task, always ownership `delegated`
  with a reason code (`aside_question` included, see `_classify_side_thread`), never merged into
  the session.
  Turns are returned for Task/Agent and workflow subagents only; compaction, warmup,
  prompt-suggestion and aside threads return no turns because they replay parent context or are
  harness overhead.
"""

from __future__ import annotations

import json
import os
import re
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl
from memory_pipeline.capture.models import (
    OwnershipVerdict,
    ParsedTask,
    ParsedTurn,
    ParseResult,
    TaskTitle,
)

SOURCE = "claude_code"
DEFAULT_SETTLE_AFTER = timedelta(minutes=30)

# §2.2: only these types take part in the parentUuid tree (`progress` in older builds).
THREADED_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
# §2.2 / corpus §4.5: flat sidecars. Anything else is reported once as `unknown_record` (drift).
SIDECAR_TYPES = frozenset(
    {
        "summary",
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "ai-title",
        "custom-title",
        "last-prompt",
        "mode",
        "permission-mode",
        "agent-name",
        "agent-setting",
        "bridge-session",
        "pr-link",
        "worktree-state",
        "frame-link",
        "cost-state",
        "atis-latch",
        "tag",
    }
)

# §2.4 ownership evidence.
SDK_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})
INTERACTIVE_ENTRYPOINTS = frozenset({"cli", "claude-vscode", "claude-desktop"})
HUMAN_PROMPT_SOURCES = frozenset({"typed", "queued", "suggestion_accepted"})

# §2.5 end-of-turn markers written as `system` records.
END_SUBTYPES = frozenset({"turn_duration", "stop_hook_summary"})

# §2.5 user texts that are not prompts.
INTERRUPT_PREFIX = "[Request interrupted by user"
COMMAND_PREFIXES = ("<command-name>", "<command-message>")
BASH_INPUT_PREFIX = "<bash-input>"
NOTIFICATION_PREFIX = "<task-notification>"
NOISE_PREFIXES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
)
# Text blocks the harness (or an IDE) adds to a typed prompt record; dropped from the prompt.
HARNESS_BLOCK_PREFIXES = ("<system-reminder>", "<ide_opened_file>", "<ide_selection>")

# User record kinds. Starters open a new cycle (§2.5); only human and command cycles are turns.
_STARTER_KINDS = frozenset({"human", "command", "bash", "agent_input"})
_TURN_KINDS = frozenset({"human", "command"})

# §2.1 side-thread file ids: `a` + kind + `-` + hex for forked harness threads.
_FORK_KIND_RE = re.compile(r"^a?(compact|prompt_suggestion|side_question)[-_]")
_PLAIN_AGENT_ID_RE = re.compile(r"^a?[0-9a-f]{6,}$")
_COMMAND_NAME_RE = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_MESSAGE_RE = re.compile(r"<command-message>(.*?)</command-message>", re.S)
_COMMAND_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)

_META_MAX_BYTES = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Record loading
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Rec:
    """What the connector keeps of one threaded record (never the raw JSON: files are large)."""

    uuid: str
    parent: str | None
    logical_parent: str | None
    type: str
    line: int
    sidechain: bool
    session_id: str | None
    snake_session_id: str | None
    timestamp: datetime | None
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None
    entrypoint: str | None = None
    # user
    kind: str = ""
    text: str = ""
    prompt_source: str | None = None
    origin_kind: str | None = None
    turn_origin: str | None = None
    # assistant: ("text", text) / ("tool_use", id) blocks in record order
    msg_id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    blocks: tuple[tuple[str, str], ...] = ()
    api_error: bool = False
    # system
    subtype: str | None = None
    # attachment: a prompt the user queued while the agent worked (§2.5 steering)
    steering: str | None = None

    @property
    def inherited_marker(self) -> bool:
        return self.snake_session_id is not None and self.snake_session_id != self.session_id


@dataclass
class _Sidecar:
    line: int
    text: str | None = None
    leaf: str | None = None
    session_id: str | None = None
    observed_at: datetime | None = None


@dataclass
class _Loaded:
    """One streamed pass over a transcript file."""

    records: dict[str, _Rec] = field(default_factory=dict)
    order: list[_Rec] = field(default_factory=list)  # first occurrences, byte order
    # uuid and line of the last user/assistant line, per isSidechain value (main: False)
    last_message: dict[bool, tuple[str, int]] = field(default_factory=dict)
    leaf_hints: list[_Sidecar] = field(default_factory=list)
    custom_titles: list[_Sidecar] = field(default_factory=list)
    ai_titles: list[_Sidecar] = field(default_factory=list)
    summaries: list[_Sidecar] = field(default_factory=list)
    unknown_types: dict[str, tuple[int, int]] = field(default_factory=dict)  # type -> (line, n)
    children: dict[str, list[_Rec]] | None = None

    def children_of(self, uuid: str) -> list[_Rec]:
        if self.children is None:
            self.children = {}
            for rec in self.order:
                if rec.parent is not None:
                    self.children.setdefault(rec.parent, []).append(rec)
        return self.children.get(uuid, [])


def _load(path: Path, read: JsonlRead) -> _Loaded:
    loaded = _Loaded()
    for line_no, obj in iter_jsonl(path, read):
        rtype = obj.get("type")
        if not isinstance(rtype, str):
            _note_unknown(loaded, "<no type>", line_no)
            continue
        uuid = obj.get("uuid")
        if _is_threaded(obj):
            if rtype not in THREADED_TYPES:
                _note_unknown(loaded, rtype, line_no)
            if not isinstance(uuid, str) or not uuid:
                read.issue("missing_uuid", f"{rtype} record without a uuid", line_no)
                continue
            _add_record(loaded, obj, rtype, uuid, line_no)
        elif rtype in SIDECAR_TYPES:
            _add_sidecar(loaded, obj, rtype, line_no)
        else:
            _note_unknown(loaded, rtype, line_no)
    for rtype, (line_no, count) in loaded.unknown_types.items():
        read.issue("unknown_record", f"type {rtype!r} ignored ({count} lines)", line_no)
    return loaded


def _is_threaded(obj: dict[str, Any]) -> bool:
    """§2.2 tree records; an unknown type that carries uuid+parentUuid is kept in the tree."""
    return obj.get("type") in THREADED_TYPES or (
        isinstance(obj.get("uuid"), str) and "parentUuid" in obj
    )


def _note_unknown(loaded: _Loaded, rtype: str, line_no: int) -> None:
    first, count = loaded.unknown_types.get(rtype, (line_no, 0))
    loaded.unknown_types[rtype] = (first, count + 1)


def _add_record(loaded: _Loaded, obj: dict[str, Any], rtype: str, uuid: str, line: int) -> None:
    existing = loaded.records.get(uuid)
    rec = existing or _make_record(obj, rtype, uuid, line)
    if existing is None:
        parent = loaded.records.get(rec.parent or "")
        if parent is not None:
            rec.parent = parent.uuid  # share the string: big files hold many records
        loaded.records[uuid] = rec
        loaded.order.append(rec)
    if rec.type in ("user", "assistant"):
        loaded.last_message[rec.sidechain] = (uuid, line)


def _make_record(obj: dict[str, Any], rtype: str, uuid: str, line: int) -> _Rec:
    rec = _Rec(
        uuid=uuid,
        parent=_str(obj.get("parentUuid")),
        logical_parent=_str(obj.get("logicalParentUuid")),
        type=rtype,
        line=line,
        sidechain=obj.get("isSidechain") is True,
        session_id=_short(obj.get("sessionId")),
        snake_session_id=_short(obj.get("session_id")),
        timestamp=parse_timestamp(obj.get("timestamp")),
        cwd=_short(obj.get("cwd")),
        git_branch=_short(obj.get("gitBranch")),
        version=_short(obj.get("version")),
        entrypoint=_short(obj.get("entrypoint")),
    )
    message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
    if rtype == "user":
        _fill_user(rec, obj, message)
    elif rtype == "assistant":
        _fill_assistant(rec, obj, message)
    elif rtype == "system":
        rec.subtype = _short(obj.get("subtype"))
    elif rtype == "attachment":
        rec.steering = _queued_prompt(obj.get("attachment"))
    return rec


def _fill_user(rec: _Rec, obj: dict[str, Any], message: dict[str, Any]) -> None:
    rec.prompt_source = _short(obj.get("promptSource"))
    origin = obj.get("origin")
    rec.origin_kind = _short(origin.get("kind")) if isinstance(origin, dict) else None
    rec.turn_origin = _short(obj.get("turnOrigin"))
    text, has_image, has_tool_result = _user_content(message.get("content"))
    rec.kind = _user_kind(obj, rec, text, has_image, has_tool_result)
    if rec.kind == "human":
        rec.text = text or "[image]"
    elif rec.kind == "command":
        rec.text = _render_command(text)


def _user_content(content: Any) -> tuple[str, bool, bool]:
    """(prompt text, has image, has tool_result) of a user `message.content` (§2.2)."""
    if isinstance(content, str):
        return content.strip(), False, False
    if not isinstance(content, list):
        return "", False, False
    texts: list[str] = []
    has_image = has_tool_result = False
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "tool_result":
            has_tool_result = True
        elif btype == "image":
            has_image = True
        elif btype == "text" and isinstance(block.get("text"), str):
            text = block["text"].strip()
            if text and not text.startswith(HARNESS_BLOCK_PREFIXES):
                texts.append(text)
    return "\n\n".join(texts), has_image, has_tool_result


def _user_kind(
    obj: dict[str, Any], rec: _Rec, text: str, has_image: bool, has_tool_result: bool
) -> str:
    """§2.5 human-prompt detection; every non-prompt user record gets a body kind."""
    if has_tool_result:
        return "tool_result"
    if obj.get("isMeta") is True or obj.get("isVisibleInTranscriptOnly") is True:
        return "meta"
    if obj.get("isCompactSummary") is True:
        return "compact_summary"
    if text.startswith(INTERRUPT_PREFIX):
        return "interrupt"
    if rec.origin_kind in ("task-notification", "coordinator") or text.startswith(
        NOTIFICATION_PREFIX
    ):
        return "agent_input"
    if text.startswith(COMMAND_PREFIXES):
        return "command"
    if text.startswith(BASH_INPUT_PREFIX):
        return "bash"
    if text.startswith(NOISE_PREFIXES):
        return "noise"
    # corpus §4.2: promptSource "system" marks prompts the harness sent (mostly notifications).
    if rec.prompt_source == "system":
        return "agent_input"
    if not text and not has_image:
        return "empty"
    return "human"


def _render_command(text: str) -> str:
    """`<command-name>/x</command-name><command-args>a</command-args>` -> `/x a`."""
    name_match = _COMMAND_NAME_RE.search(text)
    if name_match:
        name = name_match.group(1).strip()
    else:
        message_match = _COMMAND_MESSAGE_RE.search(text)
        name = "/" + message_match.group(1).strip() if message_match else text
    args_match = _COMMAND_ARGS_RE.search(text)
    args = args_match.group(1).strip() if args_match else ""
    return f"{name} {args}".strip()


def _fill_assistant(rec: _Rec, obj: dict[str, Any], message: dict[str, Any]) -> None:
    rec.msg_id = _str(message.get("id"))
    rec.model = _short(message.get("model"))
    rec.stop_reason = _short(message.get("stop_reason"))
    # §2.2: `isApiErrorMessage` / model "<synthetic>" = harness-made message, not an answer.
    rec.api_error = obj.get("isApiErrorMessage") is True or rec.model == "<synthetic>"
    blocks: list[tuple[str, str]] = []
    content = message.get("content")
    if isinstance(content, str):  # not seen in real files; tolerated
        content = [{"type": "text", "text": content}]
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            blocks.append(("text", block["text"]))
        elif block.get("type") in ("tool_use", "server_tool_use"):
            blocks.append(("tool_use", str(block.get("id") or "")))
    rec.blocks = tuple(blocks)


def _queued_prompt(attachment: Any) -> str | None:
    """A `queued_command` attachment typed by the user mid-turn (§2.5), as plain text."""
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return None
    if attachment.get("commandMode") not in (None, "prompt"):
        return None
    text, _, _ = _user_content(attachment.get("prompt"))
    if not text or text.startswith((*NOISE_PREFIXES, NOTIFICATION_PREFIX, *COMMAND_PREFIXES)):
        return None
    return text


def _add_sidecar(loaded: _Loaded, obj: dict[str, Any], rtype: str, line: int) -> None:
    car = _Sidecar(
        line=line,
        session_id=_str(obj.get("sessionId")),
        observed_at=parse_timestamp(obj.get("timestamp")),
    )
    if rtype == "custom-title":
        car.text = _text_field(obj.get("customTitle"))
        if car.text:
            loaded.custom_titles.append(car)
    elif rtype == "ai-title":
        car.text = _text_field(obj.get("aiTitle"))
        if car.text:
            loaded.ai_titles.append(car)
    elif rtype == "summary":
        car.text = _text_field(obj.get("summary"))
        car.leaf = _str(obj.get("leafUuid"))
        if car.text:
            loaded.summaries.append(car)
        if car.leaf:
            loaded.leaf_hints.append(car)
    elif rtype == "last-prompt":
        car.leaf = _str(obj.get("leafUuid"))
        if car.leaf:
            loaded.leaf_hints.append(car)


def parse_timestamp(value: Any) -> datetime | None:
    """ISO-8601 (`…Z`) -> tz-aware UTC datetime; None when absent or unparseable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _short(value: Any) -> str | None:
    """Repeated envelope strings (cwd, version...) are interned to keep big files small."""
    return sys.intern(value) if isinstance(value, str) and value else None


def _text_field(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


# ---------------------------------------------------------------------------------------------
# Chain resolution (§2.2 "Tree")
# ---------------------------------------------------------------------------------------------


def _live_chain(loaded: _Loaded, read: JsonlRead, main_thread: bool) -> list[_Rec]:
    """Records of the leaf-most chain, root first. Sidechain records are dropped in main files."""
    sidechain = not main_thread
    if not main_thread and True not in loaded.last_message:
        sidechain = False  # a side-thread file whose records lack isSidechain: use them anyway
    if sidechain not in loaded.last_message:
        return []
    leaf, leaf_line = loaded.last_message[sidechain]
    chain = _walk(loaded, leaf, read)
    hint = _rewind_hint(loaded, leaf_line, sidechain, {rec.uuid for rec in chain})
    if hint is not None:
        chain = _walk(loaded, hint, read)
    # §2.3: keep the per-record isSidechain check even though main files have none.
    return [rec for rec in chain if rec.sidechain == sidechain]


def _rewind_hint(
    loaded: _Loaded, leaf_line: int, sidechain: bool, on_chain: set[str]
) -> str | None:
    """The newest leafUuid, if written after the last message and naming another branch.

    A leafUuid naming an ancestor of the last message is ignored: it may be stale bookkeeping,
    and dropping turns that were already complete on such evidence is worse than waiting.
    """
    if not loaded.leaf_hints or loaded.leaf_hints[-1].line <= leaf_line:
        return None
    rec = loaded.records.get(loaded.leaf_hints[-1].leaf or "")
    if rec is not None and rec.sidechain == sidechain and rec.uuid not in on_chain:
        return rec.uuid
    return None


def _walk(loaded: _Loaded, leaf: str, read: JsonlRead) -> list[_Rec]:
    chain: list[_Rec] = []
    seen: set[str] = set()
    lines = [rec.line for rec in loaded.order]
    cur = loaded.records.get(leaf)
    while cur is not None:
        if cur.uuid in seen:
            read.issue("broken_chain", f"parentUuid cycle at {cur.uuid}", cur.line)
            break
        seen.add(cur.uuid)
        chain.append(cur)
        # compact_boundary: parentUuid is null and logicalParentUuid links to the old chain.
        link = cur.parent or cur.logical_parent
        if link is None:
            break
        nxt = loaded.records.get(link)
        if nxt is None and cur.logical_parent and cur.logical_parent != link:
            nxt = loaded.records.get(cur.logical_parent)
        if nxt is None:
            nxt = _previous_record(loaded, lines, cur, seen)
            if nxt is None:
                break  # the file starts mid-chain (resumed session or forked side thread)
            read.issue(
                "broken_chain",
                f"parent {link} is missing; continued at line {nxt.line}",
                cur.line,
            )
        cur = nxt
    chain.reverse()
    return chain


def _previous_record(loaded: _Loaded, lines: list[int], rec: _Rec, seen: set[str]) -> _Rec | None:
    index = bisect_left(lines, rec.line) - 1
    while index >= 0:
        candidate = loaded.order[index]
        if candidate.uuid not in seen and candidate.sidechain == rec.sidechain:
            return candidate
        index -= 1
    return None


# ---------------------------------------------------------------------------------------------
# Turn building (§2.5)
# ---------------------------------------------------------------------------------------------


@dataclass
class _Cycle:
    """One user-initiated cycle of the chain: a starter record and what followed it."""

    starter: _Rec
    kind: str  # "human", "command", "bash", "agent_input", "inherited"
    records: list[_Rec] = field(default_factory=list)
    interrupted: bool = False


@dataclass
class _TurnBuild:
    turns: list[ParsedTurn]
    unfinished: bool
    first_prompt: _Rec | None  # first own human prompt record (ownership evidence)
    prompts: list[_Rec]  # every own human prompt record


def _cycles(chain: list[_Rec], own_session: str | None) -> list[_Cycle]:
    cycles: list[_Cycle] = []
    current: _Cycle | None = None
    for rec in chain:
        if rec.type == "user" and rec.kind in _STARTER_KINDS:
            kind = "inherited" if _is_inherited(rec, own_session) else rec.kind
            current = _Cycle(starter=rec, kind=kind)
            cycles.append(current)
            continue
        if current is None:
            continue  # preamble before the first prompt (or the ancestor's tail)
        if rec.type == "user" and rec.kind == "interrupt":
            current.interrupted = True
        current.records.append(rec)
    return cycles


def _is_inherited(rec: _Rec, own_session: str | None) -> bool:
    """Copied from an ancestor session by --resume/--continue (§2.2, §3)."""
    if own_session is None:
        return False
    if rec.session_id is not None and rec.session_id != own_session:
        return True
    return rec.inherited_marker


@dataclass
class _Outcome:
    text: str
    records: list[_Rec]  # assistant records the outcome text came from
    last_index: int  # index in cycle.records of the last outcome record (-1: none)
    failed: bool  # the last assistant message is an API error / synthetic


def _outcome(cycle: _Cycle) -> _Outcome:
    """Text blocks after the cycle's last tool_use (§2.5 visible outcome)."""
    texts: list[str] = []
    recs: list[_Rec] = []
    seen_blocks: set[tuple[str | None, str]] = set()
    last_index = -1
    last_assistant: _Rec | None = None
    for index, rec in enumerate(cycle.records):
        if rec.type != "assistant":
            continue
        last_assistant = rec
        for kind, value in rec.blocks:
            if kind == "tool_use":
                texts, recs, last_index = [], [], -1
                seen_blocks.clear()
            elif not rec.api_error and value.strip():
                key = (rec.msg_id, value)  # the same streamed block written twice
                if key in seen_blocks:
                    continue
                seen_blocks.add(key)
                texts.append(value.strip())
                if not recs or recs[-1] is not rec:
                    recs.append(rec)
                last_index = index
    failed = last_assistant is not None and last_assistant.api_error
    return _Outcome("\n\n".join(texts), recs, last_index, failed)


def _has_end_marker(cycle: _Cycle, outcome: _Outcome, loaded: _Loaded) -> bool:
    """turn_duration / stop_hook_summary after the outcome, or end_turn on its message (§2.5)."""
    final_ids = {rec.msg_id for rec in outcome.records[-1:]}
    if any(
        rec.stop_reason == "end_turn" and rec.msg_id in final_ids
        for rec in cycle.records
        if rec.type == "assistant"
    ):
        return True
    tail = cycle.records[outcome.last_index :]
    if any(rec.type == "system" and rec.subtype in END_SUBTYPES for rec in tail):
        return True
    # Markers are often children of the last records without being on the chain.
    stack = [rec.uuid for rec in tail]
    seen: set[str] = set()
    while stack:
        uuid = stack.pop()
        if uuid in seen:
            continue
        seen.add(uuid)
        for child in loaded.children_of(uuid):
            if child.type == "system" and child.subtype in END_SUBTYPES:
                return True
            if child.type in ("system", "attachment", "progress"):
                stack.append(child.uuid)
    return False


def _build_turns(
    chain: list[_Rec], loaded: _Loaded, own_session: str | None, settled: bool
) -> _TurnBuild:
    cycles = _cycles(chain, own_session)
    turns: list[ParsedTurn] = []
    unfinished = False
    for index, cycle in enumerate(cycles):
        if cycle.kind not in _TURN_KINDS:
            continue
        is_last = index == len(cycles) - 1
        outcome = _outcome(cycle)
        if cycle.interrupted or outcome.failed:
            continue  # skipped for good: never an ordinal (§2.5 interrupted / API error)
        if outcome.text and (not is_last or settled or _has_end_marker(cycle, outcome, loaded)):
            turns.append(_make_turn(len(turns), cycle, outcome))
        elif is_last and (
            cycle.kind == "human" or any(rec.type == "assistant" for rec in cycle.records)
        ):
            unfinished = True
    prompts = [c.starter for c in cycles if c.kind == "human"]
    return _TurnBuild(turns, unfinished, prompts[0] if prompts else None, prompts)


def _make_turn(ordinal: int, cycle: _Cycle, outcome: _Outcome) -> ParsedTurn:
    prompt = cycle.starter.text
    steering = [
        rec.steering
        for rec in cycle.records[: outcome.last_index + 1]
        if rec.type == "attachment" and rec.steering
    ]
    if steering:
        prompt = "\n\n".join([prompt, *steering])
    message_ids: list[str] = [cycle.starter.uuid]
    for rec in outcome.records:
        msg_id = rec.msg_id or rec.uuid
        if msg_id not in message_ids:
            message_ids.append(msg_id)
    return ParsedTurn(
        ordinal=ordinal,
        native_turn_id=cycle.starter.uuid,
        prompt=prompt,
        outcome=outcome.text,
        started_at=cycle.starter.timestamp,
        completed_at=outcome.records[-1].timestamp,
        native_message_ids=message_ids,
    )


# ---------------------------------------------------------------------------------------------
# Ownership (§2.4) and titles
# ---------------------------------------------------------------------------------------------


@dataclass
class _History:
    """`<claude_home>/history.jsonl`: prompts typed interactively (§2.1, §2.4)."""

    session_ids: set[str] = field(default_factory=set)
    prompts: set[tuple[str, str]] = field(default_factory=set)  # (project, display), no sessionId


def _session_ownership(
    own: list[_Rec], build: _TurnBuild, history: _History, session_id: str | None
) -> OwnershipVerdict:
    """§2.4 proposed rule. Delegation evidence wins over conflicting user markers."""
    entrypoints = sorted({rec.entrypoint for rec in own if rec.entrypoint})
    evidence: dict[str, Any] = {}
    if entrypoints:
        evidence["entrypoint"] = entrypoints[0] if len(entrypoints) == 1 else entrypoints
    sdk_entry = [e for e in entrypoints if e in SDK_ENTRYPOINTS]
    if sdk_entry:
        return OwnershipVerdict(
            ownership="delegated", reason="claude_code:sdk-entrypoint", evidence=evidence
        )
    for prompt in build.prompts:
        if prompt.prompt_source == "sdk" or prompt.turn_origin == "sdk":
            evidence.update(_prompt_evidence(prompt))
            return OwnershipVerdict(
                ownership="delegated", reason="claude_code:sdk-prompt", evidence=evidence
            )
    first = build.first_prompt
    if first is not None:
        evidence.update(_prompt_evidence(first))
    interactive = bool(entrypoints) and all(e in INTERACTIVE_ENTRYPOINTS for e in entrypoints)
    if (
        interactive
        and first is not None
        and (first.prompt_source in HUMAN_PROMPT_SOURCES or first.origin_kind == "human")
    ):
        return OwnershipVerdict(
            ownership="user_owned", reason="claude_code:typed-prompt", evidence=evidence
        )
    if interactive or not entrypoints:
        match = _history_match(history, session_id, first)
        if match is not None:
            evidence["history_match"] = match
            return OwnershipVerdict(
                ownership="user_owned", reason="claude_code:history-match", evidence=evidence
            )
    if not entrypoints:
        reason = "claude_code:no-entrypoint"
    elif interactive:
        reason = "claude_code:unconfirmed-prompt"
    else:
        reason = "claude_code:unrecognized-entrypoint"
    return OwnershipVerdict(ownership="unknown", reason=reason, evidence=evidence)


def _prompt_evidence(prompt: _Rec) -> dict[str, Any]:
    fields = {
        "promptSource": prompt.prompt_source,
        "origin.kind": prompt.origin_kind,
        "turnOrigin": prompt.turn_origin,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _history_match(history: _History, session_id: str | None, first: _Rec | None) -> str | None:
    if session_id is not None and session_id in history.session_ids:
        return "sessionId"
    if first is not None and first.cwd and (first.cwd, first.text) in history.prompts:
        return "project+display"
    return None


def _session_title(loaded: _Loaded, session_id: str | None) -> TaskTitle | None:
    """custom-title (user-set) wins, then the latest ai-title, then `summary` (older builds)."""

    def mine(cars: list[_Sidecar]) -> list[_Sidecar]:
        return [c for c in cars if c.session_id in (None, session_id)]

    for cars, source in (
        (mine(loaded.custom_titles), "claude_code:custom-title"),
        (mine(loaded.ai_titles), "claude_code:ai-title"),
        ([c for c in loaded.summaries if c.leaf in loaded.records], "claude_code:summary"),
    ):
        if cars:
            car = cars[-1]
            return TaskTitle(text=car.text or "", source=source, observed_at=car.observed_at)
    return None


# ---------------------------------------------------------------------------------------------
# Side threads (§2.1, §2.3, §2.4)
# ---------------------------------------------------------------------------------------------


@dataclass
class _SideThread:
    agent_id: str
    layout: str  # "flat" (≤ 2.0.x, beside the main file) or "subagents"
    project_key: str | None
    session_dir: str | None  # new layout: the <sessionId> directory name
    workflow_run: str | None
    meta: dict[str, Any]


def is_side_thread(path: Path) -> bool:
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def _side_thread(path: Path, read: JsonlRead) -> _SideThread:
    agent_id = path.stem[len("agent-") :]
    parts = path.parts
    if "subagents" in parts:
        at = len(parts) - 1 - parts[::-1].index("subagents")
        session_dir = parts[at - 1] if at >= 1 else None
        project_key = parts[at - 2] if at >= 2 else None
        run = next((p for p in parts[at + 1 : -1] if p.startswith("wf_")), None)
        layout = "subagents"
    else:
        session_dir, project_key, run, layout = None, path.parent.name, None, "flat"
    return _SideThread(agent_id, layout, project_key, session_dir, run, _read_meta(path, read))


def _read_meta(path: Path, read: JsonlRead) -> dict[str, Any]:
    """`agent-<id>.meta.json` beside the transcript (§2.1); {} when absent or unreadable."""
    meta_path = path.with_name(path.stem + ".meta.json")
    try:
        if meta_path.stat().st_size > _META_MAX_BYTES:
            read.issue("line_too_long", f"{meta_path.name} is larger than {_META_MAX_BYTES}")
            return {}
        data = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        read.issue("unreadable", f"{meta_path.name}: {type(exc).__name__}")
        return {}
    except json.JSONDecodeError as exc:
        read.issue("invalid_json", f"{meta_path.name}: {exc.msg}")
        return {}
    return data if isinstance(data, dict) else {}


_META_EVIDENCE = ("agentType", "description", "toolUseId", "spawnDepth", "parentAgentId")
# Forked harness threads: they replay the parent's context (§2.1).
_FORK_REASONS = {
    "compact": "claude_code:compaction",
    "prompt_suggestion": "claude_code:prompt-suggestion",
    "side_question": "claude_code:aside-question",
}


def _classify_side_thread(
    side: _SideThread, first_prompt: str | None, sidechain: bool
) -> OwnershipVerdict:
    """Reason code for a side thread (§2.4 table, first row).

    `aside_question` (/btw): the question is the user's, but the file is a harness fork that
    replays the parent session's context, and the answer is an ephemeral overlay that never joins
    the conversation. The session file is the user's capture unit, so the fork is classified
    `delegated` with reason `claude_code:aside-question` and yields no turns: the store keeps only
    user-owned tasks, and a `user_owned` fork would become a second, empty task of the session.
    """
    meta = side.meta
    evidence: dict[str, Any] = {"agentId": side.agent_id, "isSidechain": sidechain}
    evidence.update({k: meta[k] for k in _META_EVIDENCE if k in meta})
    fork = _FORK_KIND_RE.match(side.agent_id)
    if fork is not None:
        return _delegated(_FORK_REASONS[fork.group(1)], evidence)
    if side.workflow_run is not None or meta.get("agentType") == "workflow-subagent":
        if side.workflow_run is not None:
            evidence["workflow_run"] = side.workflow_run
        return _delegated("claude_code:workflow-subagent", evidence)
    if "toolUseId" not in meta and first_prompt == "Warmup":
        evidence["first_prompt"] = "Warmup"
        return _delegated("claude_code:warmup", evidence)
    if "toolUseId" in meta or "agentType" in meta or _PLAIN_AGENT_ID_RE.match(side.agent_id):
        return _delegated("claude_code:subagent", evidence)
    return _delegated("claude_code:sidechain", evidence)


def _delegated(reason: str, evidence: dict[str, Any]) -> OwnershipVerdict:
    return OwnershipVerdict(ownership="delegated", reason=reason, evidence=evidence)


# Side threads whose turns are delegated work worth returning (the store does not keep them).
_SIDE_REASONS_WITH_TURNS = frozenset({"claude_code:subagent", "claude_code:workflow-subagent"})


# ---------------------------------------------------------------------------------------------
# The connector
# ---------------------------------------------------------------------------------------------


class ClaudeCodeConnector:
    """Claude Code transcripts under `<claude_home>/projects/` (§2.1)."""

    source = "claude_code"

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
        self.settle_after = settle_after
        self._now = now or (lambda: datetime.now(UTC))
        self._history: _History | None = None
        self._history_key: tuple[int, int] | None = None

    # -- discovery -----------------------------------------------------------------------------

    def discover(self) -> list[Path]:
        """Main session files and side-thread files (old flat and `subagents/` layouts), sorted."""
        projects = self.claude_home / "projects"
        if not projects.is_dir():
            return []
        found: set[Path] = set()
        try:
            for project in projects.iterdir():
                if not project.is_dir():
                    continue
                found.update(p for p in project.glob("*.jsonl") if p.is_file())
                found.update(p for p in project.glob("*/subagents/**/agent-*.jsonl") if p.is_file())
        except OSError:
            pass
        return sorted(found)

    # -- days ----------------------------------------------------------------------------------

    def task_days(self, path: Path) -> set[date]:
        """UTC day of the first timestamped threaded record; reads no further than that."""
        read = JsonlRead(path)
        for _, obj in iter_jsonl(path, read):
            if _is_threaded(obj) and isinstance(obj.get("uuid"), str):
                stamp = parse_timestamp(obj.get("timestamp"))
                if stamp is not None:
                    return {stamp.date()}
        return set()

    # -- parsing -------------------------------------------------------------------------------

    def parse(self, path: Path) -> ParseResult:
        read = JsonlRead(path)
        task: ParsedTask | None = None
        try:
            settled = self._is_settled(path)
            loaded = _load(path, read)
            if is_side_thread(path):
                task = self._parse_side_thread(path, loaded, read, settled)
            else:
                task = self._parse_session(path, loaded, read, settled)
        except Exception as exc:  # last resort: bad input must never stop the run
            read.issue("parser_error", f"{type(exc).__name__}: {exc}")
            task = None
        return ParseResult(tasks=[task] if task else [], issues=read.issues)

    def _parse_session(
        self, path: Path, loaded: _Loaded, read: JsonlRead, settled: bool
    ) -> ParsedTask | None:
        started_at = self._started_at(loaded, read)
        if started_at is None:
            return None
        session_id = _file_session_id(path, loaded)
        chain = _live_chain(loaded, read, main_thread=True)
        build = _build_turns(chain, loaded, session_id, settled)
        own = [
            rec for rec in loaded.order if not rec.sidechain and not _is_inherited(rec, session_id)
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
            source="claude_code",
            native_id=session_id,
            started_at=started_at,
            title=_session_title(loaded, session_id),
            ownership=_session_ownership(own, build, self._load_history(), session_id),
            native_context=context,
            turns=build.turns,
            unfinished_turn=build.unfinished,
            source_path=str(path),
        )

    def _parse_side_thread(
        self, path: Path, loaded: _Loaded, read: JsonlRead, settled: bool
    ) -> ParsedTask | None:
        started_at = self._started_at(loaded, read)
        if started_at is None:
            return None
        side = _side_thread(path, read)
        parent = next((r.session_id for r in loaded.order if r.session_id), side.session_dir)
        if parent is None:
            read.issue("not_a_transcript", "side thread without a sessionId")
            return None
        chain = _live_chain(loaded, read, main_thread=False)
        first = next((r for r in chain if r.type == "user" and r.kind == "human"), None)
        sidechain = any(rec.sidechain for rec in loaded.order)
        verdict = _classify_side_thread(side, first.text if first else None, sidechain)
        build = _TurnBuild([], False, None, [])
        if verdict.reason in _SIDE_REASONS_WITH_TURNS:
            build = _build_turns(chain, loaded, None, settled)
        context = _context(loaded.order, project_key=side.project_key)
        context.update(parent_session_id=parent, agent_id=side.agent_id, layout=side.layout)
        if side.workflow_run:
            context["workflow_run"] = side.workflow_run
        description = _text_field(side.meta.get("description"))
        title = (
            TaskTitle(text=description, source="claude_code:agent-description")
            if description
            else None
        )
        return ParsedTask(
            source="claude_code",
            native_id=f"{parent}/{path.stem}",
            started_at=started_at,
            title=title,
            ownership=verdict,
            native_context=context,
            turns=build.turns,
            unfinished_turn=build.unfinished,
            source_path=str(path),
        )

    @staticmethod
    def _started_at(loaded: _Loaded, read: JsonlRead) -> datetime | None:
        """Timestamp of the first threaded record (the same rule as `task_days`)."""
        first = next((rec.timestamp for rec in loaded.order if rec.timestamp), None)
        if first is None and read.lines_read > 0:
            read.issue("no_threaded_records", "no timestamped user/assistant/system record yet")
        return first

    def _is_settled(self, path: Path) -> bool:
        if self.settle_after is None:
            return False
        try:
            mtime = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)
        except OSError:
            return False
        return self._now() - mtime >= self.settle_after

    # -- history.jsonl ---------------------------------------------------------------------------

    def _load_history(self) -> _History:
        """Read `history.jsonl` once per change (size, mtime); its problems are not the file's."""
        path = self.claude_home / "history.jsonl"
        try:
            st = path.stat()
        except OSError:
            return _History()
        key = (st.st_size, st.st_mtime_ns)
        if self._history is not None and self._history_key == key:
            return self._history
        history = _History()
        for _, obj in iter_jsonl(path, JsonlRead(path)):
            session = _str(obj.get("sessionId"))
            display = obj.get("display")
            if session is not None:
                history.session_ids.add(session)
            elif isinstance(display, str) and isinstance(obj.get("project"), str):
                history.prompts.add((obj["project"], display.strip()))
        self._history, self._history_key = history, key
        return history


def _file_session_id(path: Path, loaded: _Loaded) -> str:
    """The file name is the sessionId (corpus §10: 0 mismatches); else the newest record's."""
    stem = path.stem
    sessions = [rec.session_id for rec in loaded.order if rec.session_id]
    if not sessions or stem in sessions:
        return stem
    return sessions[-1]


def _context(records: Iterable[_Rec], project_key: str | None) -> dict[str, Any]:
    """Provenance only (never account identifiers): first cwd, latest branch/version/model."""
    context: dict[str, Any] = {}
    if project_key:
        context["project_key"] = project_key
    for rec in records:
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
    return context
