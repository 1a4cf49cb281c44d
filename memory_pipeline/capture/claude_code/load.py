"""One streamed pass over a transcript: threaded records and sidecars, line by line (§2.2).

Isolation: each line is interpreted on its own. A field of the wrong JSON type, an unusable
timestamp or any exception while reading one record costs that line only (recorded as a
ParseIssue with its line number); the rest of the file is used. Even an exception from the shared
reader itself is recorded and the lines read before it are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.claude_code.records import (
    BASH_INPUT_PREFIX,
    COMMAND_PREFIXES,
    HARNESS_BLOCK_PREFIXES,
    INTERRUPT_PREFIX,
    NOISE_PREFIXES,
    NOTIFICATION_PREFIX,
    OPAQUE,
    SIDECAR_TYPES,
    TEXT,
    THREADED_TYPES,
    TOOL_USE,
    UNREADABLE,
    Loaded,
    Rec,
    Sidecar,
    clip,
    parse_timestamp,
    short,
    str_or_none,
    text_field,
)
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl

_COMMAND_NAME_RE = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_MESSAGE_RE = re.compile(r"<command-message>(.*?)</command-message>", re.S)
_COMMAND_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def load(path: Path, read: JsonlRead, *, until_started: bool = False) -> Loaded:
    """Read `path` once. `until_started`: stop at the first timestamped threaded record (the
    task's start, see `Loaded.started_at`), so `task_days` and `parse` share one rule."""
    loaded = Loaded()
    for line_no, obj in _lines(path, read):
        try:
            added = _take(loaded, obj, line_no, read)
        except Exception as exc:  # one record must never cost the file (issue 10)
            read.issue("bad_record", describe(exc), line_no)
            continue
        if until_started and added is not None and added.timestamp is not None:
            return loaded
    for rtype, (line_no, count) in loaded.unknown_types.items():
        read.issue("unknown_record", f"type {clip(rtype, 60)!r} ignored ({count} lines)", line_no)
    return loaded


def describe(exc: BaseException) -> str:
    """`TypeError: unhashable type: 'list'`, cut to a readable length."""
    return clip(f"{type(exc).__name__}: {exc}", 200)


def _lines(path: Path, read: JsonlRead) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_jsonl`, except that an exception it raises ends the pass as a recorded issue."""
    last = 0
    try:
        for line_no, obj in iter_jsonl(path, read):
            last = line_no
            yield line_no, obj
    except Exception as exc:
        read.issue("reader_error", f"{describe(exc)} (reading stopped after line {last})")


def _take(loaded: Loaded, obj: dict[str, Any], line: int, read: JsonlRead) -> Rec | None:
    """File one line; returns the record if it is a new threaded record."""
    rtype = obj.get("type")
    if not isinstance(rtype, str):
        _note_unknown(loaded, "<no type>", line)
        return None
    uuid = obj.get("uuid")
    if is_threaded(obj, rtype):
        if rtype not in THREADED_TYPES:
            _note_unknown(loaded, rtype, line)
        if not isinstance(uuid, str) or not uuid:
            read.issue("missing_uuid", f"{clip(rtype, 60)} record without a uuid", line)
            return None
        return _add_record(loaded, obj, rtype, uuid, line, read)
    if rtype in SIDECAR_TYPES:
        _add_sidecar(loaded, obj, rtype, line, read)
    else:
        _note_unknown(loaded, rtype, line)
    return None


def is_threaded(obj: dict[str, Any], rtype: str) -> bool:
    """§2.2 tree records; an unknown type that carries uuid+parentUuid is kept in the tree."""
    return rtype in THREADED_TYPES or (isinstance(obj.get("uuid"), str) and "parentUuid" in obj)


def _note_unknown(loaded: Loaded, rtype: str, line_no: int) -> None:
    first, count = loaded.unknown_types.get(rtype, (line_no, 0))
    loaded.unknown_types[rtype] = (first, count + 1)


def _add_record(
    loaded: Loaded, obj: dict[str, Any], rtype: str, uuid: str, line: int, read: JsonlRead
) -> Rec | None:
    """First occurrence wins: a later line with the same uuid (a replay) changes nothing, not
    even the live leaf, so a copy of an old record at the end cannot rewind the session."""
    if uuid in loaded.records:
        return None
    rec = _make_record(obj, rtype, uuid, line, read)
    parent = loaded.records.get(rec.parent or "")
    if parent is not None:
        rec.parent = parent.uuid  # share the string: big files hold many records
    loaded.records[uuid] = rec
    loaded.order.append(rec)
    if rec.type in ("user", "assistant"):
        loaded.last_message[rec.sidechain] = (uuid, line)
    return rec


def _make_record(obj: dict[str, Any], rtype: str, uuid: str, line: int, read: JsonlRead) -> Rec:
    raw_parent = obj.get("parentUuid", ...)
    rec = Rec(
        uuid=uuid,
        parent=str_or_none(raw_parent),
        logical_parent=str_or_none(obj.get("logicalParentUuid")),
        type=rtype,
        line=line,
        sidechain=obj.get("isSidechain") is True,
        session_id=short(obj.get("sessionId")),
        snake_session_id=short(obj.get("session_id")),
        timestamp=_timestamp(obj, line, read),
        cwd=short(obj.get("cwd")),
        git_branch=short(obj.get("gitBranch")),
        version=short(obj.get("version")),
        entrypoint=short(obj.get("entrypoint")),
        parent_unreadable=raw_parent is not None and str_or_none(raw_parent) is None,
    )
    message = obj.get("message")
    if rtype == "user":
        _fill_user(rec, obj, message, read)
    elif rtype == "assistant":
        _fill_assistant(rec, obj, message, read)
    elif rtype == "system":
        rec.subtype = short(obj.get("subtype"))
    elif rtype == "attachment":
        rec.steering = _queued_prompt(obj.get("attachment"))
    return rec


def _timestamp(obj: dict[str, Any], line: int, read: JsonlRead) -> datetime | None:
    value = obj.get("timestamp")
    stamp = parse_timestamp(value)
    if stamp is None and value is not None:
        read.issue("bad_timestamp", f"{clip(repr(value), 80)} is not a usable time", line)
    return stamp


def _fill_user(rec: Rec, obj: dict[str, Any], message: Any, read: JsonlRead) -> None:
    rec.prompt_source = short(obj.get("promptSource"))
    origin = obj.get("origin")
    rec.origin_kind = short(origin.get("kind")) if isinstance(origin, dict) else None
    rec.turn_origin = short(obj.get("turnOrigin"))
    content = message.get("content") if isinstance(message, dict) else None
    text, has_image, has_tool_result, malformed = user_content(content)
    if not isinstance(message, dict):
        malformed = f"message is {_json_type(message)}"
    rec.kind = _user_kind(obj, rec, text, has_image, has_tool_result, malformed)
    if rec.kind == UNREADABLE:
        read.issue("bad_record", f"user record: {malformed}", rec.line)
    elif rec.kind == "human":
        rec.text = text or "[image]"
    elif rec.kind == "command":
        rec.text = _render_command(text)


def user_content(content: Any) -> tuple[str, bool, bool, str | None]:
    """(prompt text, has image, has tool_result, what is malformed) of a user `message.content`.

    Malformed: content that is neither a string nor a list, or a block that is not an object, has
    no string `type`, or is a text block whose text is not a string (§2.2 shapes).
    """
    if isinstance(content, str):
        return content.strip(), False, False, None
    if not isinstance(content, list):
        return "", False, False, f"message.content is {_json_type(content)}"
    texts: list[str] = []
    has_image = has_tool_result = False
    malformed: str | None = None
    for block in content:
        btype = block.get("type") if isinstance(block, dict) else None
        if not isinstance(btype, str):
            malformed = malformed or "a content block is not an object with a string type"
        elif btype == "tool_result":
            has_tool_result = True
        elif btype == "image":
            has_image = True
        elif btype == "text":
            text = block.get("text")
            if not isinstance(text, str):
                malformed = malformed or f"a text block's text is {_json_type(text)}"
                continue
            text = text.strip()
            if text and not text.startswith(HARNESS_BLOCK_PREFIXES):
                texts.append(text)
    return "\n\n".join(texts), has_image, has_tool_result, malformed


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")


def _user_kind(
    obj: dict[str, Any],
    rec: Rec,
    text: str,
    has_image: bool,
    has_tool_result: bool,
    malformed: str | None,
) -> str:
    """§2.5 human-prompt detection; every non-prompt user record gets a body kind."""
    if has_tool_result:
        return "tool_result"
    if obj.get("isMeta") is True or obj.get("isVisibleInTranscriptOnly") is True:
        return "meta"
    if obj.get("isCompactSummary") is True:
        return "compact_summary"
    if malformed is not None:
        return UNREADABLE
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


def _fill_assistant(rec: Rec, obj: dict[str, Any], message: Any, read: JsonlRead) -> None:
    if not isinstance(message, dict):
        read.issue("bad_record", f"assistant record: message is {_json_type(message)}", rec.line)
        rec.blocks = ((OPAQUE, ""),)
        return
    rec.msg_id = str_or_none(message.get("id"))
    rec.model = short(message.get("model"))
    rec.stop_reason = short(message.get("stop_reason"))
    # §2.2: `isApiErrorMessage` / model "<synthetic>" = harness-made message, not an answer.
    rec.api_error = obj.get("isApiErrorMessage") is True or rec.model == "<synthetic>"
    content = message.get("content")
    if isinstance(content, str):  # not seen in real files; tolerated
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        detail = f"assistant record: message.content is {_json_type(content)}"
        read.issue("bad_record", detail, rec.line)
        rec.blocks = ((OPAQUE, ""),)
        return
    blocks: list[tuple[str, str]] = []
    malformed = False
    for block in content:
        btype = block.get("type") if isinstance(block, dict) else None
        text = block.get("text") if btype == "text" else None
        if not isinstance(btype, str) or (btype == "text" and not isinstance(text, str)):
            malformed = True
            blocks.append((OPAQUE, ""))
        elif btype == "text":
            blocks.append((TEXT, text))
        elif btype in ("tool_use", "server_tool_use"):
            blocks.append((TOOL_USE, str(block.get("id") or "")))
    if malformed:
        read.issue("bad_record", "assistant record: a content block has the wrong shape", rec.line)
    rec.blocks = tuple(blocks)


def _queued_prompt(attachment: Any) -> str | None:
    """A `queued_command` attachment typed by the user mid-turn (§2.5), as plain text."""
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return None
    if attachment.get("commandMode") not in (None, "prompt"):
        return None
    text, _, _, _ = user_content(attachment.get("prompt"))
    if not text or text.startswith((*NOISE_PREFIXES, NOTIFICATION_PREFIX, *COMMAND_PREFIXES)):
        return None
    return text


def _add_sidecar(
    loaded: Loaded, obj: dict[str, Any], rtype: str, line: int, read: JsonlRead
) -> None:
    car = Sidecar(
        line=line,
        session_id=str_or_none(obj.get("sessionId")),
        observed_at=_timestamp(obj, line, read),
    )
    if rtype == "custom-title":
        car.text = text_field(obj.get("customTitle"))
        if car.text:
            loaded.custom_titles.append(car)
    elif rtype == "ai-title":
        car.text = text_field(obj.get("aiTitle"))
        if car.text:
            loaded.ai_titles.append(car)
    elif rtype == "summary":
        car.text = text_field(obj.get("summary"))
        car.leaf = str_or_none(obj.get("leafUuid"))
        if car.text:
            loaded.summaries.append(car)
        if car.leaf:
            loaded.leaf_hints.append(car)
    elif rtype == "last-prompt":
        car.leaf = str_or_none(obj.get("leafUuid"))
        if car.leaf:
            loaded.leaf_hints.append(car)
