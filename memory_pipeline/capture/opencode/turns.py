"""OpenCode messages -> complete turns (prompt + final visible answer), ownership, title.

Fields relied on (packages/opencode/src/session/message-v2.ts, index.ts):

* message: `role` ("user" | "assistant"), `time.created` (epoch ms), assistant `time.completed`,
  `parentID` (the user message it answers), `finish` ("tool-calls" while the loop goes on),
  `error` (aborted / provider error), `summary: true` (a compaction summary, never an answer),
  `modelID`/`providerID`, `mode`/`agent`, `path.cwd`/`path.root`;
* part `type`: `text` (with `synthetic` = written by OpenCode, not typed, and `ignored`), and the
  ones we never keep: `reasoning`, `tool`, `step-start`, `step-finish`, `file`, `snapshot`,
  `patch`, `agent`, `subtask`, `retry`, `compaction`;
* session: `parentID` (a child session the `task` tool made for a subagent), `title` (default
  "New session - <ISO time>" / "Child session - <ISO time>" until a title is generated),
  `permission` (rules; `opencode run` adds `question: deny`), `share.url`, `revert.messageID`
  (messages from there on were undone), `time.created`/`updated`/`archived`, `directory`,
  `version`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from memory_pipeline.capture.models import OwnershipVerdict, ParsedTurn, TaskTitle
from memory_pipeline.capture.opencode.storage import Message, RawSession
from memory_pipeline.tuning import AGENT_PLAUSIBLE_YEARS

SOURCE = "opencode"
DEFAULT_TITLE = re.compile(r"^(New session|Child session) - \d{4}-\d{2}-\d{2}T")


def from_ms(value: Any) -> datetime | None:
    """An epoch-milliseconds value as UTC, None when absent or implausible."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        when = datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    lo, hi = AGENT_PLAUSIBLE_YEARS
    return when if lo <= when.year <= hi else None


def _time(info: dict[str, Any], key: str) -> datetime | None:
    t = info.get("time")
    return from_ms(t.get(key)) if isinstance(t, dict) else None


def visible_text(message: Message) -> str:
    """The typed / answered text of a message: text parts not `synthetic` and not `ignored`."""
    texts = []
    for part in message.parts:
        if part.get("type") != "text" or part.get("synthetic") or part.get("ignored"):
            continue
        text = part.get("text")
        if isinstance(text, str) and text.strip():
            texts.append(text.strip())
    return "\n\n".join(texts)


def _completed(message: Message) -> bool:
    info = message.info
    if _time(info, "completed") is None:
        return False
    return info.get("finish") not in ("tool-calls", "unknown")


def live_messages(session: RawSession) -> list[Message]:
    """Messages in id order (OpenCode ids sort by creation), without the reverted tail."""
    messages = sorted(session.messages, key=lambda m: m.id)
    revert = session.info.get("revert")
    cut = revert.get("messageID") if isinstance(revert, dict) else None
    if isinstance(cut, str) and cut:
        messages = [m for m in messages if m.id < cut]
    return messages


def build_turns(session: RawSession) -> tuple[list[ParsedTurn], bool]:
    """Complete turns in order, and whether a last prompt is still waiting for its answer."""
    messages = live_messages(session)
    prompts: list[tuple[Message, str]] = []
    answers: dict[str, list[Message]] = {}
    last_prompt: str | None = None
    for message in messages:
        role = message.info.get("role")
        if role == "user":
            text = visible_text(message) if not message.damaged else ""
            if text:  # a synthetic-only message (compaction, subtask, "continue") is no prompt
                prompts.append((message, text))
            last_prompt = message.id if text else None
            continue
        if role != "assistant" or message.info.get("summary") is True:
            continue
        parent = message.info.get("parentID")
        key = parent if isinstance(parent, str) and parent else last_prompt
        if key is not None:
            answers.setdefault(key, []).append(message)
    turns: list[ParsedTurn] = []
    unfinished = False
    for index, (prompt, text) in enumerate(prompts):
        replies = answers.get(prompt.id, [])
        outcome, done_at, ids = _outcome(replies)
        if outcome is None:
            if index == len(prompts) - 1:
                unfinished = True  # the last prompt: its answer may still come
            continue  # an earlier prompt without an answer (aborted, failed): not a turn
        turns.append(
            ParsedTurn(
                ordinal=len(turns),
                native_turn_id=prompt.id,
                prompt=text,
                outcome=outcome,
                started_at=_time(prompt.info, "created"),
                completed_at=done_at,
                native_message_ids=[prompt.id, *ids],
            )
        )
    return turns, unfinished


