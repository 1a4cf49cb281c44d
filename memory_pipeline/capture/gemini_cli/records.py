"""Gemini CLI's session files, both generations, read into one `Conversation`.

Learnt from google-gemini/gemini-cli @ 5411f113 (0.56.0-nightly, 2026-08):
`packages/core/src/services/chatRecordingTypes.ts` (the record types) and
`chatRecordingService.ts` (how they are written and read back, `loadConversationRecord`).

* **Legacy document** `chats/session-<YYYY-MM-DDTHH-MM>-<id8>.json`: one `ConversationRecord`
  (`sessionId`, `projectHash`, `startTime`, `lastUpdated`, `messages[]`, optional `summary`,
  `directories`, `kind`), rewritten whole on every message (pretty-printed, 2 spaces). Read
  whole (size-capped); a read that saw the file change is one `changed_while_reading` issue.
* **JSONL log** `chats/session-<...>-<id8>.jsonl` (and a subagent's
  `chats/<parentSessionId>/<sessionId>.jsonl`): appended with `appendFileSync`, one JSON value
  a line: first the metadata (`sessionId`, `projectHash`, `startTime`, `lastUpdated`, `kind`,
  `directories`), then every message record (a message written again under the same `id`
  replaces it: tokens and tool calls are added that way), `{"$set": {...}}` metadata updates
  (`lastUpdated`, `summary`, `directories`; `messages` when the history was synchronised:
  a checkpoint) and `{"$rewindTo": "<message id>"}` (`/rewind`).

A message: `id`, `timestamp`, `type` (`user`, `gemini`, `info`, `error`, `warning`),
`content` (a string or a `Part` list), optional `displayContent` (what the user typed when
`content` was expanded); a `gemini` message adds `toolCalls`, `thoughts`, `tokens`, `model`.

What capture keeps differs from Gemini's own view on purpose (the store is monotonic): the
messages are every message record in the order first written, each at its latest version. A
rewind and a checkpoint that drops messages (an aborted request rolled back, `/compress`) do not
take back turns already answered: they are counted (`rewinds`, `checkpoints`) as provenance.
A checkpoint's own messages are the history resynchronised, not new conversation: they are not
read as messages. When a resumed legacy session was migrated, Gemini writes the same session to
`<name>.jsonl` beside the `.json` (`initialize`): discovery then reads the JSONL only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import describe, exception_detail, string
from memory_pipeline.capture.files import read_json_document
from memory_pipeline.capture.jsonl import SKIPPED_LINE_REASONS as SKIPPED
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl
from memory_pipeline.capture.models import ParseIssue
from memory_pipeline.capture.protocol import issue as issue
from memory_pipeline.tuning import GEMINI_DOCUMENT_MAX_BYTES, GEMINI_JSONL_MAX_BYTES

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
META_FIELDS = ("sessionId", "projectHash", "startTime", "lastUpdated", "summary", "kind")


@dataclass
class Conversation:
    generation: str  # "json" (legacy document) or "jsonl" (the append log)
    meta: dict[str, Any] = field(default_factory=dict)
    # message id -> (line or None, the message's latest version); insertion order = first write.
    # A message that could not be read is kept in its place as None (under a key of its own).
    messages: dict[str, tuple[int | None, dict[str, Any] | None]] = field(default_factory=dict)
    rewinds: int = 0
    checkpoints: int = 0
    _first: dict[str, int] = field(default_factory=dict, repr=False)
    # Lines the reader skipped (damaged): a turn around one cannot be trusted to be whole.
    gaps: list[int] = field(default_factory=list)
    torn_tail: bool = False  # the last line is still being written

    def first_line(self, mid: str) -> int | None:
        return self._first.get(mid)

    def add(self, record: dict[str, Any], line: int | None, issues: list[ParseIssue], path: Path):
        mid = record.get("id")
        kind = record.get("type")
        if not isinstance(mid, str) or not mid:
            issues.append(issue(path, "bad_record", "a message without a string id", line))
            self._unusable(line)
            return
        if not isinstance(kind, str) or kind not in MESSAGE_TYPES:
            issues.append(issue(path, "unknown_record", f"message type {describe(kind)}", line))
            self._unusable(line)
            return
        if mid in self.messages and next(reversed(self.messages)) != mid:
            # Gemini writes a message again (its tokens, its tool calls) only while it is the
            # last one; written again after others, one of the two copies is not what it says
            issues.append(
                issue(path, "bad_record", f"message {mid[:40]!r} written again out of place", line)
            )
            self._unusable(line)
            return
        if mid not in self.messages and line is not None:
            self._first[mid] = line
        self.messages[mid] = (line, record)

    def _unusable(self, line: int | None) -> None:
        """A message that cannot be read keeps its place: the turn around it is not whole."""
        key = f"\x00unusable:{len(self.messages)}"
        self.messages[key] = (line, None)
        if line is not None:
            self._first[key] = line

    def set_meta(self, values: dict[str, Any]) -> None:
        for key in META_FIELDS:
            if key in values and values[key] is not None:
                self.meta[key] = values[key]
        if isinstance(values.get("directories"), list):
            self.meta["directories"] = [d for d in values["directories"] if isinstance(d, str)]


def _messages(
    conv: Conversation, values: Any, path: Path, issues: list[ParseIssue], line: int | None
) -> None:
    if values is None:
        return
    if not isinstance(values, list):
        issues.append(issue(path, "bad_record", f"messages is {describe(values)}", line))
        return
    bad = 0
    for index, message in enumerate(values):
        if not isinstance(message, dict):
            bad += 1
            conv._unusable(line)
            continue
        before = len(issues)
        conv.add(message, line, issues, path)
        for added in issues[before:]:
            if added.line is None:
                added.detail = f"messages[{index}]: {added.detail}"[:500]
    if bad:
        issues.append(issue(path, "bad_record", f"{bad} messages that are not objects", line))


def read_document(path: Path) -> tuple[Conversation | None, list[ParseIssue]]:
    """A legacy `session-*.json`, read whole; stat'ed before and after (a torn read is no task)."""
    doc, problem = read_json_document(path, GEMINI_DOCUMENT_MAX_BYTES)
    if problem is not None:
        return None, [problem]
    if not isinstance(doc, dict) or not isinstance(doc.get("sessionId"), str):
        return None, [issue(path, "not_a_transcript", "not a Gemini CLI ConversationRecord")]
    issues: list[ParseIssue] = []
    conv = Conversation("json")
    conv.set_meta(doc)
    _messages(conv, doc.get("messages"), path, issues, None)
    return conv, issues


