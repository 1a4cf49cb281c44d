"""Cursor bubbles (messages) -> complete turns (FORMAT.md §3, §4).

A composer's conversation is an ordered list of bubbles. `type` 1 is the user's message, 2 the
assistant's. An assistant bubble is one of: a plain answer (no `capabilityType`, or 0), a tool
call (`capabilityType` 15 TOOL_FORMER, or a `toolFormerData` object), a thinking block
(`capabilityType` 30 THINKING, or only `thinking`), a summarization (22), a background-composer
marker (21). Only plain answers are visible text; the turn's outcome is the last of them (the
final answer, not the commentary written between tool calls).

A turn is a user bubble and the bubbles up to the next user bubble. It is complete when it has an
answer and something says it ended: a next user bubble, or (the last turn) the composer is not
generating (`status` not "generating", no `generatingBubbleIds`). A turn whose record is
damaged or missing (`Bubble.bad`) is never emitted half: it is dropped and the damage recorded by
the caller; a missing bubble in the last turn is a turn still being written (it waits).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_pipeline.capture.models import ParsedTurn
from memory_pipeline.tuning import AGENT_PLAUSIBLE_YEARS

USER, ASSISTANT = 1, 2
# capabilityType values (Cursor's `$s` enum, read from workbench.desktop.main.js by
# jverre/agents-for-cursor docs/cursor-chat-rendering-system.md; FORMAT.md §4).
TOOL_FORMER = 15
BACKGROUND_COMPOSER = 21
SUMMARIZATION = 22
THINKING = 30
_LEXICAL_MAX_DEPTH = 64


@dataclass
class Bubble:
    """One bubble as read: its id, the type its header (or record) gives, and its record, or
    why the record could not be used (`bad`: a reason code)."""

    bubble_id: str
    type: int | None
    data: dict[str, Any] | None = None
    bad: str | None = None
    missing: bool = False


def kind(bubble: Bubble) -> str:
    """ "user", "answer", "tool", "thinking", "summary", "background", "other", "empty"."""
    data = bubble.data or {}
    btype = bubble.type if bubble.type in (USER, ASSISTANT) else data.get("type")
    if btype == USER:
        return "user"
    if btype != ASSISTANT:
        return "other"
    cap = data.get("capabilityType")
    if cap == TOOL_FORMER or isinstance(data.get("toolFormerData"), dict):
        return "tool"
    if cap == THINKING:
        return "thinking"
    if cap == SUMMARIZATION:
        return "summary"
    if cap == BACKGROUND_COMPOSER:
        return "background"
    if cap not in (None, 0):
        return "other"
    return "answer" if text_of(data) else "empty"


def text_of(data: dict[str, Any]) -> str:
    """A bubble's text: `text`, else the text of its `richText` (Lexical editor state)."""
    text = data.get("text")
    if isinstance(text, str) and text.strip():
        return text.strip()
    rich = data.get("richText")
    if isinstance(rich, str) and rich.strip().startswith("{"):
        try:
            rich = json.loads(rich)
        except (ValueError, RecursionError):
            return ""
    if isinstance(rich, dict):
        root = rich.get("root")
        if isinstance(root, dict):
            return _lexical(root, 0).strip()
    return ""


def _lexical(node: dict[str, Any], depth: int) -> str:
    """Text of a Lexical node: text nodes' `text`, paragraphs joined by newlines."""
    if depth > _LEXICAL_MAX_DEPTH:
        return ""
    if node.get("type") == "text" or ("text" in node and "children" not in node):
        text = node.get("text")
        return text if isinstance(text, str) else ""
    if node.get("type") == "linebreak":
        return "\n"
    children = node.get("children")
    if not isinstance(children, list):
        return ""
    parts = [_lexical(c, depth + 1) for c in children if isinstance(c, dict)]
    joiner = "\n" if node.get("type") == "root" else ""
    return joiner.join(parts)


def has_editor_state(data: dict[str, Any] | None) -> bool:
    """The user bubble carries the composer input's Lexical state (`richText`): the prompt was
    typed (or pasted) into Cursor's editor."""
    rich = (data or {}).get("richText")
    if isinstance(rich, dict):
        return isinstance(rich.get("root"), dict)
    return isinstance(rich, str) and '"root"' in rich


def parse_time(value: Any) -> datetime | None:
    """A Cursor time: epoch milliseconds (composerData) or an ISO 8601 string (bubbles); None
    when absent or implausible."""
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            seconds = value / 1000 if abs(value) > 1e11 else value
            when = datetime.fromtimestamp(seconds, UTC)
        elif isinstance(value, str) and value:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            when = when.astimezone(UTC)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    low, high = AGENT_PLAUSIBLE_YEARS
    return when if low <= when.year <= high else None


@dataclass
class Turns:
    turns: list[ParsedTurn] = field(default_factory=list)
    unfinished: bool = False
    # Turns dropped because one of their records is damaged or missing: (user bubble id, why).
    dropped: list[tuple[str, str]] = field(default_factory=list)
    first_user: Bubble | None = None
    kinds: set[str] = field(default_factory=set)


def build_turns(bubbles: list[Bubble], generating: bool) -> Turns:
    """Complete turns of an ordered bubble list (see the module text)."""
    out = Turns()
    groups: list[list[Bubble]] = []
    for bubble in bubbles:
        k = kind(bubble) if not (bubble.bad or bubble.missing) else "bad"
        if k != "bad":
            out.kinds.add(k)
        is_user = bubble.type == USER or k == "user"
        if is_user:
            groups.append([bubble])
            if out.first_user is None and bubble.data is not None:
                out.first_user = bubble
        elif groups:
            groups[-1].append(bubble)
        # bubbles before the first user bubble (a resumed summary) belong to no turn
    for at, group in enumerate(groups):
        last = at == len(groups) - 1
        user = group[0]
        damaged = [b for b in group if b.bad or b.missing]
        if damaged:
            if last and all(b.missing for b in damaged):
                out.unfinished = True  # the rest of the turn is still being written
                continue
            why = ", ".join(f"{b.bubble_id}: {b.bad or 'missing'}" for b in damaged[:3])
            out.dropped.append((user.bubble_id, why))
            continue
        prompt = text_of(user.data or {})
        answers = [b for b in group[1:] if kind(b) == "answer"]
        if last and (generating or not answers):
            out.unfinished = True
            continue
        if not prompt or not answers:
            continue  # an empty prompt, or one nobody answered before the next: no turn
        answer = answers[-1]
        out.turns.append(
            ParsedTurn(
                ordinal=len(out.turns),
                native_turn_id=user.bubble_id,
                prompt=prompt,
                outcome=text_of(answer.data or {}),
                started_at=parse_time((user.data or {}).get("createdAt")),
                completed_at=parse_time((answer.data or {}).get("createdAt")),
                native_message_ids=[user.bubble_id, answer.bubble_id],
            )
        )
    return out