def _outcome(replies: list[Message]) -> tuple[str | None, datetime | None, list[str]]:
    """The final visible answer: the last reply's text once the loop ended (its last step is
    complete and did not stop for tool calls); earlier steps' text if the last has none."""
    if not replies or not _completed(replies[-1]):
        return None, None, []
    for reply in reversed(replies):
        if reply.damaged:  # a part of it is unreadable: maybe its text, never half an answer
            return None, None, []
        text = visible_text(reply)
        if text:
            return text, _time(replies[-1].info, "completed"), [r.id for r in replies]
    return None, None, []


def ownership(session: RawSession, turns: list[ParsedTurn]) -> OwnershipVerdict:
    """Delegation evidence first: a child session, then `opencode run`'s permission rules."""
    info = session.info
    parent = info.get("parentID")
    if isinstance(parent, str) and parent:
        return OwnershipVerdict(
            ownership="delegated",
            reason="opencode:child-session",
            evidence={"parentID": parent},
        )
    rules = info.get("permission")
    if isinstance(rules, list) and any(_is_run_rule(r) for r in rules):
        return OwnershipVerdict(
            ownership="delegated",
            reason="opencode:run",
            evidence={"permission": [r for r in rules if isinstance(r, dict)][:8]},
        )
    if turns or any(
        m.info.get("role") == "user" and visible_text(m) for m in live_messages(session)
    ):
        return OwnershipVerdict(
            ownership="user_owned",
            reason="opencode:typed-prompt",
            evidence={"role": "user", "part": "text (not synthetic)"},
        )
    return OwnershipVerdict(
        ownership="unknown",
        reason="opencode:no-typed-prompt",
        evidence={"messages": len(session.messages)},
    )


def _is_run_rule(rule: Any) -> bool:
    """`opencode run` (non-interactive) denies the `question` tool: nobody is there to answer."""
    return (
        isinstance(rule, dict)
        and rule.get("permission") == "question"
        and rule.get("action") == "deny"
        and rule.get("pattern", "*") == "*"
    )


def title(session: RawSession) -> TaskTitle | None:
    """The session's title unless it is still OpenCode's placeholder."""
    text = session.info.get("title")
    if not isinstance(text, str) or not text.strip() or DEFAULT_TITLE.match(text):
        return None
    return TaskTitle(
        text=text.strip(),
        source="opencode:session.title",
        observed_at=_time(session.info, "updated"),
    )


def started_at(session: RawSession) -> datetime | None:
    start = _time(session.info, "created")
    if start is not None:
        return start
    for message in sorted(session.messages, key=lambda m: m.id):
        start = _time(message.info, "created")
        if start is not None:
            return start
    return None


def native_context(session: RawSession) -> dict[str, Any]:
    """Provenance only: directory, worktree, ids, version, share, model, generation."""
    info = session.info
    ctx: dict[str, Any] = {"storage": session.generation}
    for key, name in (
        ("directory", "cwd"),
        ("version", "version"),
        ("slug", "slug"),
        ("parentID", "parent_id"),
    ):
        value = info.get(key)
        if isinstance(value, str) and value:
            ctx[name] = value
    if session.project_id:
        ctx["project_id"] = session.project_id
    if session.worktree and session.worktree != "/":
        ctx["worktree"] = session.worktree
    share = info.get("share")
    if isinstance(share, dict) and isinstance(share.get("url"), str):
        ctx["share_url"] = share["url"]
    if _time(info, "archived") is not None:
        ctx["archived"] = True
    cwds: list[str] = []
    for message in session.messages:
        m = message.info
        if m.get("role") != "assistant":
            continue
        for key in ("modelID", "providerID", "mode", "agent"):
            value = m.get(key)
            if isinstance(value, str) and value and key not in ctx:
                ctx[key] = value
        path = m.get("path")
        cwd = path.get("cwd") if isinstance(path, dict) else None
        if isinstance(cwd, str) and cwd and cwd not in cwds:
            cwds.append(cwd)
    if "cwd" not in ctx and cwds:
        ctx["cwd"] = cwds[0]
    if len(cwds) > 1:
        ctx["cwds"] = cwds
    return ctx
