"""The Claude Code connector's isolation property, checked on one damaged copy of a transcript.

Used by `memory_pipeline_tests/capture/test_fuzz_claude_code.py` (a few hundred cases) and by
`scripts/fuzz_capture.py` (10,000+):

    original = original_turns(CLAUDE_CODE_FIXTURES[0])
    strategy = mutated_file(original.lines)          # memory_pipeline_tests/support/mutations.py
    check_claude_code(mutated, original)             # raises AssertionError on a violation

The property (`check_claude_code`), for a file M made from an original file O by damaging or
inserting a few lines (`Mutated.damaged`), both parsed by a connector for which every file is
settled (so completion depends on answers only, not on the clock):

1. Nothing escapes. `parse(M)` and `task_days(M)` return normally; no `parser_error` (the
   whole-file last resort) is recorded; every damaged line the shared reader cannot decode is
   recorded as an issue on its line; ordinals are 0..n-1; when a task is returned,
   `task_days(M) == {task.started_at.date()}` (the two share one rule).
2. The task survives. If M still holds an intact threaded record with a usable timestamp and an
   intact record carrying the session's id (what identifies the session), and neither is
   shadowed (below), a task is returned with O's native id.
3. Good turns are captured exactly. Let L be O's live leaf (the last user/assistant record of the
   live thread) and E the last record of O's live chain (L, or the record a `last-prompt` /
   `summary` leafUuid after L names). The *chain suffix* of a complete turn t of O is the list of
   records of O's live chain from t's prompt record through E: exactly the records that decide t
   (its prompt, its body, every later record that bounds it). t must be captured in M, with the
   same native turn id, prompt, outcome, times and message ids (its ordinal may move), when:
   a. every line of t's chain suffix is intact in M (byte-identical);
   b. none of those records is shadowed: no damaged line before it in M decodes to a threaded
      record with the same uuid (the first occurrence of a uuid wins);
   c. M's live leaf is still L: computed by the same documented rule on M's decodable lines (the
      last user/assistant record whose uuid is new, in the thread O's leaf is in), so a damaged
      line that becomes a newer message, or moves a side thread to the other isSidechain value,
      frees t;
   d. the rewind evidence is unchanged: the leafUuid of the last leaf hint after the leaf line is
      the same in M as in O, and if O ignored it (it names an ancestor of L), it names a record
      of t's suffix (an ancestor above t could be cut off from L by damage above t, and would
      then be taken as a rewind).
   Damage above t (between the root and t's prompt) never frees t: a lost or unreadable record
   there is bridged or breaks the chain before t's prompt, which starts its own cycle anyway.
4. No turn holds text that was not in its own lines: no captured turn holds the prompt or answer
   of two turns of O (`support/own_turns.py`), whatever was damaged.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.claude_code import ClaudeCodeConnector, is_side_thread
from memory_pipeline.capture.claude_code.chain import live_chain
from memory_pipeline.capture.claude_code.load import load
from memory_pipeline.capture.claude_code.records import THREADED_TYPES, parse_timestamp
from memory_pipeline.capture.jsonl import JsonlRead
from memory_pipeline.capture.models import ParsedTask, ParsedTurn, ParseResult
from memory_pipeline_tests.support.mutations import BOM, Mutated, fixture_lines
from memory_pipeline_tests.support.own_turns import own_turn_violations

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "memory_pipeline_tests" / "capture" / "data" / "claude"
DEMO = REPO / "memory_pipeline" / "demo" / "corpus" / "claude_home" / "projects"
# Real transcripts (see data/claude/README.md for where each comes from and its license), plus
# one file of the bundled demo corpus for the 2.1.x envelope (turn_duration, last-prompt,
# ai-title), which the real fixtures lack.
CLAUDE_CODE_FIXTURES: tuple[Path, ...] = (
    DATA / "codemie-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
    DATA / "codemie-tmp-private" / "agent-36541525.jsonl",
    DATA / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents" / "agent-aac57f5.jsonl",
    DATA
    / "claude-code-log-synthetic"
    / "55550000-0000-4000-8000-000000000001"
    / "subagents"
    / "agent-showcol1.jsonl",
    DEMO / "-home-mara-homelab" / "0fa0246b-c0af-4dcb-ba29-2c9a6e43758d.jsonl",
)
# Far after every file's mtime: every file is settled.
LATER = datetime(2099, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class OriginalTurns:
    """An undamaged transcript, parsed, with what decides each of its turns."""

    source: Path  # the fixture
    relative: Path  # its place under `<claude_home>/projects/`
    lines: list[bytes]
    task: ParsedTask
    flag: bool  # isSidechain of the live thread
    leaf: str  # uuid of L
    hint: str | None  # leafUuid of the last leaf hint after L's line
    walk: frozenset[str]  # uuids on the chain from L to the root (was the hint ignored?)
    suffix: dict[str, tuple[int, ...]]  # native_turn_id -> line indices of its chain suffix
    uuid_of: dict[int, str]  # line index -> uuid of the threaded record on it

    def turns(self) -> list[ParsedTurn]:
        return self.task.turns


def original_turns(source: Path) -> OriginalTurns:
    """Parse `source` as it would be found at its place in a Claude home."""
    relative = _relative(source)
    lines = fixture_lines(source.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        path = _install(Path(tmp), source, relative, b"\n".join(lines) + b"\n")
        result = _connector(Path(tmp)).parse(path)
        assert result.issues == [] and len(result.tasks) == 1, (source, result.issues)
        read = JsonlRead(path)
        loaded = load(path, read)
        chain = live_chain(loaded, read, main_thread=not is_side_thread(path))
    assert chain.records and not chain.breaks, source
    flag = chain.records[-1].sidechain
    leaf, leaf_line = loaded.last_message[flag]
    last_hint = loaded.leaf_hints[-1] if loaded.leaf_hints else None
    hint = last_hint.leaf if last_hint is not None and last_hint.line > leaf_line else None
    walk: set[str] = set()
    cur = loaded.records.get(leaf)
    while cur is not None and cur.uuid not in walk:
        walk.add(cur.uuid)
        cur = loaded.records.get(cur.parent or cur.logical_parent or "")
    positions = {rec.uuid: i for i, rec in enumerate(chain.records)}
    task = result.tasks[0]
    suffix = {
        turn.native_turn_id or "": tuple(
            rec.line - 1 for rec in chain.records[positions[turn.native_turn_id or ""] :]
        )
        for turn in task.turns
    }
    return OriginalTurns(
        source=source,
        relative=relative,
        lines=lines,
        task=task,
        flag=flag,
        leaf=leaf,
        hint=hint,
        walk=frozenset(walk),
        suffix=suffix,
        uuid_of={rec.line - 1: rec.uuid for rec in loaded.order},
    )


def check_claude_code(mutated: Mutated, original_turns: OriginalTurns) -> None:
    """Raise AssertionError if `mutated` (a damaged copy of the original) breaks the property
    stated in this module's docstring."""
    o = original_turns
    with tempfile.TemporaryDirectory() as tmp:
        path = _install(Path(tmp), o.source, o.relative, mutated.data())
        connector = _connector(Path(tmp))
        result = connector.parse(path)
        days = connector.task_days(path)
    label = f"{o.source.name} damaged by {mutated.kinds} at lines {sorted(mutated.damaged)}"
    _check_nothing_escapes(mutated, result, days, label)
    task = result.tasks[0] if result.tasks else None
    view = _View(mutated)
    if _identity_survives(o, mutated, view):
        assert task is not None, f"{label}: the task is lost; issues {result.issues}"
        assert task.native_id == o.task.native_id, f"{label}: native id {task.native_id!r}"
    # 4. No turn holds text that was not in its own lines (support/own_turns.py).
    pieces = [(t.native_turn_id, text) for t in o.turns() for text in (t.prompt, t.outcome)]
    problems = own_turn_violations(
        pieces,
        [(t.prompt, t.outcome) for t in (task.turns if task else [])],
        [mutated.lines[i] for i in mutated.damaged],
    )
    assert not problems, f"{label}: {problems}"
    captured = {turn.native_turn_id: turn for turn in task.turns} if task else {}
    for turn in o.turns():
        if not _protected(turn, o, mutated, view):
            continue
        got = captured.get(turn.native_turn_id)
        assert got is not None, f"{label}: lost the intact turn {turn.prompt[:60]!r}"
        assert _essence(got) == _essence(turn), f"{label}: turn changed\n{got}\n!=\n{turn}"


