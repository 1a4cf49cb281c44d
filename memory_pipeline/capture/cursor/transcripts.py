"""Cursor agent transcripts: `<data dir>/projects/<slug>/agent-transcripts/` (FORMAT.md §6).

The `cursor-agent` CLI (and, for its own agent chats, the IDE) writes one JSON Lines file per
conversation: `agent-transcripts/<id>/<id>.jsonl` (older builds: `agent-transcripts/<id>.jsonl`),
one line per message:

    {"role":"user","message":{"content":[{"type":"text","text":"<user_query>\\n...\\n</user_query>"}]}}
    {"role":"assistant","message":{"content":[{"type":"text","text":"..."},
                                              {"type":"tool_use","name":"Shell","input":{...}}]}}
    {"type":"turn_ended","status":"success"|"error"|"aborted"}
    {"type":"metadata","metadata":{...}}

No ids, no timestamps, no tool results; thinking is folded into the assistant's text. A turn is a
user line and the assistant lines up to the next user line; its outcome is the text of the last
assistant line that has text (the final answer, after the tool calls). It is complete once a
`turn_ended` line or a next user line follows it, or the file has been quiet `settle_after`.
A damaged line inside a turn drops that turn (recorded by the reader), never half of it.

Times come from the CLI's chat store beside it: `<data dir>/chats/<md5 of cwd>/<id>/store.db`,
table `meta`, key `0`: hex-encoded JSON with `createdAt` (epoch ms), `name`, `mode`,
`lastUsedModel`. A transcript without one has no start time and is recorded (`no_start_time`).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.capture.cursor import sqlite as cursor_sqlite
from memory_pipeline.capture.cursor.sqlite import StoreUnavailable
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl
from memory_pipeline.capture.models import ParsedTurn

TRANSCRIPTS_DIR = "agent-transcripts"
SUBAGENTS_DIR = "subagents"
WORKSPACE_HASH = "_workspace_hash"  # where chat_meta found the store (not a Cursor field)
_USER_QUERY = re.compile(r"<user_query>\s*([\s\S]*?)\s*</user_query>")


def prompt_text(text: str) -> str:
    """The user's words: what `<user_query>` wraps, else the whole text."""
    m = _USER_QUERY.search(text)
    return (m.group(1) if m else text).strip()


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(p for p in parts if p.strip()).strip()


def transcript_id(path: Path) -> str:
    return path.stem


def is_subagent(path: Path) -> bool:
    parts = path.parts
    if TRANSCRIPTS_DIR not in parts:
        return False
    return SUBAGENTS_DIR in parts[parts.index(TRANSCRIPTS_DIR) + 1 :]


def project_slug(path: Path) -> str | None:
    parts = path.parts
    if TRANSCRIPTS_DIR in parts:
        at = parts.index(TRANSCRIPTS_DIR)
        return parts[at - 1] if at >= 1 else None
    return None


@dataclass
class Transcript:
    turns: list[ParsedTurn] = field(default_factory=list)
    unfinished: bool = False
    first_prompt: str | None = None
    records: int = 0  # lines that were transcript records (role or turn_ended/metadata)
    dropped: int = 0


@dataclass
class _Open:
    prompt: str
    first_line: int
    answer: str | None = None
    answer_line: int | None = None
    ended: bool = False
    last_line: int = 0


def read_transcript(path: Path, read: JsonlRead, settled: bool) -> Transcript:
    out = Transcript()
    skipped: list[int] = []
    read.on_skip = lambda line, _raw: skipped.append(line)
    current: _Open | None = None

    def close(turn: _Open, followed: bool) -> None:
        damaged = any(turn.first_line <= s <= max(turn.last_line, turn.first_line) for s in skipped)
        if damaged:
            out.dropped += 1
            return
        if turn.answer is None:
            if not followed:
                out.unfinished = True
            return
        if not (followed or turn.ended or settled):
            out.unfinished = True
            return
        out.turns.append(
            ParsedTurn(
                ordinal=len(out.turns),
                native_turn_id=None,
                prompt=turn.prompt,
                outcome=turn.answer,
                native_message_ids=[f"L{turn.first_line}", f"L{turn.answer_line}"],
            )
        )

    for line, obj in iter_jsonl(path, read):
        role = obj.get("role")
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else obj.get("content")
        if obj.get("type") == "turn_ended":
            out.records += 1
            if current is not None:  # the turn is over; lines after it until a prompt join none
                current.ended = True
                current.last_line = line
                close(current, followed=False)
                current = None
            continue
        if obj.get("type") == "metadata":
            out.records += 1
            continue
        if role == "user":
            out.records += 1
            text = prompt_text(_texts(content))
            if current is not None:
                current.last_line = line - 1
                close(current, followed=True)
                current = None
            if not text:
                continue
            if out.first_prompt is None:
                out.first_prompt = text
            current = _Open(prompt=text, first_line=line, last_line=line)
        elif role in ("assistant", "tool", "system"):
            out.records += 1
            if current is None:
                continue
            current.last_line = line
            if role == "assistant":
                text = _texts(content)
                if text:
                    current.answer, current.answer_line = text, line
    if current is not None:
        # a damaged line after the last record still belongs to the last turn
        current.last_line = max([current.last_line, *[s for s in skipped if s > current.last_line]])
        close(current, followed=False)
    return out


def chat_meta(data_dir: Path, chat_id: str) -> dict[str, Any] | None:
    """`chats/*/<id>/store.db` `meta` key `0` (hex-encoded JSON), or None."""
    chats = data_dir / "chats"
    if not chats.is_dir() or "/" in chat_id or chat_id in ("", ".", ".."):
        return None
    try:
        candidates = sorted(chats.glob(f"*/{chat_id}/store.db"))
    except (OSError, ValueError):
        return None
    for db in candidates:
        meta = _read_meta(db)
        if meta is not None:
            meta[WORKSPACE_HASH] = db.parent.parent.name
            return meta
    return None


def cwd_of(slug: str | None, workspace_hash: object, known: list[str]) -> str | None:
    """The transcript's working directory, when it can be proven: the chat store's directory is
    the md5 of the workspace path (FORMAT.md §6), checked against the slug read as a path and
    against the IDE's workspace folders. None when nothing matches (the slug is lossy)."""
    if not isinstance(workspace_hash, str):
        return None
    candidates = [*known]
    if slug:
        candidates.insert(0, "/" + slug.replace("-", "/"))
    for path in candidates:
        if hashlib.md5(path.encode()).hexdigest() == workspace_hash:
            return path
    return None


def _read_meta(db: Path) -> dict[str, Any] | None:
    try:
        conn = cursor_sqlite.connect(db)
    except StoreUnavailable:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if not row or row[0] is None:
        return None
    raw = row[0]
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        text = (
            bytes.fromhex(text.strip()).decode("utf-8")
            if not text.lstrip().startswith("{")
            else text
        )
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def prompt_history(data_dir: Path) -> set[str]:
    """`<data dir>/prompt_history.json`: a JSON array of the prompts typed in `cursor-agent`."""
    path = data_dir / "prompt_history.json"
    try:
        if not path.is_file() or path.stat().st_size > 64 * 1024 * 1024:
            return set()
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    if not isinstance(data, list):
        return set()
    return {p.strip() for p in data if isinstance(p, str) and p.strip()}
