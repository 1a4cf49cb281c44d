"""One conversation of the SQLite store (Amazon Q Developer CLI / Kiro CLI agent engine v1).

The row's value is `ConversationState` serialised by serde
(aws/amazon-q-developer-cli `crates/chat-cli/src/cli/chat/conversation.rs`, `message.rs`,
`parser.rs`), fields relied on:

* `conversation_id` (uuid, the native id), `model_info.model_id` (or the older `model`);
* `history`: a list of entries, each `{"user": UserMessage, "assistant": AssistantMessage,
  "request_metadata": RequestMetadata|null}` (since "add request metadata to the conversation
  history", #2313, 2025-07-22) or, before that, a two-element array `[user, assistant]`;
* `UserMessage.content`: externally tagged `{"Prompt": {"prompt"}}` (typed or given text),
  `{"ToolUseResults": {"tool_use_results"}}` (tool output sent back: not a prompt) or
  `{"CancelledToolUses": {"prompt"|null, "tool_use_results"}}` (the user cancelled a tool and
  maybe typed a new prompt); `UserMessage.timestamp` (RFC 3339 with offset);
* `AssistantMessage`: `{"Response": {"message_id", "content"}}` (the final answer of a request)
  or `{"ToolUse": {"message_id", "content", "tool_uses"}}` (text before tool calls: narration);
* `request_metadata.message_id` (the utterance id: the turn's native id),
  `request_start_timestamp_ms`, `stream_end_timestamp_ms`;
* `next_message`: a prompt sent and not answered yet (the unfinished turn).

A turn is a Prompt and every entry until the next Prompt; its answer is the last `Response`'s
content. The history is pushed only when an answer completes (`push_assistant_message`), so the
last entry always holds an answer; a last turn ending in `ToolUse` (tools still running) or a
`next_message` waits. The prompt Kiro itself sends when a conversation is resumed
(`--resume`: "In a few words, summarize our conversation so far.", `chat/mod.rs`) is not the
user's and is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory_pipeline.capture.codex.fields import from_ms, parse_time, string
from memory_pipeline.capture.kiro_cli.common import TurnBuilder
from memory_pipeline.capture.models import ParsedTurn

RESUME_PROMPT = "In a few words, summarize our conversation so far."


@dataclass
class Conversation:
    conversation_id: str | None
    turns: list[ParsedTurn]
    unfinished: bool
    started_at: datetime | None
    model: str | None
    prompts: list[str] = field(default_factory=list)  # every prompt, for the typed evidence
    bad_entries: int = 0  # history entries of a shape Kiro never writes (skipped)
    generation: str = "history-entry"  # or "history-tuple" (before 2025-07-22)


def _entry(raw: Any) -> tuple[dict, dict, dict] | None:
    if isinstance(raw, dict):
        user, assistant, meta = raw.get("user"), raw.get("assistant"), raw.get("request_metadata")
    elif isinstance(raw, list) and len(raw) == 2:
        user, assistant, meta = raw[0], raw[1], None
    else:
        return None
    if not isinstance(user, dict) or not isinstance(assistant, dict):
        return None
    return user, assistant, meta if isinstance(meta, dict) else {}


def _prompt_of(content: Any) -> str | None:
    """The prompt a user message carries, or None (tool results)."""
    if not isinstance(content, dict):
        return None
    prompt = content.get("Prompt")
    if isinstance(prompt, dict):
        return string(prompt.get("prompt"))
    cancelled = content.get("CancelledToolUses")
    if isinstance(cancelled, dict):
        return string(cancelled.get("prompt"))
    return None


def _answer_of(assistant: dict) -> tuple[str | None, str | None, bool]:
    """(text, message_id, final): `Response` is a final answer, `ToolUse` narration."""
    for kind, final in (("Response", True), ("ToolUse", False)):
        body = assistant.get(kind)
        if isinstance(body, dict):
            return string(body.get("content")), string(body.get("message_id")), final
    return None, None, False


def read_conversation(value: Any) -> Conversation | None:
    """The turns of one row value (None when it is not a ConversationState at all)."""
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        return None
    model_info = value.get("model_info")
    model = string(model_info.get("model_id")) if isinstance(model_info, dict) else None
    model = model or string(value.get("model"))
    builder = TurnBuilder()
    conv = Conversation(
        conversation_id=string(value.get("conversation_id")),
        turns=[],
        unfinished=False,
        started_at=None,
        model=model,
    )
    skipping = False  # inside the harness's own resume turn
    for raw in value["history"]:
        parts = _entry(raw)
        if parts is None:
            conv.bad_entries += 1
            continue
        if isinstance(raw, list):
            conv.generation = "history-tuple"
        user, assistant, meta = parts
        at = parse_time(user.get("timestamp")) or from_ms(meta.get("request_start_timestamp_ms"))
        end = from_ms(meta.get("stream_end_timestamp_ms"))
        if conv.started_at is None and at is not None:
            conv.started_at = at
        prompt = _prompt_of(user.get("content"))
        if prompt is not None:
            skipping = prompt.strip() == RESUME_PROMPT
            if skipping:
                builder._close()  # the turn before it is complete: a later prompt came
        if skipping:
            continue
        text, message_id, final = _answer_of(assistant)
        if prompt is not None:
            conv.prompts.append(prompt)
            # The utterance id; before request metadata existed, the answer's message id.
            turn_id = string(meta.get("message_id")) or message_id
            builder.prompt(prompt, native_turn_id=turn_id, at=at)
        if final and text is not None:
            builder.answer(text, at=end, message_id=message_id)
            builder.finish(end)
        else:
            if message_id and builder.open is not None:
                builder.open.message_ids.append(message_id)
            if builder.open is not None:
                builder.open.done = False  # tools are running again after an answer
    next_message = value.get("next_message")
    if next_message is not None and _prompt_of(
        next_message.get("content") if isinstance(next_message, dict) else None
    ):
        builder._close()
        conv.unfinished = True
        conv.turns = builder.turns
        return conv
    turns, waiting = builder.result()
    conv.turns = turns
    conv.unfinished = waiting
    return conv
