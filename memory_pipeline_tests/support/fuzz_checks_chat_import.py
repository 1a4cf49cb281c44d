"""The chat import's fuzz properties, as one function a test or a script can call.

Used by `memory_pipeline_tests/capture/test_fuzz_chat_import.py` (a few hundred cases) and by
`scripts/fuzz_capture.py` (10,000+):

    original = chat_import_original(CHAT_IMPORT_FIXTURES[0])
    strategy = mutated_file(original.lines)          # memory_pipeline_tests/support/mutations.py
    check_chat_import(mutated, original)             # raises AssertionError on a violation

The connector is run with the quiet rule at its limit (quiet after 0 minutes, the clock at the end
of time), so every message counts: an unanswered last prompt is a turn too. For a file M made from
an original O (every line of O a valid message) by damaging or inserting a few lines:

1. Nothing escapes. `parse(M)` and `task_days(M)` return normally, and no `parser_error` (the
   whole-file last resort) is recorded. `task_days(M)` is exactly the set of UTC start days of
   the tasks `parse(M)` returns (the sensor and the partition run agree on where a task goes).
2. Every intact line is captured. Each line of O that is byte-identical in M is a message, and it
   is in a turn of its conversation (`task_id`): its text is in that turn's prompt or outcome, and
   its `message_id`, if any, in that turn's message ids. The exceptions are the neighbours of a
   damaged line that the connector will not join across it, each reported on its own line, never
   dropped silently: an answer after it that follows an answer (the damaged line may have been
   its prompt, `outcome_without_prompt`), and a prompt before it followed by a prompt (the damaged
   line may have been its answer, `turn_damaged`), and a conversation between people with a
   damaged line before its first message (`conversation_damaged`: who asks is not known).
   Line numbers are M's as the reader counts them (a damaged line may hold newlines).
3. No turn holds text that was not in its own lines: no turn of `parse(M)` holds messages of
   two turns of O (`support/own_turns.py`); a damaged line never joins its neighbours.
4. Everything is storable. What the store writes from each task, made storable by
   `capture/store.py`'s functions (turn text and ids, title, native id, the JSONB native context),
   encodes as UTF-8 and holds no NUL; the JSONB value is strict JSON (no NaN).
"""

from __future__ import annotations

import json
import tempfile
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.capture.chat_import import ChatImportConnector, _message
from memory_pipeline.capture.models import ParsedTask, ParseResult
from memory_pipeline.capture.store import Storable, clean_turn
from memory_pipeline_tests.support.mutations import Mutated, fixture_lines
from memory_pipeline_tests.support.own_turns import own_turn_violations

REPO = Path(__file__).resolve().parents[2]
# The demo corpus's exports (a ChatGPT-style export with message ids; a design review between two
# people, speakers only) and a hand-written file of two interleaved conversations that both end
# on an unanswered prompt (data/chat_import/README.md).
DATA = REPO / "memory_pipeline_tests" / "capture" / "data" / "chat_import"
CHAT_IMPORT_FIXTURES: tuple[Path, ...] = (
    *sorted((REPO / "memory_pipeline" / "demo" / "corpus" / "imports").glob("*.jsonl")),
    DATA / "unanswered-endings.jsonl",
)
END_OF_TIME = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class ChatImportOriginal:
    """An undamaged export: its lines and the message each line holds."""

    source: Path
    lines: list[bytes]
    messages: list[tuple[str, str, str | None]]  # per line: task_id, text, message_id
    pieces: tuple[tuple[tuple[str, int], str], ...] = ()  # ((task_id, turn ordinal), text)


def chat_import_original(source: Path) -> ChatImportOriginal:
    lines = fixture_lines(source.read_bytes())
    messages = []
    for line in lines:
        obj = json.loads(line)
        message_id = obj.get("message_id")
        messages.append(
            (
                str(obj["task_id"]).strip(),
                obj["text"],
                None if message_id is None else str(message_id).strip(),
            )
        )
    with tempfile.TemporaryDirectory(prefix="fuzz-chat-") as tmp:
        path = Path(tmp) / "export.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        parsed = connector(Path(tmp)).parse(path)
    pieces = []
    for task in parsed.tasks:
        for turn in task.turns:
            for task_id, text, _ in messages:
                if task_id == task.native_id and (text in turn.prompt or text in turn.outcome):
                    pieces.append(((task_id, turn.ordinal), text))
    return ChatImportOriginal(source=source, lines=lines, messages=messages, pieces=tuple(pieces))


def connector(import_dir: Path) -> ChatImportConnector:
    """Every conversation is quiet: every message counts."""
    return ChatImportConnector(import_dir, quiet_after=timedelta(0), now=lambda: END_OF_TIME)


def check_chat_import(mutated: Mutated, original_turns: ChatImportOriginal) -> None:
    """Raise AssertionError when a property of the module docstring does not hold for M."""
    with tempfile.TemporaryDirectory(prefix="fuzz-chat-") as tmp:
        path = Path(tmp) / "export.jsonl"
        path.write_bytes(mutated.data())
        chat = connector(Path(tmp))
        try:
            days = chat.task_days(path)
            result = chat.parse(path)
        except Exception:
            raise AssertionError(
                f"an exception escaped ({mutated.kinds}):\n{traceback.format_exc()}"
            ) from None
    label = f"{original_turns.source.name} {mutated.kinds}"
    _check_no_escape(result, days, label)
    _check_intact_lines_captured(mutated, original_turns, result, label)
    check_own_turns(original_turns, result.tasks, label, mutated)
    for task in result.tasks:
        check_storable(task, label)


