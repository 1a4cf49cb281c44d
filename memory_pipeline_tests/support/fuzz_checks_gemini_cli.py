"""The Gemini CLI connector's fuzz properties (`scripts/fuzz_capture.py --parser gemini_cli`).

Originals: the JSONL session logs of the fixture home (`capture/data/gemini_cli/`), and the real
pomodoro session as the JSONL log Gemini CLI writes when it resumes a legacy document (its
metadata line, then every message, `chatRecordingService.ts` `initialize`). A damaged copy is
installed where Gemini keeps it (`<home>/.gemini/tmp/<project>/chats/...`) and parsed.

For a copy M of an original O:

1. Nothing escapes: `parse` and `task_days` return normally, no `parser_error`; `task_days` is
   the set of start days of what `parse` returns; at most one task, exactly one while the
   metadata line is intact and no damaged line could name another session.
2. Every damaged line that is not JSON is recorded with its line number.
3. Every intact turn is captured verbatim: a turn of O whose lines, from its prompt up to and
   including the next prompt's line (or the end of the file), are intact and consecutive in M,
   and whose message ids no damaged line mentions (a record under the same id replaces the
   message, as in Gemini's own reader), is a turn of M with the same prompt and outcome.
4. No captured turn holds text of two original turns (`own_turn_violations`), and everything is
   storable (`check_storable`).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from memory_pipeline.capture.gemini_cli import GeminiCliConnector
from memory_pipeline.capture.gemini_cli.turns import PROMPT, prompt_text
from memory_pipeline.capture.models import ParsedTask
from memory_pipeline_tests.support.fuzz_checks_chat_import import check_storable
from memory_pipeline_tests.support.mutations import Mutated, fixture_lines, in_order
from memory_pipeline_tests.support.own_turns import own_turn_violations

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "memory_pipeline_tests" / "capture" / "data" / "gemini_cli"
CHATS = DATA / "gemini_home" / ".gemini" / "tmp" / "ledger" / "chats"
REAL = DATA / "real" / "gemini-cli-pomodoro-timer.json"
FIXTURES: tuple[Path, ...] = (
    CHATS / "session-2026-10-12T08-05-3f9c1a2b.jsonl",
    CHATS / "session-2026-10-12T09-30-7d0e5f6a.jsonl",
    CHATS / "3f9c1a2b-5d4e-4f60-8a71-92b3c4d5e6f7" / "8e7d6c5b-4a39-4281-b0c9-d8e7f6a5b4c3.jsonl",
    REAL,
)


@dataclass(frozen=True)
class Original:
    source: Path
    relative: str  # where the copy goes under <home>/.gemini/tmp/<project>/
    lines: list[bytes]
    task: ParsedTask
    # native_turn_id -> (first line, next prompt's line or len(lines), ids of the range's messages)
    ranges: dict[str, tuple[int, int, frozenset[str]]]


def _lines(source: Path) -> tuple[str, list[bytes]]:
    if source == REAL:
        doc = json.loads(source.read_text())
        messages = doc.pop("messages")
        lines = [json.dumps(doc, separators=(",", ":")).encode()]
        lines += [
            json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode() for m in messages
        ]
        return "chats/session-2025-10-21T20-04-0b23371a.jsonl", lines
    relative = str(source.relative_to(CHATS.parent))
    return relative, fixture_lines(source.read_bytes())


def _install(tmp: Path, relative: str, data: bytes) -> Path:
    path = tmp / ".gemini" / "tmp" / "ledger" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def original(source: Path) -> Original:
    relative, lines = _lines(source)
    with tempfile.TemporaryDirectory() as tmp:
        path = _install(Path(tmp), relative, b"\n".join(lines) + b"\n")
        result = GeminiCliConnector([Path(tmp) / ".gemini"]).parse(path)
    assert result.issues == [] and len(result.tasks) == 1, (source, result.issues)
    records = [json.loads(line) for line in lines]
    prompts = [
        i for i, r in enumerate(records) if r.get("type") == "user" and prompt_text(r)[0] == PROMPT
    ]
    bounds = [*prompts, len(lines)]
    ranges = {}
    for a, b in pairwise(bounds):
        ids = frozenset(str(r["id"]) for r in records[a:b] if isinstance(r.get("id"), str))
        ranges[records[a]["id"]] = (a, b, ids)
    return Original(source, relative, lines, result.tasks[0], ranges)


def check(mutated: Mutated, original: Original) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _install(Path(tmp), original.relative, mutated.data())
        c = GeminiCliConnector([Path(tmp) / ".gemini"])
        result = c.parse(path)
        days = c.task_days(path)
    assert not [i for i in result.issues if i.reason == "parser_error"], result.issues
    assert days == {t.started_at.date() for t in result.tasks}
    assert len(result.tasks) <= 1
    damaged = [mutated.lines[i] for i in mutated.damaged]
    meta_intact = 0 in mutated.intact()
    if meta_intact and not any(b"sessionId" in line for line in damaged):
        assert len(result.tasks) == 1, result.issues
    # the file's line number of each of M's lines (a damaged line may hold a newline: a flipped
    # byte splits it in two, which the reader sees as two lines)
    numbers = [1]
    for text in mutated.lines:
        numbers.append(numbers[-1] + text.count(b"\n") + 1)
    for i in mutated.damaged:
        if b"\n" in mutated.lines[i]:
            continue
        line = mutated.lines[i].strip().removeprefix(b"\xef\xbb\xbf")
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            if line.strip():
                number = numbers[i]
                assert any(x.line == number for x in result.issues), f"line {number} not recorded"
    for task in result.tasks:
        assert [t.ordinal for t in task.turns] == list(range(len(task.turns)))
        check_storable(task)
    captured = {
        (t.native_turn_id, t.prompt, t.outcome) for task in result.tasks for t in task.turns
    }
    if meta_intact and not any(b"sessionId" in line for line in damaged):
        for turn in original.task.turns:
            first, end, ids = original.ranges[turn.native_turn_id or ""]
            touched = any(mid.encode() in line for mid in ids for line in damaged)
            if not touched and in_order(mutated, first, end, len(original.lines)):
                assert (turn.native_turn_id, turn.prompt, turn.outcome) in captured, (
                    f"intact turn {turn.native_turn_id} lost or changed"
                )
    pieces = [(t.native_turn_id, t.prompt) for t in original.task.turns]
    pieces += [(t.native_turn_id, t.outcome) for t in original.task.turns]
    got = [(t.prompt, t.outcome) for task in result.tasks for t in task.turns]
    violations = own_turn_violations(pieces, got, damaged)
    assert not violations, violations