# ---------------------------------------------------------------------------------------------


def _check_nothing_escapes(mutated: Mutated, result: ParseResult, days: Any, label: str) -> None:
    reasons = [issue.reason for issue in result.issues]
    assert "parser_error" not in reasons, f"{label}: {result.issues}"
    assert "reader_error" not in reasons, f"{label}: {result.issues}"
    assert len(result.tasks) <= 1, label
    issue_lines = {issue.line for issue in result.issues}
    for index, line_no, piece in _pieces(mutated):
        if index in mutated.damaged and not _blank(piece) and _decode(piece) is None:
            assert line_no in issue_lines, f"{label}: undecodable line {line_no} unrecorded"
    if result.tasks:
        task = result.tasks[0]
        assert [t.ordinal for t in task.turns] == list(range(len(task.turns))), label
        assert days == {task.started_at.date()}, f"{label}: task_days {days}"


class _View:
    """M's decodable lines, read by the documented rules (first occurrence wins)."""

    def __init__(self, mutated: Mutated) -> None:
        self.first: dict[str, int] = {}  # uuid -> index of the line that defines it
        self.records: dict[int, dict[str, Any]] = {}  # index -> threaded record
        messages: dict[bool, tuple[str, int]] = {}
        hint: tuple[str, int] | None = None
        for index, _, piece in _pieces(mutated):
            obj = _decode(piece)
            if obj is None or not isinstance(obj.get("type"), str):
                continue
            uuid = obj.get("uuid")
            if obj["type"] in THREADED_TYPES or (isinstance(uuid, str) and "parentUuid" in obj):
                if not isinstance(uuid, str) or not uuid or uuid in self.first:
                    continue
                self.first[uuid] = index
                self.records[index] = obj
                if obj["type"] in ("user", "assistant"):
                    messages[obj.get("isSidechain") is True] = (uuid, index)
            elif obj["type"] in ("summary", "last-prompt"):
                leaf = obj.get("leafUuid")
                if isinstance(leaf, str) and leaf:
                    hint = (leaf, index)
        self.messages = messages
        self.last_hint = hint

    def leaf(self, main: bool) -> tuple[bool, str, int] | None:
        flag = not main and True in self.messages
        if flag not in self.messages:
            return None
        uuid, index = self.messages[flag]
        return flag, uuid, index


