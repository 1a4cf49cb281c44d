"""One bad line never costs a Codex session (issue 10, findings 2 and 4).

Each test damages one line of a real Codex fixture the way files are damaged in the wild and
checks what a user relies on: the file still yields its task, every turn the bad line does not
touch is captured with the same prompt and outcome, the bad line is a recorded issue (with its
line number), and `task_days` (called by the sensor and `memory-pipeline run` before any job)
never raises.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.models import ParsedTask, ParseResult
from memory_pipeline_tests.support.mutations import BOM, DEEP, fixture_lines

DATA = Path(__file__).parent / "data" / "codex"
TUI = (
    DATA / "codemie" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799"
    ".first-turn.jsonl"
)
EXEC = DATA / "codemie" / "turn-2.synthetic-exec.jsonl"  # two turns, no uuid in the file name
DESKTOP = (
    DATA / "localpush" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)
DEEP_LINE = b'{"timestamp":"2026-05-12T10:00:59.000Z","x":' + b"[" * DEEP + b"]" * DEEP + b"}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "codex_home"


def copy_with(home: Path, fixture: Path, edit) -> Path:
    """The fixture copied into a Codex home under its own name, its lines passed through `edit`
    (which gets and returns the list of raw lines)."""
    lines = edit(fixture_lines(fixture.read_bytes()))
    path = home / "sessions" / "2026" / "05" / "11" / fixture.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def set_fields(line: bytes, **changes: Any) -> bytes:
    """One line with fields replaced; keys are dotted paths (`payload.type`)."""
    obj = json.loads(line)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = obj
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return json.dumps(obj).encode()


def only_task(result: ParseResult) -> ParsedTask:
    assert len(result.tasks) == 1, result.issues
    return result.tasks[0]


def turn_texts(task: ParsedTask) -> list[tuple[str | None, str, str]]:
    return [(t.native_turn_id, t.prompt, t.outcome) for t in task.turns]


def clean(fixture: Path) -> ParsedTask:
    return only_task(CodexConnector(fixture.parent).parse(fixture))


def issue_lines(result: ParseResult) -> dict[int | None, str]:
    return {i.line: i.reason for i in result.issues}


def assert_no_file_level_failure(result: ParseResult) -> None:
    assert "parser_error" not in [i.reason for i in result.issues], result.issues


# --- deep nesting ----------------------------------------------------------------------------


def test_deeply_nested_line_between_turns_costs_only_that_line(home: Path):
    path = copy_with(home, EXEC, lambda lines: [*lines[:13], DEEP_LINE, *lines[13:]])
    result = CodexConnector(home).parse(path)
    assert_no_file_level_failure(result)
    task = only_task(result)
    assert turn_texts(task) == turn_texts(clean(EXEC))
    assert len(task.turns) == 2
    assert 14 in issue_lines(result)


def test_deeply_nested_line_inside_a_turn_keeps_that_turn(home: Path):
    # Line 8 of the fixture is a token_count event in the middle of the first turn.
    path = copy_with(home, EXEC, lambda lines: [*lines[:7], DEEP_LINE, *lines[8:]])
    result = CodexConnector(home).parse(path)
    assert_no_file_level_failure(result)
    assert turn_texts(only_task(result)) == turn_texts(clean(EXEC))
    assert 8 in issue_lines(result)


def test_task_days_and_parse_survive_a_deeply_nested_first_line(home: Path):
    path = copy_with(home, TUI, lambda lines: [DEEP_LINE, *lines])
    conn = CodexConnector(home)
    assert conn.task_days(path) == {date(2026, 5, 11)}
    result = conn.parse(path)
    assert_no_file_level_failure(result)
    task = only_task(result)
    assert task.ownership.reason == "codex:interactive-cli"  # the session meta was kept
    assert turn_texts(task) == turn_texts(clean(TUI))
    assert 1 in issue_lines(result)


def test_deep_but_parseable_meta_value_is_bounded_in_the_evidence(home: Path):
    deep: Any = "cli"
    for _ in range(400):
        deep = [deep]
    path = copy_with(
        home, TUI, lambda lines: [set_fields(lines[0], **{"payload.source": deep}), *lines[1:]]
    )
    task = only_task(CodexConnector(home).parse(path))
    assert task.ownership.ownership == "unknown"  # a nested list is no evidence of anything
    # Evidence and context are kept verbatim but bounded in depth: the task always serialises.
    task.model_dump_json()
    assert len(json.dumps(task.ownership.evidence)) < 1000
    assert turn_texts(task) == turn_texts(clean(TUI))


# --- wrong JSON types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "changes"),
    [
        (8, {"payload.type": ["token_count"]}),  # unhashable where a record type is looked up
        (9, {"payload.type": {"reasoning": True}}),  # a response_item type that is a dict
        (4, {"payload.content.0.type": ["input_text"]}),  # a content part type that is a list
        (2, {"payload.turn_id": ["b2c3d4e5"]}),  # task_started turn_id of the wrong type
        (2, {"payload.started_at": [1747130400]}),
        (1, {"payload.thread_source": ["user"]}),  # ownership vocabulary of the wrong type
        (1, {"payload.source": {"custom": ["atlas"]}}),
    ],
)
def test_field_of_the_wrong_type_is_a_recorded_issue(home: Path, line: int, changes: dict):
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[line - 1] = set_fields(lines[line - 1], **changes)
        return lines

    path = copy_with(home, EXEC, edit)
    conn = CodexConnector(home)
    assert conn.task_days(path) == {date(2026, 5, 12)}
    result = conn.parse(path)
    assert_no_file_level_failure(result)
    task = only_task(result)
    # The second turn never touches the damaged line of the first one.
    assert turn_texts(task)[-1] == turn_texts(clean(EXEC))[-1]
    assert line in issue_lines(result), result.issues


def test_session_meta_id_of_the_wrong_type_is_ignored(home: Path):
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[0] = set_fields(lines[0], **{"payload.id": {"uuid": "019e1625"}})
        return lines

    path = copy_with(home, TUI, edit)
    conn = CodexConnector(home)
    result = conn.parse(path)
    task = only_task(result)
    # The thread id comes from the file name; the meta is still the thread's own.
    assert task.native_id == clean(TUI).native_id
    assert task.ownership.reason == "codex:interactive-cli"
    assert task.started_at == clean(TUI).started_at
    assert conn.task_days(path) == {task.started_at.date()}
    assert turn_texts(task) == turn_texts(clean(TUI))
    assert issue_lines(result).get(1) == "invalid_record"


def test_prompt_of_the_wrong_type_loses_only_its_turn(home: Path):
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[6] = set_fields(lines[6], **{"payload.message": ["Hello, Codex!"]})
        return lines

    result = CodexConnector(home).parse(copy_with(home, EXEC, edit))
    task = only_task(result)
    assert turn_texts(task) == turn_texts(clean(EXEC))[1:]
    assert issue_lines(result).get(7) == "invalid_record"


# --- timestamps ------------------------------------------------------------------------------

OUT_OF_RANGE = [
    "0001-01-01T00:00:00+01:00",  # before datetime.min once converted to UTC
    "0001-01-01T00:00:00Z",  # a valid datetime, but no partition will ever hold it
    "9999-12-31T23:59:59-14:00",  # after datetime.max once converted to UTC
    "9999-12-31T23:59:59.999999Z",
    10**20,  # unix ms far past datetime.max
    -(10**20),
]


@pytest.mark.parametrize("bad", OUT_OF_RANGE, ids=repr)
def test_out_of_range_first_timestamp_is_treated_as_missing(home: Path, bad: Any):
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[0] = set_fields(lines[0], timestamp=bad, **{"payload.timestamp": bad})
        return lines

    path = copy_with(home, TUI, edit)
    conn = CodexConnector(home)
    # The next line with a usable time decides the day (the same rule as parse()).
    assert conn.task_days(path) == {date(2026, 5, 11)}
    result = conn.parse(path)
    task = only_task(result)
    assert task.started_at == datetime(2026, 5, 11, 8, 27, 17, 493000, tzinfo=UTC)
    assert task.ownership.reason == "codex:interactive-cli"
    assert turn_texts(task) == turn_texts(clean(TUI))
    assert issue_lines(result).get(1) == "bad_timestamp"


@pytest.mark.parametrize("bad", OUT_OF_RANGE, ids=repr)
def test_out_of_range_timestamp_inside_a_turn_keeps_the_turn(home: Path, bad: Any):
    def edit(lines: list[bytes]) -> list[bytes]:
        # task_complete of the first turn: its line time and its completed_at
        lines[12] = set_fields(lines[12], timestamp=bad, **{"payload.completed_at": bad})
        return lines

    result = CodexConnector(home).parse(copy_with(home, EXEC, edit))
    assert_no_file_level_failure(result)
    task = only_task(result)
    assert turn_texts(task) == turn_texts(clean(EXEC))
    first = task.turns[0]
    # The completion time falls back to the answer's own time, never to a year-1/9999 value.
    assert first.completed_at == datetime(2026, 5, 12, 10, 0, 3, 100000, tzinfo=UTC)
    assert issue_lines(result).get(13) == "bad_timestamp"


def test_a_file_of_only_out_of_range_times_has_no_day(home: Path):
    path = home / "sessions" / "rollout-2026-03-01T11-00-00-nothing.jsonl"
    path.parent.mkdir(parents=True)
    lines = [json.dumps({"timestamp": t, "type": "event_msg", "payload": {}}) for t in OUT_OF_RANGE]
    path.write_text("\n".join(lines) + "\n")
    assert CodexConnector(home).task_days(path) == set()


# --- BOM ---------------------------------------------------------------------------------------


def test_bom_before_the_first_line_keeps_the_session_meta(home: Path):
    path = copy_with(home, TUI, lambda lines: [BOM + lines[0], *lines[1:]])
    conn = CodexConnector(home)
    assert conn.task_days(path) == {date(2026, 5, 11)}
    result = conn.parse(path)
    task = only_task(result)
    assert task.ownership.reason == "codex:interactive-cli"
    assert task.started_at == clean(TUI).started_at
    assert turn_texts(task) == turn_texts(clean(TUI))


# --- the guards behind the checks (fault injection) -----------------------------------------
# The normaliser reads every field type-safely, so no real input is known to reach these guards
# (a 10,000-case fuzz run reached neither). They exist so that a future mistake costs one line,
# not a session; these tests inject the failure to prove it.


def test_an_exception_while_interpreting_one_record_costs_only_that_line(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    from memory_pipeline.capture.codex.normalise import Normaliser

    events = Normaliser.events

    def failing_on_line_8(self, line: int, obj: dict):
        if line == 8:
            raise TypeError("unhashable type: 'list'")
        return events(self, line, obj)

    monkeypatch.setattr(Normaliser, "events", failing_on_line_8)
    result = CodexConnector(home).parse(copy_with(home, EXEC, lambda lines: lines))
    assert turn_texts(only_task(result)) == turn_texts(clean(EXEC))
    [issue] = [i for i in result.issues if i.line == 8]
    assert issue.reason == "bad_record"
    assert issue.detail == "TypeError: unhashable type: 'list'"


def test_a_reader_that_fails_mid_file_keeps_what_was_read(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    from memory_pipeline.capture.codex import records

    real_iter = records.iter_jsonl

    def failing_after_line_13(path, read):
        for line, obj in real_iter(path, read):
            if line == 14:
                raise RecursionError("maximum recursion depth exceeded")
            yield line, obj

    monkeypatch.setattr(records, "iter_jsonl", failing_after_line_13)
    path = copy_with(home, EXEC, lambda lines: lines)
    conn = CodexConnector(home)
    assert conn.task_days(path) == {date(2026, 5, 12)}
    result = conn.parse(path)
    task = only_task(result)
    assert turn_texts(task) == turn_texts(clean(EXEC))[:1]  # the first turn was read whole
    assert issue_lines(result).get(14) == "unreadable_rest"
