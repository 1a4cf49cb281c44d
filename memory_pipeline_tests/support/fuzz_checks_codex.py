"""The Codex connector's fuzz properties, as one function a test or a script can call.

`check_codex(mutated, original_turns)` parses a damaged copy of a real rollout and raises
AssertionError when a property is violated (an exception escaping the connector counts as one).
`original_turns` is a `CodexOriginal`, built once per fixture with `codex_original(path)`; the
real fixtures are `CODEX_FIXTURES`. Used by `memory_pipeline_tests/capture/test_fuzz_codex.py`
(a few hundred cases) and `scripts/fuzz_capture.py` (10,000+):

    originals = [codex_original(p) for p in CODEX_FIXTURES]

    @given(st.data())
    def run(data):
        original = data.draw(st.sampled_from(originals))
        check_codex(data.draw(mutated_file(original.lines)), original)

Properties:

P1. `parse()` and `task_days()` never raise, and `parse()` never reports a file-level
    `parser_error`: a bad line is a recorded issue, never the whole file.
P2. When the session meta line is intact, the file still yields exactly one task; when, besides,
    no damaged line is a session meta, it is the same thread (same native id).
P3. When a task is produced, `task_days()` is exactly the UTC day of its `started_at`.
P4. Every complete turn T of the original whose lines are all intact is captured again with the
    same native turn id, prompt and outcome. The lines of T are what the reducer reads for T's
    text and its completion:
    (a) T's span, from its opening `task_started` to its closing `task_complete`: every record
        in it that is not inert, and no damaged or inserted line in it that could be read as a
        record that is not inert. Inert for an explicit turn's text are: turn_context,
        compacted, world_state and inter-agent records; response_items other than role:assistant
        messages (reasoning, tool calls and outputs, developer messages, and role:user messages,
        which are prompts only in a file without user_message events); event_msgs other than
        task/turn_started, task/turn_complete, turn_aborted, user_message, agent_message,
        item_completed and thread_rolled_back (token counts, tool ends, reasoning, renames...);
        lines the reader skips. Their only effect is on activity flags, which decide nothing for
        a turn that has a `task_complete`.
    (b) no damaged line outside the span that could be read as a non-inert record names T's
        turn id, or the id of another turn named inside T's span (the reducer routes those by
        id wherever they are);
    (c) the opening line of every other turn named inside T's span is intact (else its events
        fall back to T, the open turn);
    (d) the session meta line(s) are intact, and no damaged line before T's closing line could be
        read as a session meta (a foreign meta opens a fork's copied region, which makes later
        turns inherited) and none anywhere as a `thread_rolled_back` (it drops finished turns).
    A turn without a `task_started`/`task_complete` pair (older rollouts' implicit turns,
    "rollout-N") depends on the lines before and after it and is required only of an undamaged
    file; so is every turn of an original that took its prompts from response items.
P5. No turn holds text that was not in its own lines: no captured turn holds the prompt or answer
    of two turns of the original (`support/own_turns.py`), whatever was damaged.
P6. A rollout that moves to another cwd (its last intact turn_context, changed on top of the
    damage) reports it: a MEMORY_EXCLUDE `cwd:` rule for the new directory matches the task,
    when the meta lines are intact and no damaged line reads as a meta (else the turn_context
    may lie in a fork's copied region).
"""

from __future__ import annotations

import json
import posixpath
import tempfile
import traceback
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.models import ParsedTask, ParseResult
from memory_pipeline.forget.privacy import Rule
from memory_pipeline_tests.support.mutations import BOM, MOVED_CWDS, Mutated, fixture_lines
from memory_pipeline_tests.support.own_turns import own_turn_violations

DATA = Path(__file__).resolve().parent.parent / "capture" / "data" / "codex"
# The repository's copies of the real rollouts of /work/shared/fixtures/codex (byte for byte,
# licenses beside them): a Codex Desktop 0.104 turn with commentary and tool calls, a Codex CLI
# 0.125 TUI turn with AGENTS.md context, and a two-turn `codex exec` session.
CODEX_FIXTURES: tuple[Path, ...] = tuple(sorted(DATA.rglob("*.jsonl")))

_OPENING = ("task_started", "turn_started")
_CLOSING = ("task_complete", "turn_complete")
_INERT_ENVELOPES = (
    "turn_context",
    "compacted",
    "world_state",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
)
_TURN_EVENTS = (
    *_OPENING,
    *_CLOSING,
    "turn_aborted",
    "user_message",
    "agent_message",
    "item_completed",
    "thread_rolled_back",
)


@dataclass(frozen=True)
class Span:
    first: int  # index of the turn's task_started line in the original
    last: int  # index of its task_complete line
    relevant: frozenset[int]  # indices in [first, last] of records that are not inert
    others: frozenset[str]  # ids of other turns named by those records


@dataclass(frozen=True)
class CodexOriginal:
    """An undamaged rollout: its name (the thread uuid is in it), lines, parse and turn spans."""

    name: str
    lines: list[bytes]
    task: ParsedTask
    spans: dict[str, Span]  # native turn id -> span, for turns with explicit markers
    openings: dict[str, int]  # turn id -> index of its task_started line
    meta_lines: frozenset[int]
    # Moving the cwd of its last turn_context is reported in the undamaged rollout (it is not
    # part of a fork's inherited copy): P6 applies.
    context_moves: bool = False


