"""Claude Code: a bad line costs that line (and at most the turn it belongs to), never the session.

Each case damages one line of the real 2.0.64 main transcript (three turns: "create hello.py, md
and js", "update py with one liner comment", "delete js") and checks that the file still yields
its task, that the turns the bad line does not touch are captured exactly, and that the bad line
is recorded as a ParseIssue with its line number.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline.capture.claude_code import ClaudeCodeConnector
from memory_pipeline.capture.models import ParsedTask, ParseResult

DATA = Path(__file__).parent / "data" / "claude"
MAIN = DATA / "codemie-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
LATER = datetime(2099, 1, 1, tzinfo=UTC)
DEEP = b'{"type": "user", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
ORIGINAL = [json.loads(line) for line in MAIN.read_bytes().splitlines()]
# Line numbers (1-based) of the fixture, see the module docstring.
PROMPT_2, TOOL_RESULT_2, ANSWER_2, PROMPT_3 = 15, 17, 20, 22


def _turns(task: ParsedTask) -> list[tuple[str, str]]:
    return [(t.prompt, t.outcome) for t in task.turns]


ALL_TURNS = _turns(
    ClaudeCodeConnector(Path("/nonexistent"), now=lambda: LATER).parse(MAIN).tasks[0]
)
TURN_1, TURN_2, TURN_3 = ALL_TURNS


def write(home: Path, lines: list[bytes]) -> Path:
    path = home / "projects" / "codemie-tmp-private" / MAIN.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def variant(home: Path, line_no: int, change: Callable[[dict[str, Any]], None]) -> Path:
    """The fixture with the record on `line_no` changed in place."""
    lines = MAIN.read_bytes().splitlines()
    record = json.loads(lines[line_no - 1])
    change(record)
    lines[line_no - 1] = json.dumps(record).encode()
    return write(home, lines)


def parse(home: Path, path: Path) -> tuple[ParsedTask, ParseResult]:
    result = ClaudeCodeConnector(home, now=lambda: LATER).parse(path)
    assert "parser_error" not in [i.reason for i in result.issues], result.issues
    assert len(result.tasks) == 1, result
    return result.tasks[0], result


def issues_at(result: ParseResult, line: int) -> list[str]:
    return [i.reason for i in result.issues if i.line == line]


def test_deep_line_in_the_middle_is_skipped_and_every_turn_kept(tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines()
    path = write(tmp_path, [*lines[:14], DEEP, *lines[14:]])  # between turn 1 and turn 2
    task, result = parse(tmp_path, path)
    assert _turns(task) == ALL_TURNS
    assert issues_at(result, 15), result.issues


def test_deep_line_replacing_a_tool_result_keeps_the_other_turns(tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines()
    lines[TOOL_RESULT_2 - 1] = DEEP
    task, result = parse(tmp_path, write(tmp_path, lines))
    assert TURN_1 in _turns(task) and TURN_3 in _turns(task)
    assert issues_at(result, TOOL_RESULT_2), result.issues


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        target = record
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        (PROMPT_2, ("message", "content"), {"text": "update py"}),
        (PROMPT_2, ("message",), ["not", "a", "message"]),
        (PROMPT_2, ("message", "content"), [{"type": "text", "text": ["x"]}]),
        (PROMPT_2, ("type",), ["user"]),
        (PROMPT_2, ("isSidechain",), True),
        (PROMPT_2, ("uuid",), ["1baa8499-2c8c-4b54-a4c1-eb6a9e3a8a1e"]),
        (ANSWER_2, ("uuid",), ["a4299e9e"]),
        (ANSWER_2, ("message", "content"), {"type": "text"}),
        (PROMPT_3, ("parentUuid",), ["a4299e9e"]),
        (PROMPT_3, ("parentUuid",), {"uuid": "a4299e9e"}),
        (TOOL_RESULT_2, ("timestamp",), "0001-01-01T00:00:00+01:00"),
        (TOOL_RESULT_2, ("timestamp",), "9999-12-31T23:59:59-14:00"),
        (TOOL_RESULT_2, ("sessionId",), ["4c2ddfdc"]),
    ],
    ids=[
        "prompt-content-dict",
        "prompt-message-list",
        "prompt-text-list",
        "prompt-type-list",
        "prompt-flagged-sidechain",
        "prompt-uuid-list",
        "answer-uuid-list",
        "answer-content-dict",
        "parent-uuid-list",
        "parent-uuid-dict",
        "timestamp-year-1",
        "timestamp-year-9999",
        "session-id-list",
    ],
)
def test_a_field_of_the_wrong_type_costs_at_most_its_own_turn(
    tmp_path: Path, line: int, field: tuple[str, ...], value: Any
) -> None:
    task, result = parse(tmp_path, variant(tmp_path, line, _set(field, value)))
    assert task.native_id == MAIN.stem
    turns = _turns(task)
    # The turn the line belongs to may be lost; the others are captured exactly, and no turn is
    # captured with another turn's answer.
    touched = {PROMPT_2: TURN_2, ANSWER_2: TURN_2, TOOL_RESULT_2: TURN_2, PROMPT_3: TURN_3}[line]
    assert [t for t in ALL_TURNS if t != touched] == [t for t in turns if t != touched]
    assert set(turns) <= set(ALL_TURNS), turns
    if field != ("isSidechain",) and field != ("sessionId",):
        assert issues_at(result, line), result.issues


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00"])
def test_out_of_range_timestamp_is_missing_and_recorded(tmp_path: Path, stamp: str) -> None:
    path = variant(tmp_path, 2, _set(("timestamp",), stamp))  # the first prompt
    task, result = parse(tmp_path, path)
    assert _turns(task) == ALL_TURNS
    assert task.turns[0].started_at is None
    # The task starts at the next record that has a usable time, and task_days agrees.
    assert task.started_at == datetime(2025, 12, 10, 19, 37, 48, 19000, tzinfo=UTC)
    connector = ClaudeCodeConnector(tmp_path, now=lambda: LATER)
    assert connector.task_days(path) == {date(2025, 12, 10)}
    bad = [i for i in result.issues if i.line == 2]
    assert [i.reason for i in bad] == ["bad_timestamp"] and stamp in bad[0].detail


def _first_record(rtype: Any, stamp: str) -> bytes:
    record = {"type": rtype, "uuid": "u0", "parentUuid": None, "timestamp": stamp}
    return json.dumps(record).encode()


@pytest.mark.parametrize(
    "first_line",
    [
        DEEP,
        _first_record(["user"], "2020-01-01T00:00:00Z"),
        b'{"type": {"a": 1}, "uuid": ["u0"], "parentUuid": [], "timestamp": 7}',
        _first_record("user", "0001-01-01T00:00:00+01:00"),
        _first_record("user", "9999-12-31T23:59:59-14:00"),
    ],
    ids=["deep", "type-list", "all-wrong", "year-1", "year-9999"],
)
def test_task_days_never_raises_and_agrees_with_parse(tmp_path: Path, first_line: bytes) -> None:
    path = write(tmp_path, [first_line, *MAIN.read_bytes().splitlines()])
    connector = ClaudeCodeConnector(tmp_path, now=lambda: LATER)
    days = connector.task_days(path)
    task, _ = parse(tmp_path, path)
    assert days == {task.started_at.date()} == {date(2025, 12, 10)}
    assert _turns(task) == ALL_TURNS


def test_a_duplicated_old_record_at_the_end_does_not_rewind_the_session(tmp_path: Path) -> None:
    """A copy of an earlier record (same uuid) appended at the end is a replay: it changes
    nothing, it does not make the session's live leaf jump back to turn one."""
    lines = MAIN.read_bytes().splitlines()
    task, _ = parse(tmp_path, write(tmp_path, [*lines, lines[2]]))
    assert _turns(task) == ALL_TURNS


