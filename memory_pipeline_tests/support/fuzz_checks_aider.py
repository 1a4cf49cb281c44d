"""The Aider connector's fuzz properties, as one function a test or a script can call.

The original is the chat history's lines (blank lines included: they are part of answers). For
a file M made from an original O by damaging or inserting lines:

1. Nothing escapes: `parse` and `task_days` return normally, no `parser_error`, and
   `task_days` is exactly the set of start days of the tasks `parse` returns.
2. Every intact turn is captured verbatim: a turn of O whose lines, from its prompt to the line
   after its answer (the next prompt or session header), and its session's header line, are
   byte-identical and contiguous in M is a turn of M with the same prompt and outcome. A turn
   that ends O has no next prompt to close it: in M it must end the file too, or be followed by
   one of O's lines (a damaged or inserted line after an answer may have been a later answer,
   and the parser rightly drops that turn). The line before its prompt must be one of O's too:
   an inserted `#### ` line there is, byte for byte, the first line of a longer prompt.
3. Everything is storable (`check_storable`).
"""

from __future__ import annotations

import itertools
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.capture.aider import AiderConnector
from memory_pipeline.capture.aider.history import HEADER
from memory_pipeline_tests.support.fuzz_checks_chat_import import check_storable
from memory_pipeline_tests.support.mutations import Mutated

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "memory_pipeline_tests" / "capture" / "data" / "aider"
AIDER_FIXTURES: tuple[Path, ...] = (
    DATA / ".aider.chat.history.md",
    *sorted((REPO / "memory_pipeline" / "demo" / "corpus" / "aider").glob("*/.aider.chat.*.md")),
)
NAME = ".aider.chat.history.md"


@dataclass(frozen=True)
class Turn:
    prompt: str
    outcome: str
    lines: tuple[int, ...]  # 0-based indices of O's lines the turn rests on
    ends_file: bool  # nothing after its answer in O


@dataclass(frozen=True)
class AiderOriginal:
    source: Path
    lines: list[bytes]
    turns: tuple[Turn, ...]


def _connector(repo: Path) -> AiderConnector:
    return AiderConnector(repos=[repo])


def aider_original(source: Path) -> AiderOriginal:
    data = source.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    with tempfile.TemporaryDirectory(prefix="fuzz-aider-") as tmp:
        (Path(tmp) / NAME).write_bytes(data)
        result = _connector(Path(tmp)).parse(Path(tmp) / NAME)
    turns = []
    for task in result.tasks:
        header = task.native_context["header_line"] - 1  # type: ignore[operator]
        for t in task.turns:
            start = int(t.native_turn_id[1:]) - 1  # type: ignore[index]
            end = start + 1
            while end < len(lines) and not lines[end].startswith(b"#### "):
                if HEADER.match(lines[end].decode("utf-8", "replace")):
                    break
                end += 1
            span = tuple(range(start, min(end + 1, len(lines))))
            turns.append(Turn(t.prompt, t.outcome, (header, *span), end >= len(lines)))
    return AiderOriginal(source, lines, tuple(turns))


def _protected(turn: Turn, mutated: Mutated) -> bool:
    at = {o: i for i, o in enumerate(mutated.origin) if o is not None}
    indices = [at.get(o) for o in turn.lines]
    if any(i is None or i in mutated.damaged for i in indices):
        return False
    body = indices[1:]
    before = body[0] - 1  # type: ignore[operator]
    if (
        before >= 0
        and (mutated.origin[before] is None or before in mutated.damaged)
        and mutated.lines[before].startswith(b"#### ")
    ):
        return False
    if turn.ends_file:
        after = body[-1] + 1  # type: ignore[operator]
        if after < len(mutated.origin) and (
            mutated.origin[after] is None or after in mutated.damaged
        ):
            return False
    return all(b == a + 1 for a, b in itertools.pairwise(body))  # type: ignore[operator]


def check_aider(mutated: Mutated, original: AiderOriginal) -> None:
    label = f"{original.source.name} {mutated.kinds}"
    with tempfile.TemporaryDirectory(prefix="fuzz-aider-") as tmp:
        path = Path(tmp) / NAME
        path.write_bytes(mutated.data())
        connector = _connector(Path(tmp))
        try:
            days = connector.task_days(path)
            result = connector.parse(path)
        except Exception:
            raise AssertionError(
                f"{label}: an exception escaped:\n{traceback.format_exc()}"
            ) from None
    errors = [i for i in result.issues if i.reason == "parser_error"]
    assert not errors, f"{label}: parser_error {errors}"
    assert days == {t.started_at.date() for t in result.tasks}, f"{label}: task_days {days}"
    captured = {(u.prompt, u.outcome) for t in result.tasks for u in t.turns}
    for task in result.tasks:
        check_storable(task, label)
    for turn in original.turns:
        if _protected(turn, mutated):
            assert (turn.prompt, turn.outcome) in captured, (
                f"{label}: intact turn {turn.prompt[:40]!r} not captured"
            )


# scripts/fuzz_capture.py's convention for a registered source (`--parser aider`).
FIXTURES, original, check = AIDER_FIXTURES, aider_original, check_aider