def read_log(path: Path) -> tuple[Conversation | None, list[ParseIssue]]:
    """A JSONL session log, streamed; every line a metadata, message, `$set` or `$rewindTo`."""
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        return None, [issue(path, "unreadable", exception_detail(exc))]
    if size > GEMINI_JSONL_MAX_BYTES:
        return None, [issue(path, "too_large", f"{size:,} bytes")]
    read = JsonlRead(path)
    issues = read.issues
    conv = Conversation("jsonl")
    for line, record in iter_jsonl(path, read):
        if isinstance(record.get("$rewindTo"), str):
            conv.rewinds += 1
        elif "id" in record:
            conv.add(record, line, issues, path)  # a message (one with a bad id: bad_record)
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if "messages" in update:
                conv.checkpoints += 1
            conv.set_meta(update)
        elif string(record.get("sessionId")) and string(record.get("projectHash")):
            conv.set_meta(record)  # the first line (or a whole legacy record on one line)
            _messages(conv, record.get("messages"), path, issues, line)
        else:
            keys = ", ".join(sorted(str(k) for k in record)[:5])
            issues.append(issue(path, "unknown_record", f"a record with keys {keys}", line))
            conv._unusable(line)  # it may have been a message that lost its id
    conv.gaps = sorted(
        i.line
        for i in issues
        if i.line is not None and i.reason in SKIPPED and i.reason != "truncated_line"
    )
    conv.torn_tail = any(i.reason == "truncated_line" for i in issues)
    if not string(conv.meta.get("sessionId")):
        if not any(i.reason in ("empty_file", "unreadable") for i in issues):
            issues.append(issue(path, "not_a_transcript", "no session metadata (sessionId)"))
        return None, issues
    return conv, issues
