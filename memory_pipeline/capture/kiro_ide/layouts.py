"""The two chat layouts Kiro IDE writes under its globalStorage `kiro.kiroagent` directory.

Kiro IDE is closed source; the fields below are the ones its public readers rely on (listed with
what each contributed in `kiro_ide/README.md`):

**New layout, `workspace-sessions/<base64url(workspace path)>/`** (Kiro 0.2+):
* `sessions.json`: `[{"sessionId", "title", "dateCreated" (unix ms, a number or a numeric
  string), "workspaceDirectory"}]`, rewritten when a session is added or renamed;
* `<sessionId>.json`: `{"sessionId", "title", "sessionType", "selectedModel", "history": [
  {"message": {"role": "user"|"assistant", "content": "<text>" | [{"type": "text", "text"}],
  "id"}, "promptLogs": {"completion"}, "executionId"}]}`, rewritten in place after every message.

**Old layout, `<32-hex workspace hash>/`**: one `<id>.chat` file per agent execution, each a
snapshot of the whole conversation so far: `{"executionId", "actionId", "chat": [{"role":
"human"|"bot"|"tool", "content": "<text>"}], "metadata": {"modelId", "workflow",
"workflowId", "startTime", "endTime"}, "context", "validations"}`. A workflow (the chat
session) has several snapshots; the one with the most messages holds the conversation. Bot
messages are often only the placeholder "On it."; the full answer of an execution is in its
execution log, a file without extension in a subdirectory of the same hash directory:
`{"executionId", "messagesFromExecutionId": [{"role": "bot", "entries": [{"type": "text",
"text"}, {"type": "toolUse", ...}]}]}`.

User messages carry Kiro's injected context around what the person typed (steering rules,
`<EnvironmentContext>`, an `<identity>` system prompt sent as a user message); `user_text`
strips it the way the readers do.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from memory_pipeline.capture.codex.fields import string

PLACEHOLDERS = frozenset({"On it."})


def decode_workspace(name: str) -> str | None:
    """The workspace path a `workspace-sessions/<name>` directory is named after."""
    try:
        raw = base64.urlsafe_b64decode(name + "=" * (-len(name) % 4))
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    return text if text.startswith(("/", "~")) or (len(text) > 2 and text[1] == ":") else None


def content_text(content: Any) -> str:
    """The text of a message content: a string, or the `text` blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def is_system_message(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith("<identity>") or (
        stripped.startswith("Follow these instructions") and len(stripped) > 5000
    )


def user_text(text: str) -> str:
    """What the person typed, without the steering rules and context Kiro wraps around it."""
    text = text.strip()
    if not text or is_system_message(text):
        return ""
    for closing in ("</user-rule>", "</steering-reminder>"):
        at = text.rfind(closing)
        if at >= 0:
            text = text[at + len(closing) :].lstrip("`\r\n").strip()
            if not text:
                return ""
    if text.startswith(("## Included Rules", "<steering-reminder>")):
        return ""
    at = text.find("<EnvironmentContext>")
    if at >= 0:
        text = text[:at].strip()
    if text.startswith("Follow these instructions"):
        return ""
    return text


def answer_text(text: str) -> str:
    return "" if text.strip() in PLACEHOLDERS else text.strip()


def execution_answer(log: Any) -> str:
    """The final visible answer of an execution log: its last bot message with text."""
    if not isinstance(log, dict) or not isinstance(log.get("messagesFromExecutionId"), list):
        return ""
    answer = ""
    for message in log["messagesFromExecutionId"]:
        if not isinstance(message, dict) or message.get("role") != "bot":
            continue
        entries = message.get("entries")
        if not isinstance(entries, list):
            continue
        text = "\n".join(
            e["text"]
            for e in entries
            if isinstance(e, dict) and e.get("type") == "text" and isinstance(e.get("text"), str)
        ).strip()
        if answer_text(text):
            answer = text
    return answer


def session_entry(index: Any, session_id: str) -> dict[str, Any]:
    """The `sessions.json` entry of `session_id` ({} when there is none)."""
    if not isinstance(index, list):
        return {}
    for entry in index:
        if isinstance(entry, dict) and string(entry.get("sessionId")) == session_id:
            return entry
    return {}
