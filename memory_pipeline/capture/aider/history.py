"""Aider's `.aider.chat.history.md`: sessions, turns and ownership, from the file's own lines.

How Aider writes it (Aider-AI/aider, Apache-2.0, `aider/io.py` 0.86: `InputOutput.__init__`,
`user_input`, `ai_output`, `tool_output`, `append_chat_history`; `aider/main.py`), always by
appending (`open("a")`, `errors="ignore"`):

* a session starts with `\\n# aider chat started at %Y-%m-%d %H:%M:%S\\n\\n`, the local time of
  the machine, without a zone (`datetime.now()`);
* the first tool line after it is the command line (`io.tool_output(" ".join(sys.argv))`, API
  keys scrubbed), then the version, model and repository lines;
* a typed prompt is `#### <line>  ` per line (`user_input`; a blank prompt is `#### <blank>`);
* tool output, confirmations and errors are blockquoted: `> <text>  ` (always the two trailing
  spaces of `linebreak=True`);
* the assistant's answer is written once, whole, after it streamed (`ai_output`): its markdown
  verbatim, between blank lines. Automatic reflections (lint or test errors sent back) are not
  prompts: they appear as tool lines followed by another answer.

A turn is a typed prompt (slash commands are not prompts, except `/ask`, `/code`, `/architect`
and `/context` with text) plus its answer: the first answer block after it, complete once
written (an automatic reflection's later answer is not part of the turn: it would change a turn
already captured). `.aider.input.history` (prompt_toolkit's `FileHistory`: `# <local time>`,
then `+<line>`) gives each prompt's time when it can be matched.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.models import OwnershipVerdict, ParsedTurn, ParseIssue

SOURCE = "aider"
HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
USER = re.compile(r"^#### (.*?)(?:  )?$")
TOOL = re.compile(r"^>(?: (.*))?  $")
PROMPT_COMMANDS = ("/ask", "/code", "/architect", "/context")
MESSAGE_FLAGS = ("--message", "--msg", "-m", "--message-file", "-f")


def local_time(text: str) -> datetime | None:
    """A header's naive local time as UTC (the zone of the machine reading it)."""
    try:
        naive = datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
        return naive.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None


@dataclass
class Line:
    number: int  # 1-based
    text: str | None  # None: the line was not UTF-8 or held a NUL (recorded)
    # what an unreadable line still shows in its first bytes: "header", "prompt" or None
    mark: str | None = None


@dataclass
class Session:
    header_line: int
    header_time: str
    started_at: datetime | None
    lines: list[Line] = field(default_factory=list)


def read_lines(data: bytes, where: str, issues: list[ParseIssue]) -> list[Line]:
    """The file's lines; a line that is not UTF-8 is kept as a hole and recorded."""
    out: list[Line] = []
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    for n, raw in enumerate(raw_lines, 1):
        raw = raw.removesuffix(b"\r")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            issues.append(
                ParseIssue(path=where, line=n, reason="invalid_utf8", detail=str(exc)[:200])
            )
            out.append(Line(n, None, _mark(raw)))
            continue
        if "\x00" in text:
            issues.append(ParseIssue(path=where, line=n, reason="binary", detail="NUL byte"))
            out.append(Line(n, None, _mark(raw)))
            continue
        out.append(Line(n, text))
    return out


def _mark(raw: bytes) -> str | None:
    """What an unreadable line's first bytes say it is. A prompt's turn is lost, never read as a
    part of the answer before it; a session header ends the turn before it, and the turns after
    it stay in the session before it (its time is unreadable: a session of their own could not
    be dated)."""
    if raw.startswith(b"# aider chat started at "):
        return "header"
    return "prompt" if raw.startswith(b"#### ") else None


def sessions_of(lines: list[Line], where: str, issues: list[ParseIssue]) -> list[Session]:
    sessions: list[Session] = []
    before = [ln for ln in lines if ln.text]
    for line in lines:
        match = HEADER.match(line.text) if line.text is not None else None
        if match:
            start = local_time(match.group(1))
            if start is None:
                issues.append(
                    ParseIssue(
                        path=where, line=line.number, reason="bad_timestamp", detail=match.group(1)
                    )
                )
            sessions.append(Session(line.number, match.group(1), start))
            continue
        if sessions:
            sessions[-1].lines.append(line)
    first = sessions[0].header_line if sessions else None
    stray = [ln for ln in before if first is None or ln.number < first]
    if stray and any(ln.text and ln.text.strip() for ln in stray):
        issues.append(
            ParseIssue(
                path=where,
                line=stray[0].number,
                reason="no_session_header",
                detail=f"{len(stray)} line(s) before any '# aider chat started at' header",
            )
        )
    return sessions


def native_id(path: Path, session: Session, occurrence: int) -> str:
    """`<repository>@<header time>`: stable across appends, a front-truncated file (drift) and
    a moved checkout; a history file of another name adds it; a second session started in the
    same second adds its occurrence."""
    stamp = session.header_time.replace("-", "").replace(":", "").replace(" ", "T")
    name = path.parent.name or "aider"
    if path.name != ".aider.chat.history.md":
        name += f"/{path.name}"
    return f"{name}@{stamp}" + (f"-{occurrence + 1}" if occurrence else "")


@dataclass
class Built:
    turns: list[ParsedTurn]
    waiting: bool  # a last prompt without an answer yet
    command_line: str | None
    prompts_raw: list[str]


def prompt_text(raw: str) -> str | None:
    """The prompt a typed line is, or None for a command that is no prompt."""
    text = raw.strip()
    if not text or text == "<blank>":
        return None
    if text.startswith("/"):
        head, _, rest = text.partition(" ")
        if head in PROMPT_COMMANDS and rest.strip():
            return rest.strip()
        return None
    return raw.strip("\n")