def check_own_turns(
    original: ChatImportOriginal,
    turns: Iterable[tuple[str, str, str]] | list[ParsedTask],
    label: str,
    mutated: Mutated | None = None,
) -> None:
    """4. No turn holds text that was not in its own lines (support/own_turns.py): per
    conversation, no captured turn holds messages of two turns of the original. `turns` are
    parsed tasks, or stored (task key, prompt, outcome) rows (a key `id @ file` is the
    conversation `id` kept apart, capture/store.py)."""
    if turns and isinstance(next(iter(turns)), ParsedTask):
        rows = [(t.native_id, u.prompt, u.outcome) for t in turns for u in t.turns]  # type: ignore[union-attr]
    else:
        rows = list(turns)  # type: ignore[arg-type]
    by_task: dict[str, list[tuple[str, str]]] = {}
    for key, prompt, outcome in rows:
        by_task.setdefault(key.split(" @ ")[0], []).append((prompt, outcome))
    damaged = [mutated.lines[i] for i in mutated.damaged] if mutated else []
    readable = _readable_messages(original, mutated) if mutated else set()
    for task_id, captured in by_task.items():
        if task_id in readable:
            # A damaged or inserted line that is a valid message of the conversation is new
            # content, not damage: it may even change who asks first (the speaker rule).
            continue
        pieces = [(k, text) for k, text in original.pieces if k[0] == task_id]
        problems = own_turn_violations(pieces, captured, damaged)
        assert not problems, f"{label}: task {task_id!r}: {problems}"


def _check_no_escape(result: ParseResult, days: set[Any], label: str) -> None:
    errors = [i for i in result.issues if i.reason == "parser_error"]
    assert not errors, f"{label}: whole-file parser_error {errors}"
    assert days == {t.started_at.date() for t in result.tasks}, f"{label}: task_days {days}"


def _line_numbers(mutated: Mutated) -> list[int]:
    """The reader's 1-based line number of each of M's lines (a damaged one may hold '\\n')."""
    numbers, at = [], 1
    for line in mutated.lines:
        numbers.append(at)
        at += line.count(b"\n") + 1
    return numbers


def _check_intact_lines_captured(
    mutated: Mutated, original: ChatImportOriginal, result: ParseResult, label: str
) -> None:
    numbers = _line_numbers(mutated)
    orphans = {
        i.line for i in result.issues if i.reason in ("outcome_without_prompt", "turn_damaged")
    }
    tasks = {t.native_id: t for t in result.tasks}
    unsure = [i.detail for i in result.issues if i.reason == "conversation_damaged"]
    for index, origin in enumerate(mutated.origin):
        if origin is None or index in mutated.damaged:
            continue
        task_id, text, message_id = original.messages[origin]
        line = numbers[index]
        if line in orphans or any(d.startswith(f"task {task_id!r}:") for d in unsure):
            continue
        task = tasks.get(task_id)
        assert task is not None, f"{label}: line {line}: task {task_id!r} lost"
        held = [
            t
            for t in task.turns
            if (text in t.prompt or text in t.outcome)
            and (message_id is None or message_id in t.native_message_ids)
        ]
        assert held, f"{label}: line {line} ({text[:40]!r}) is in no turn of {task_id!r}"


def _readable_messages(original: ChatImportOriginal, mutated: Mutated) -> set[str]:
    """Conversations changed, not damaged: where a damaged line is still a valid message (of
    its own conversation or, with another `task_id`, of another one), both conversations."""
    found = set()
    for i in mutated.damaged:
        raw, origin = mutated.lines[i], mutated.origin[i]
        valid = False
        for part in raw.split(b"\n"):
            part = part.strip().removeprefix(b"\xef\xbb\xbf").strip()
            try:
                obj = json.loads(part.decode("utf-8"))
                if isinstance(obj, dict):
                    found.add(_message(0, obj).task_id)
                    valid = True
            except Exception:  # not a message: a gap, which the connector handles
                continue
        if valid and origin is not None:
            found.add(original.messages[origin][0])
    return found


def check_storable(task: ParsedTask, label: str = "") -> None:
    """What the store would write from `task` is valid UTF-8 text without NUL, strict JSON."""
    fix = Storable()
    texts = [fix.text(task.native_id), fix.path(task.source_path)]
    if task.title:
        texts.append(fix.text(task.title.text))
    for turn in task.turns:
        clean = clean_turn(turn)
        texts += [clean.prompt, clean.outcome, *clean.native_message_ids]
        texts += [
            t for t in (clean.native_turn_id, clean.prompt_speaker, clean.outcome_speaker) if t
        ]
    for value in (fix.json(task.native_context, redacted=True), fix.json(task.ownership.evidence)):
        json.dumps(value, allow_nan=False)  # strict JSON: raises on NaN and infinity
        texts.extend(_strings(value))
    for text in texts:
        text.encode("utf-8")  # raises on a lone surrogate
        assert "\x00" not in text, f"{label}: NUL in {text[:60]!r}"


def _strings(value: object) -> list[str]:
    """Every string and key in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
