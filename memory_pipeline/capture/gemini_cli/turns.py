"""Gemini CLI messages -> complete turns (the typed prompt and the final visible answer).

What a message is, learnt from google-gemini/gemini-cli @ 5411f113:

* a `user` message is a prompt, except what the harness records as one
  (`packages/core/src/core/geminiChat.ts`, `utils/sessionUtils.ts` `isIgnoredUserContent`):
  a tool response (only `functionResponse` parts: the tool round trip, part of the turn);
  the environment bootstrap (`<session_context>`, `utils/environmentContext.ts`); hook context
  (`<hook_context>...</hook_context>`, added by a SessionStart/BeforeAgent hook, ours included:
  removed from a prompt, a message of nothing else is no prompt); a `/` or `?` command; the
  next-speaker check's `Please continue.` (`core/client.ts`: the model goes on with the same
  turn); and a compression summary (`<state_snapshot>`, `context/chatCompressionService.ts`).
  When `displayContent` is set (the typed text, `content` being its expansion), it is the prompt;
  without it, files an `@path` reference pulled in (`--- Content from referenced files ---` to
  `--- End of content ---`) are cut from it.
* a `gemini` message with `toolCalls` (or `functionCall` parts) is narration before a tool
  call; one with visible text and no tool call is the answer (the model ends a turn by answering
  without calling a tool). Text parts marked `thought` and the `thoughts` list are reasoning.
* `info`, `error` and `warning` messages are the CLI's own notices: never part of a turn.

A turn is complete when a final answer follows its prompt and either a later prompt comes or the
file ends on that answer; a prompt a later prompt follows without any answer (a cancelled or
failed request) is dropped. The last turn is unfinished (it waits) while the file ends on a
prompt, a tool call or a tool response (or a last line still being written). A damaged line, and
injected context, end an answered turn before them and drop a turn still waiting for its answer
(what the line held is unknown; what answers injected context answers no prompt). After a
compression the harness records the kept history again under new ids: a turn that repeats an
earlier one exactly (prompt and answer) is that copy, not a new turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory_pipeline.capture.codex.fields import parse_time, string
from memory_pipeline.capture.gemini_cli.records import Conversation
from memory_pipeline.capture.kiro_cli.common import TurnBuilder
from memory_pipeline.capture.models import ParsedTurn

HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*", re.S)
# `@path` references expanded into the message (cli/src/ui/hooks/atCommandProcessor.ts,
# core/src/utils/constants.ts), in versions that recorded no `displayContent`
REFERENCED = re.compile(
    r"\s*--- Content from referenced files ---.*?(?:--- End of content ---|\Z)\s*", re.S
)
CONTINUE = "Please continue."
SNAPSHOT = "<state_snapshot>"
_IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")


def _parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    if content is None:
        return []
    return [content]


def visible_text(content: Any) -> str:
    """The text parts of a `PartListUnion` (a string, a Part, or a list of both), no thoughts."""
    out: list[str] = []
    for part in _parts(content):
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            if part.get("thought") is True:
                continue
            out.append(part["text"])
    return "".join(out)


def _has(content: Any, key: str) -> bool:
    return any(isinstance(p, dict) and p.get(key) is not None for p in _parts(content))


PROMPT = "prompt"  # typed
CONTINUES = "continues"  # a tool response or `Please continue.`: the same turn goes on
INJECTED = "injected"  # context the harness added: what answers it answers no prompt


def prompt_text(message: dict[str, Any]) -> tuple[str, str]:
    """(PROMPT, the typed prompt) of a `user` message, or (CONTINUES | INJECTED, "") when the
    harness wrote it."""
    content = message.get("content")
    if _has(content, "functionResponse") and not visible_text(content).strip():
        return CONTINUES, ""
    shown = visible_text(message.get("displayContent"))
    text = shown if shown.strip() else visible_text(content)
    text = REFERENCED.sub("\n", HOOK_CONTEXT.sub("", text)).strip()
    if text == CONTINUE:
        return CONTINUES, ""
    if not text or text.startswith(_IGNORED_PREFIXES) or SNAPSHOT in text:
        return INJECTED, ""
    return PROMPT, text


def answer_text(message: dict[str, Any]) -> str | None:
    """The final visible answer of a `gemini` message, or None (narration, tools, nothing)."""
    calls = message.get("toolCalls")
    if isinstance(calls, list) and calls:
        return None
    content = message.get("content")
    if _has(content, "functionCall"):
        return None
    text = visible_text(content).strip()
    return text or None


@dataclass
class Turns:
    turns: list[ParsedTurn]
    unfinished: bool
    prompts: list[str]  # every typed prompt in order (ownership evidence)
    model: str | None
    first_at: datetime | None  # the first message's timestamp
    dropped: int  # prompts without an answer, turns open across a damaged line
    replays: int  # turns recorded again after a compression


def build(conv: Conversation) -> Turns:
    builder = _Builder()
    prompts: list[str] = []
    model: str | None = None
    first_at: datetime | None = None
    answered = False  # the file so far ends on a final answer
    gaps = list(conv.gaps)
    previous_line = 0
    for mid, (_line, message) in conv.messages.items():
        at = parse_time(message.get("timestamp")) if message is not None else None
        first_at = first_at or at
        first = conv.first_line(mid)
        if first is not None:
            if any(previous_line < g < first for g in gaps):
                _across_gap(builder, answered)
                answered = False
            previous_line = first
        if message is None:  # a message that could not be read
            _across_gap(builder, answered)
            answered = False
            continue
        kind = message.get("type")
        if kind == "user":
            what, text = prompt_text(message)
            if what == INJECTED:
                _across_gap(builder, answered)  # the open turn ends before it
            elif what == PROMPT:
                builder.prompt(text, native_turn_id=mid, at=at, message_id=mid)
                prompts.append(text)
            answered = False  # the model has more to do
        elif kind == "gemini":
            model = string(message.get("model")) or model
            text = answer_text(message)
            if text is None:
                if visible_text(message.get("content")).strip() or message.get("toolCalls"):
                    answered = False
                continue
            builder.answer(text, at=at, message_id=mid)
            answered = builder.open is not None
    if gaps and any(g > previous_line for g in gaps):
        _across_gap(builder, answered)
        answered = False
    if answered and not conv.torn_tail:
        builder.finish()
    turns, unfinished = builder.result()
    kept, replays = _without_replays(turns)
    return Turns(
        turns=kept,
        unfinished=unfinished or conv.torn_tail,
        prompts=prompts,
        model=model,
        first_at=first_at,
        dropped=builder.dropped,
        replays=replays,
    )


class _Builder(TurnBuilder):
    def close(self) -> None:
        self._close()


def _across_gap(builder: _Builder, answered: bool) -> None:
    """A damaged line or injected context: an answered turn ends before it (what follows up to
    the next prompt is not known to be its own); a turn still waiting for its answer is
    dropped."""
    if answered:
        builder.close()
    else:
        builder.drop()


def _without_replays(turns: list[ParsedTurn]) -> tuple[list[ParsedTurn], int]:
    seen: set[tuple[str, str]] = set()
    kept: list[ParsedTurn] = []
    for turn in turns:
        key = (" ".join(turn.prompt.split()), " ".join(turn.outcome.split()))
        if key in seen:
            continue
        seen.add(key)
        kept.append(turn.model_copy(update={"ordinal": len(kept)}))
    return kept, len(turns) - len(kept)