def test_a_lost_prompt_line_does_not_give_its_answer_to_the_turn_before(tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines()
    lines[PROMPT_2 - 1] = lines[PROMPT_2 - 1][:40]  # cut mid-line: invalid JSON
    task, result = parse(tmp_path, write(tmp_path, lines))
    assert _turns(task) == [TURN_1, TURN_3]
    assert issues_at(result, PROMPT_2) == ["invalid_json"]
    assert "broken_chain" in [i.reason for i in result.issues]


def test_a_lost_narration_line_is_bridged(tmp_path: Path) -> None:
    """A line lost right after a prompt cannot hide another prompt: the walk bridges it."""
    lines = MAIN.read_bytes().splitlines()
    lines[2] = b"{broken"  # turn 1's narration before its tool calls
    task, _ = parse(tmp_path, write(tmp_path, lines))
    assert _turns(task) == ALL_TURNS


def test_a_reader_failure_keeps_what_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the shared reader raises, the connector records it and uses the lines before."""
    from memory_pipeline.capture.claude_code import load

    real_iter = load.iter_jsonl

    def failing(path: Path, read: Any) -> Any:
        for line_no, obj in real_iter(path, read):
            if line_no == PROMPT_2:
                raise RecursionError("maximum recursion depth exceeded")
            yield line_no, obj

    monkeypatch.setattr(load, "iter_jsonl", failing)
    connector = ClaudeCodeConnector(tmp_path, now=lambda: LATER)
    result = connector.parse(MAIN)
    assert [_turns(t) for t in result.tasks] == [[TURN_1]]
    assert [i.reason for i in result.issues] == ["reader_error"]
    assert "RecursionError" in result.issues[0].detail
    assert connector.task_days(MAIN) == {date(2025, 12, 10)}


def test_a_deep_history_jsonl_is_not_the_session_files_problem(tmp_path: Path) -> None:
    path = write(tmp_path, MAIN.read_bytes().splitlines())
    (tmp_path / "history.jsonl").write_bytes(DEEP + b"\n")
    task, result = parse(tmp_path, path)
    assert _turns(task) == ALL_TURNS and result.issues == []


def test_a_deep_or_odd_meta_sidecar_is_recorded_not_fatal(tmp_path: Path) -> None:
    source = DATA / "claude-code-log-synthetic" / "55550000-0000-4000-8000-000000000001"
    target = tmp_path / "projects" / "p" / source.name / "subagents"
    target.mkdir(parents=True)
    agent = target / "agent-showcol1.jsonl"
    agent.write_bytes((source / "subagents" / "agent-showcol1.jsonl").read_bytes())
    meta = target / "agent-showcol1.meta.json"
    connector = ClaudeCodeConnector(tmp_path, now=lambda: LATER)

    meta.write_bytes(b'{"agentType": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    result = connector.parse(agent)
    [task] = result.tasks  # without its meta evidence the thread is a plain sidechain
    assert task.ownership.ownership == "delegated"
    assert task.ownership.reason == "claude_code:sidechain"
    assert [i.reason for i in result.issues] == ["invalid_json"]
    assert "RecursionError" in result.issues[0].detail

    meta.write_text(
        '{"agentType": [[["x"]]], "toolUseId": NaN, "description": {"a": 1}, "spawnDepth": 2}'
    )
    [task] = connector.parse(agent).tasks
    # Evidence stays storable: only JSON scalars are kept verbatim, other values by type name.
    assert task.ownership.evidence["agentType"] == "<list>"
    assert task.ownership.evidence["toolUseId"] == "<float>"
    assert task.ownership.evidence["description"] == "<dict>"
    assert task.ownership.evidence["spawnDepth"] == 2
    assert task.title is None


def test_any_exception_reading_one_record_costs_that_line_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-line safety net: whatever raises while one record is interpreted (here a bug
    simulated on turn two's answer) becomes a `bad_record` issue with the line and the
    exception type, and the rest of the file is used."""
    from memory_pipeline.capture.claude_code import load

    real_fill = load._fill_assistant

    def failing(rec: Any, obj: dict[str, Any], message: Any, read: Any) -> None:
        if rec.line == ANSWER_2:
            raise TypeError("unhashable type: 'list'")
        real_fill(rec, obj, message, read)

    monkeypatch.setattr(load, "_fill_assistant", failing)
    task, result = parse(tmp_path, write(tmp_path, MAIN.read_bytes().splitlines()))
    assert _turns(task) == [TURN_1, TURN_3]
    bad = [i for i in result.issues if i.reason == "bad_record"]
    assert [(i.line, i.detail) for i in bad] == [(ANSWER_2, "TypeError: unhashable type: 'list'")]


@pytest.mark.parametrize("damaged_id", ["4c2ddfdc</memory>-b619", "4c2d\x00dfdc", "x" * 300])
def test_a_damaged_session_id_does_not_move_an_old_layout_side_thread(
    tmp_path: Path, damaged_id: str
) -> None:
    """Old flat layout: the parent session is the one whose main file lies beside the thread,
    even when the first record names another (or no valid file name at all)."""
    folder = tmp_path / "projects" / "codemie-tmp-private"
    folder.mkdir(parents=True)
    (folder / MAIN.name).write_bytes(MAIN.read_bytes())
    source = MAIN.with_name("agent-36541525.jsonl").read_bytes().splitlines()
    first = json.loads(source[0])
    first["sessionId"] = damaged_id
    agent = folder / "agent-36541525.jsonl"
    agent.write_bytes(b"\n".join([json.dumps(first).encode(), *source[1:]]) + b"\n")
    task, _ = parse(tmp_path, agent)
    assert task.native_id == f"{MAIN.stem}/agent-36541525"
    assert task.ownership.reason == "claude_code:warmup"