def _objects(raw: bytes) -> list[dict[str, Any]]:
    """Every JSON object a reader could take from one (possibly damaged) line: each part between
    newlines, without a BOM, decoded even where it is not UTF-8 (replacement characters)."""
    out = []
    for part in raw.split(b"\n"):
        part = part.strip()
        if part.startswith(BOM):
            part = part[len(BOM) :]
        try:
            obj = json.loads(part.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _payload(obj: dict[str, Any]) -> dict[str, Any]:
    payload = obj.get("payload")
    return payload if isinstance(payload, dict) else {}


def _is_meta(obj: dict[str, Any]) -> bool:
    legacy = "type" not in obj and "record_type" not in obj and "id" in obj and "timestamp" in obj
    return obj.get("type") == "session_meta" or legacy


def _is_rollback(obj: dict[str, Any]) -> bool:
    return _payload(obj).get("type") == "thread_rolled_back"


def _inert(obj: dict[str, Any]) -> bool:
    """P4 (a): the reducer takes nothing from this record for an explicit turn's text."""
    if obj.get("record_type") is not None:
        return True
    rtype = obj.get("type")
    if _is_meta(obj) or (rtype is None and "role" in obj):
        return False
    if not isinstance(rtype, str):
        return True  # no type, or one of the wrong JSON type: skipped
    item = _payload(obj) if "payload" in obj else obj  # enveloped, or a bare ResponseItem
    if rtype in _INERT_ENVELOPES:
        return True
    if rtype == "event_msg":
        return _payload(obj).get("type") not in _TURN_EVENTS
    if rtype == "response_item" or "payload" not in obj:
        if item.get("type") != "message":
            return True
        role = item.get("role")
        return role != "assistant" and ("payload" in obj or role != "user")
    return False  # an unknown envelope type: not assumed inert


def _relevant(raw: bytes) -> list[dict[str, Any]]:
    return [o for o in _objects(raw) if not _inert(o)]


def _parse_lines(name: str, lines: list[bytes]) -> tuple[ParseResult, set[date]]:
    """Parse and peek a rollout written under `name` into a fresh, throwaway Codex home."""
    with tempfile.TemporaryDirectory(prefix="fuzz-codex-") as tmp:
        home = Path(tmp)
        path = home / "sessions" / name
        path.parent.mkdir(parents=True)
        path.write_bytes(b"\n".join(lines) + b"\n")
        conn = CodexConnector(home)
        return conn.parse(path), conn.task_days(path)


def codex_original(path: Path) -> CodexOriginal:
    lines = fixture_lines(Path(path).read_bytes())
    result, _days = _parse_lines(Path(path).name, lines)
    assert len(result.tasks) == 1, f"{path} is not a one-task rollout: {result.issues}"
    task = result.tasks[0]
    objects = [(_objects(line) or [{}])[0] for line in lines]
    openings: dict[str, int] = {}
    closings: dict[str, int] = {}
    for i, obj in enumerate(objects):
        p = _payload(obj)
        turn_id = p.get("turn_id")
        if isinstance(turn_id, str) and p.get("type") in _OPENING:
            openings.setdefault(turn_id, i)
        elif isinstance(turn_id, str) and p.get("type") in _CLOSING:
            closings[turn_id] = i
    from_items = "prompts_from_response_items" in [i.reason for i in result.issues]
    spans: dict[str, Span] = {}
    for turn in task.turns:
        tid = turn.native_turn_id or ""
        if from_items or tid not in openings or tid not in closings:
            continue
        first, last = openings[tid], closings[tid]
        relevant = frozenset(i for i in range(first, last + 1) if not _inert(objects[i]))
        named = {_payload(objects[i]).get("turn_id") for i in relevant}
        others = frozenset(n for n in named if isinstance(n, str) and n != tid)
        spans[tid] = Span(first, last, relevant, others)
    metas = frozenset(i for i, obj in enumerate(objects) if _is_meta(obj))
    moved = list(lines)
    contexts = [i for i, line in enumerate(lines) if _is_context(line)]
    context_moves = False
    if contexts:
        obj = json.loads(moved[contexts[-1]])
        obj["payload"]["cwd"] = MOVED_CWDS[0]
        moved[contexts[-1]] = json.dumps(obj).encode()
        moved_result, _ = _parse_lines(Path(path).name, moved)
        context_moves = bool(moved_result.tasks) and MOVED_CWDS[0] in (
            moved_result.tasks[0].native_context.get("cwds") or []
        )
    return CodexOriginal(Path(path).name, lines, task, spans, openings, metas, context_moves)


def _turn_is_intact(
    tid: str, original: CodexOriginal, mutated: Mutated, position: dict[int, int]
) -> bool:
    """P4 (a)-(d) for one turn of the original."""
    span = original.spans.get(tid)
    if span is None:
        return not mutated.damaged
    start, end = position.get(span.first), position.get(span.last)
    if start is None or end is None:
        return False
    # (a) relevant originals unchanged; nothing damaged in the span reads as relevant
    if any(position.get(i) in mutated.damaged for i in span.relevant):
        return False
    inside = [i for i in mutated.damaged if start <= i <= end]
    if any(_relevant(mutated.lines[i]) for i in inside):
        return False
    # (b) no readable turn record outside the span names T or a turn named in it
    ids = [t.encode() for t in (tid, *span.others)]
    outside = [i for i in mutated.damaged if not start <= i <= end]
    for i in outside:
        raw = mutated.lines[i]
        if any(t in raw for t in ids) and _relevant(raw):
            return False
    # (c) the opening lines of the other turns named in the span
    if any(position.get(original.openings.get(o, -1)) in mutated.damaged for o in span.others):
        return False
    # (d) meta lines intact; no damaged meta before T's end, no damaged rollback anywhere
    if any(position.get(m) in mutated.damaged for m in original.meta_lines):
        return False
    for i in mutated.damaged:
        objs = _objects(mutated.lines[i])
        if any(_is_rollback(o) for o in objs) or (i < end and any(_is_meta(o) for o in objs)):
            return False
    return True


def check_codex(mutated: Mutated, original_turns: CodexOriginal) -> None:
    """Raise AssertionError if a damaged copy of `original_turns` breaks P1-P4 (module doc)."""
    original = original_turns
    try:
        result, days = _parse_lines(original.name, mutated.lines)
    except Exception as exc:  # P1: nothing escapes parse() or task_days()
        raise AssertionError(
            f"P1 exception escaped the connector ({mutated.kinds}):\n{traceback.format_exc()}"
        ) from exc
    reasons = [i.reason for i in result.issues]
    assert "parser_error" not in reasons, f"P1 file-level failure {mutated.kinds}: {result.issues}"

    position = {o: i for i, o in enumerate(mutated.origin) if o is not None}
    damaged_objects = [o for i in mutated.damaged for o in _objects(mutated.lines[i])]
    if all(position.get(m) not in mutated.damaged for m in original.meta_lines):  # P2
        assert len(result.tasks) == 1, f"P2 no task ({mutated.kinds}): {result.issues}"
        if not any(_is_meta(o) for o in damaged_objects):
            assert result.tasks[0].native_id == original.task.native_id, "P2 another thread"
    for task in result.tasks:  # P3
        assert days == {task.started_at.date()}, f"P3 task_days {days} != {task.started_at}"

    # P5: no turn holds text of two turns of the original (a damaged line glued them).
    pieces = [
        (t.native_turn_id, text) for t in original.task.turns for text in (t.prompt, t.outcome)
    ]
    captured = [(t.prompt, t.outcome) for task in result.tasks for t in task.turns]
    problems = own_turn_violations(pieces, captured, [mutated.lines[i] for i in mutated.damaged])
    assert not problems, f"P5 {mutated.kinds}, damaged lines {sorted(mutated.damaged)}: {problems}"
    _check_moved_cwd(mutated, original, position, damaged_objects)

    got = {(t.native_turn_id, t.prompt, t.outcome) for task in result.tasks for t in task.turns}
    for turn in original.task.turns:  # P4
        tid = turn.native_turn_id or ""
        if _turn_is_intact(tid, original, mutated, position):
            assert (turn.native_turn_id, turn.prompt, turn.outcome) in got, (
                f"P4 intact turn {tid} lost or changed ({mutated.kinds}, damaged lines "
                f"{sorted(mutated.damaged)}): {result.issues}"
            )


def _check_moved_cwd(
    mutated: Mutated,
    original: CodexOriginal,
    position: dict[int, int],
    damaged_objects: list[dict[str, Any]],
) -> None:
    """P6: the rollout moves to another cwd at its last intact turn_context (on top of the
    damage): a MEMORY_EXCLUDE rule for that directory matches the task. Required when the meta
    lines are intact and no damaged line reads as a meta (which could open a fork's copied
    region, where turn_context lines are the parent's)."""
    if any(position.get(m) in mutated.damaged for m in original.meta_lines):
        return
    if any(_is_meta(o) for o in damaged_objects):
        return
    lines = list(mutated.lines)
    at = next(
        (
            i
            for i in range(len(lines) - 1, -1, -1)
            if i not in mutated.damaged and _is_context(lines[i])
        ),
        None,
    )
    if at is None or at <= max(original.meta_lines, default=-1):
        return
    obj = json.loads(lines[at])
    obj["payload"]["cwd"] = MOVED_CWDS[0]
    lines[at] = json.dumps(obj).encode()
    result, _days = _parse_lines(original.name, lines)
    if not original.context_moves or not result.tasks:
        return
    rule = Rule("cwd", posixpath.dirname(MOVED_CWDS[0]) + "/*")
    context = result.tasks[0].native_context
    assert rule.matches("codex", context), f"P6 moved cwd not reported ({mutated.kinds}): {context}"


def _is_context(raw: bytes) -> bool:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(obj, dict)
        and obj.get("type") == "turn_context"
        and isinstance(obj.get("payload"), dict)
    )