def build(session: Session, where: str, issues: list[ParseIssue]) -> Built:
    """Turns of one session: typed prompt blocks and the answer blocks after them."""
    command_line: str | None = None
    blocks: list[tuple[str, list[Line]]] = []  # ("user"|"tool"|"ai", lines)
    for line in session.lines:
        if line.text is None:
            kind = {"prompt": "user", "header": "header"}.get(line.mark or "", "bad")
        elif line.text.startswith("#### "):
            kind = "user"
        elif TOOL.match(line.text):
            kind = "tool"
            if command_line is None and not any(k == "user" for k, _ in blocks):
                body = (TOOL.match(line.text).group(1) or "").strip()  # type: ignore[union-attr]
                if is_aider_command(body):
                    command_line = body
        else:
            kind = "ai"
        if blocks and blocks[-1][0] == kind:
            blocks[-1][1].append(line)
        else:
            blocks.append((kind, [line]))
    turns: list[ParsedTurn] = []
    prompts_raw: list[str] = []
    waiting = False
    current: dict[str, Any] | None = None

    def close(last: bool) -> None:
        nonlocal waiting
        if current is None:
            return
        if current["damaged"]:
            issues.append(
                ParseIssue(
                    path=where,
                    line=current["line"],
                    reason="turn_damaged",
                    detail="a line of this turn could not be read",
                )
            )
            return
        answer = current["answer"]
        if not answer:
            if last:
                waiting = True
            return
        turns.append(
            ParsedTurn(
                ordinal=len(turns),
                native_turn_id=f"L{current['line']}",
                prompt=current["prompt"],
                outcome=answer,
            )
        )
        prompts_raw.append(current["raw"])

    for index, (kind, lines) in enumerate(blocks):
        if kind == "user":
            close(False)
            if any(ln.text is None for ln in lines):  # a prompt with an unreadable line
                current = {
                    "prompt": "",
                    "raw": "",
                    "line": lines[0].number,
                    "answer": "",
                    "damaged": True,
                }
                continue
            raw = "\n".join(USER.match(ln.text).group(1) for ln in lines)  # type: ignore[union-attr,arg-type]
            prompt = prompt_text(raw)
            current = (
                None
                if prompt is None
                else {
                    "prompt": prompt,
                    "raw": raw,
                    "line": lines[0].number,
                    "answer": "",
                    "damaged": False,
                }
            )
        elif kind == "header":
            close(False)
            current = None
        elif current is None:
            continue
        elif kind == "bad":
            current["damaged"] = True
        elif kind == "ai":
            text = "\n".join(ln.text for ln in lines if ln.text is not None).strip()
            if text and not current["answer"]:
                # The first answer block: aider writes it whole once it has streamed. A
                # reflection's later answer (lint/test errors sent back) would change a turn
                # already captured, so it is left out (the store would ignore it as drift).
                current["answer"] = text
        del index
    close(True)
    return Built(turns, waiting, command_line, prompts_raw)


def is_aider_command(body: str) -> bool:
    """The logged `sys.argv`: its program is aider (a script, an .exe, aider/__main__.py)."""
    first = body.split(" ", 1)[0]
    name = first.replace("\\", "/").rsplit("/", 1)[-1]
    return name in ("aider", "aider.exe", "aider.EXE") or first.endswith("aider/__main__.py")


def ownership(command_line: str | None) -> OwnershipVerdict:
    """Scripted `--message`/`--message-file` runs are delegated; a chat from the command line
    without them is typed into; no command line is unknown."""
    if command_line is None:
        return OwnershipVerdict(
            ownership="unknown",
            reason="aider:no-command-line",
            evidence={},
        )
    try:
        tokens = shlex.split(command_line)
    except ValueError:
        tokens = command_line.split()
    flags = [t for t in tokens[1:] if t in MESSAGE_FLAGS or t.split("=", 1)[0] in MESSAGE_FLAGS[:4]]
    if flags:
        return OwnershipVerdict(
            ownership="delegated",
            reason="aider:scripted-message",
            evidence={"flags": flags[:4]},
        )
    return OwnershipVerdict(
        ownership="user_owned",
        reason="aider:interactive-chat",
        evidence={"command_line": "aider without --message/--message-file"},
    )


def input_history(path: Path) -> list[tuple[datetime, str]]:
    """`.aider.input.history` entries: (UTC time, typed text). Unreadable: none."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    entries: list[tuple[datetime, str]] = []
    when: datetime | None = None
    lines: list[str] = []
    for raw in data.decode("utf-8", "replace").splitlines():
        if raw.startswith("# "):
            if when is not None and lines:
                entries.append((when, "\n".join(lines)))
            stamp = raw[2:].strip().split(".", 1)[0]
            when = local_time(stamp)
            lines = []
        elif raw.startswith("+"):
            lines.append(raw[1:])
    if when is not None and lines:
        entries.append((when, "\n".join(lines)))
    return entries


def prompt_times(
    turns: list[ParsedTurn],
    raws: list[str],
    start: datetime | None,
    history: list[tuple[datetime, str]],
) -> None:
    """Each turn's start from the input history: the first unused entry of the same text at or
    after the session's start."""
    if start is None or not history:
        return
    used: set[int] = set()
    for turn, raw in zip(turns, raws, strict=True):
        for i, (when, text) in enumerate(history):
            if i in used or when < start:
                continue
            if text.strip() == raw.strip():
                used.add(i)
                turn.started_at = when
                break