def _protected(turn: ParsedTurn, o: OriginalTurns, mutated: Mutated, view: _View) -> bool:
    """Conditions a-d of the module docstring."""
    suffix = o.suffix[turn.native_turn_id or ""]
    position = _intact_positions(mutated)
    if any(index not in position for index in suffix):
        return False  # a
    if any(view.first.get(o.uuid_of[index]) != position[index] for index in suffix):
        return False  # b
    leaf = view.leaf(main=not is_side_thread(o.source))
    if leaf is None or leaf[:2] != (o.flag, o.leaf):
        return False  # c
    hint = view.last_hint[0] if view.last_hint and view.last_hint[1] > leaf[2] else None
    if hint != o.hint:
        return False  # d
    suffix_uuids = {o.uuid_of[index] for index in suffix}
    return not (o.hint is not None and o.hint in o.walk and o.hint not in suffix_uuids)


def _identity_survives(o: OriginalTurns, mutated: Mutated, view: _View) -> bool:
    position = _intact_positions(mutated)
    session = o.task.native_id.split("/")[0]
    timed = carrier = False
    for index, at in position.items():
        uuid = o.uuid_of.get(index)
        if uuid is None or view.first.get(uuid) != at:
            continue
        record = view.records[at]
        timed = timed or parse_timestamp(record.get("timestamp")) is not None
        carrier = carrier or record.get("sessionId") == session
    return timed and carrier


def _pieces(mutated: Mutated) -> list[tuple[int, int, bytes]]:
    """(index in `mutated.lines`, 1-based line number in the file, bytes) of every file line: a
    damaged line holding a newline byte is two lines of the file."""
    pieces: list[tuple[int, int, bytes]] = []
    for index, line in enumerate(mutated.lines):
        for piece in line.split(b"\n"):
            pieces.append((index, len(pieces) + 1, piece))
    return pieces


def _intact_positions(mutated: Mutated) -> dict[int, int]:
    """Original line index -> its index in M, for the lines that survived byte for byte."""
    return {
        origin: index
        for index, origin in enumerate(mutated.origin)
        if origin is not None and index not in mutated.damaged
    }


def _essence(turn: ParsedTurn) -> tuple[Any, ...]:
    return (
        turn.native_turn_id,
        turn.prompt,
        turn.outcome,
        turn.started_at,
        turn.completed_at,
        turn.native_message_ids,
    )


def _blank(line: bytes) -> bool:
    """Nothing but whitespace (and a byte order mark): the reader skips it silently."""
    raw = line.strip()
    return not (raw[len(BOM) :] if raw.startswith(BOM) else raw).strip()


def _decode(line: bytes) -> dict[str, Any] | None:
    """A line as the shared reader decodes it (BOM tolerated), or None if it cannot."""
    raw = line.strip()
    if raw.startswith(BOM):
        raw = raw[len(BOM) :].lstrip()
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _relative(source: Path) -> Path:
    """`<project>/<file>`, or `<project>/<session>/subagents/<file>` for the new layout."""
    parts = source.parts
    if "subagents" in parts:
        return Path(*parts[parts.index("subagents") - 2 :])
    return Path(*parts[-2:])


def _install(home: Path, source: Path, relative: Path, data: bytes) -> Path:
    """Write `data` where `source` would live in a Claude home at `home`, with its neighbours:
    a subagent's `.meta.json`, and for the old flat layout the session files beside it."""
    path = home / "projects" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    meta = source.with_name(source.stem + ".meta.json")
    if meta.is_file():
        shutil.copyfile(meta, path.with_name(meta.name))
    if is_side_thread(source) and "subagents" not in source.parts:
        for sibling in source.parent.glob("*.jsonl"):
            if not is_side_thread(sibling):
                shutil.copyfile(sibling, path.with_name(sibling.name))
    return path


def _connector(home: Path) -> ClaudeCodeConnector:
    return ClaudeCodeConnector(home, now=lambda: LATER)
