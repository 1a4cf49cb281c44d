"""Hand-made Claude Code transcripts in the real record format (§2.2 of the notes), the real
fixtures under capture/data/claude/, and helpers for reading what the connector made of them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.capture.claude_code import ClaudeCodeConnector
from memory_pipeline.capture.models import ParsedTask, ParseResult

DATA = Path(__file__).parent.parent / "capture" / "data" / "claude"
MAIN_2_0_64 = DATA / "codemie-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
SPOTTER_SUBAGENTS = DATA / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents"
SHOWCASE_SUBAGENTS = (
    DATA / "claude-code-log-synthetic" / "55550000-0000-4000-8000-000000000001" / "subagents"
)
# Far after every file's mtime: the quiet-file rule (settle_after) is always met.
LATER = datetime(2099, 1, 1, tzinfo=UTC)


def connector(home: Path, *, now: datetime = LATER, **kwargs: Any) -> ClaudeCodeConnector:
    return ClaudeCodeConnector(home, now=lambda: now, **kwargs)


def only_task(result: ParseResult) -> ParsedTask:
    assert len(result.tasks) == 1, result
    return result.tasks[0]


def issue_reasons(result: ParseResult) -> list[str]:
    return [issue.reason for issue in result.issues]


_LAST = object()


class Transcript:
    """Builds a Claude Code session file record by record; parents default to the last record."""

    def __init__(
        self, session_id: str = "5e551011-0000-4000-8000-000000000001", **envelope: Any
    ) -> None:
        self.session_id = session_id
        self.envelope: dict[str, Any] = {
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/app",
            "sessionId": session_id,
            "version": "2.1.229",
            "gitBranch": "main",
            "entrypoint": "cli",
        }
        self.envelope.update(envelope)
        self.envelope = {k: v for k, v in self.envelope.items() if v is not None}
        self.lines: list[str] = []
        self.last: str | None = None
        self.count = 0
        self.clock = datetime(2026, 9, 1, 10, 0, 0, tzinfo=UTC)

    def _threaded(self, rtype: str, parent: Any, **fields: Any) -> str:
        self.count += 1
        uuid = fields.pop("uuid", f"{rtype[:1]}{self.count:03d}-0000-4000-8000-000000000000")
        self.clock += timedelta(seconds=1)
        record = {
            "parentUuid": self.last if parent is _LAST else parent,
            **self.envelope,
            "type": rtype,
            "uuid": uuid,
            "timestamp": self.clock.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            **fields,
        }
        self.lines.append(json.dumps(record))
        self.last = uuid
        return uuid

    def prompt(self, content: Any, parent: Any = _LAST, **fields: Any) -> str:
        message = {"role": "user", "content": content}
        return self._threaded("user", parent, message=message, **fields)

    def tool_result(self, tool_id: str, output: str = "ok", parent: Any = _LAST) -> str:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        return self._threaded(
            "user",
            parent,
            message={"role": "user", "content": [block]},
            toolUseResult={"stdout": output},
        )

    def assistant(
        self,
        block: dict[str, Any],
        msg_id: str,
        stop_reason: str | None = None,
        parent: Any = _LAST,
        model: str = "claude-opus-5",
        **fields: Any,
    ) -> str:
        message = {
            "model": model,
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        return self._threaded("assistant", parent, message=message, requestId="req_1", **fields)

    def text(self, text: str, msg_id: str, stop_reason: str | None = None, **kw: Any) -> str:
        return self.assistant({"type": "text", "text": text}, msg_id, stop_reason, **kw)

    def thinking(self, text: str, msg_id: str) -> str:
        return self.assistant({"type": "thinking", "thinking": text, "signature": "x"}, msg_id)

    def tool_use(self, tool_id: str, msg_id: str, name: str = "Bash") -> str:
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": {"command": "ls"}}
        return self.assistant(block, msg_id, "tool_use")

    def system(self, subtype: str, parent: Any = _LAST, **fields: Any) -> str:
        return self._threaded("system", parent, subtype=subtype, isMeta=False, **fields)

    def attachment(self, attachment: dict[str, Any], parent: Any = _LAST) -> str:
        return self._threaded("attachment", parent, attachment=attachment)

    def sidecar(self, record: dict[str, Any]) -> None:
        self.lines.append(json.dumps(record))

    def raw(self, line: str) -> None:
        self.lines.append(line)

    def turn(self, prompt: str, answer: str, n: int, **prompt_fields: Any) -> str:
        """A complete 2.1.x turn: prompt, tool call, final text, turn_duration."""
        uuid = self.prompt(prompt, **prompt_fields)
        self.tool_use(f"toolu_{n}", f"msg_{n}a")
        self.tool_result(f"toolu_{n}")
        self.text(answer, f"msg_{n}b")
        self.system("turn_duration", durationMs=1000, messageCount=4)
        return uuid

    def write(self, directory: Path, name: str | None = None, newline_at_end: bool = True) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / (name or f"{self.session_id}.jsonl")
        body = "\n".join(self.lines) + ("\n" if newline_at_end else "")
        path.write_text(body, encoding="utf-8")
        return path


def project(home: Path) -> Path:
    return home / "projects" / "-home-dev-app"
