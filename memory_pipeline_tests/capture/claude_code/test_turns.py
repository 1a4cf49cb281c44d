"""When a turn is complete (§2.5): end markers, quiet files, interrupted and failed turns."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline_tests.support.claude_transcript import (
    Transcript,
    connector,
    only_task,
    project,
)


def _session_with_open_last_turn(ending: str) -> Transcript:
    t = Transcript()
    t.turn("first question", "first answer", 1)
    t.prompt("second question")
    if ending == "prompt":
        return t
    t.tool_use("toolu_2", "msg_2a")
    if ending == "tool_use":
        return t
    t.tool_result("toolu_2")
    if ending == "tool_result":
        return t
    t.text("second answer", "msg_2b")
    return t


@pytest.mark.parametrize("ending", ["prompt", "tool_use", "tool_result"])
def test_file_ending_mid_turn_is_unfinished_even_when_quiet(home: Path, ending: str) -> None:
    path = _session_with_open_last_turn(ending).write(project(home))
    task = only_task(connector(home).parse(path))
    assert [t.prompt for t in task.turns] == ["first question"]
    assert task.unfinished_turn is True


def test_last_answer_without_end_marker_waits_for_a_quiet_file(home: Path) -> None:
    path = _session_with_open_last_turn("text").write(project(home))
    written = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)

    fresh = only_task(connector(home, now=written + timedelta(minutes=5)).parse(path))
    assert [t.prompt for t in fresh.turns] == ["first question"]
    assert fresh.unfinished_turn is True

    quiet = only_task(connector(home, now=written + timedelta(minutes=31)).parse(path))
    assert [t.prompt for t in quiet.turns] == ["first question", "second question"]
    assert quiet.turns[1].outcome == "second answer"
    assert quiet.unfinished_turn is False

    never = only_task(connector(home, settle_after=None).parse(path))
    assert len(never.turns) == 1 and never.unfinished_turn is True


@pytest.mark.parametrize("marker", ["turn_duration", "stop_hook_summary", "end_turn"])
def test_end_markers_complete_the_last_turn_at_once(home: Path, marker: str) -> None:
    t = Transcript()
    t.prompt("what changed?")
    answer = t.text("Two files.", "msg_1", "end_turn" if marker == "end_turn" else None)
    if marker != "end_turn":
        # 2.1.x writes the marker as a child of the answer; a later attachment takes the chain.
        t.system(marker, parent=answer)
        t.attachment({"type": "total_tokens_reminder", "text": "x"}, parent=answer)
    path = t.write(project(home))
    written = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)
    task = only_task(connector(home, now=written).parse(path))
    assert [(t.prompt, t.outcome) for t in task.turns] == [("what changed?", "Two files.")]
    assert task.unfinished_turn is False


def test_interrupted_turn_is_skipped_and_later_ordinals_stay_stable(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.text("Starting on two, here is a partial", "msg_2a")
    path = t.write(project(home))
    before = only_task(connector(home, settle_after=None).parse(path))
    assert [x.prompt for x in before.turns] == ["one"]
    assert before.unfinished_turn is True

    t.prompt([{"type": "text", "text": "[Request interrupted by user]"}])
    t.turn("three", "answer three", 3)
    t.prompt("four")
    t.tool_use("toolu_4", "msg_4a")
    t.tool_result("toolu_4", "The user doesn't want to proceed with this tool use.")
    t.prompt([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    t.turn("five", "answer five", 5)
    t.write(project(home))
    after = only_task(connector(home, settle_after=None).parse(path))
    assert [(x.ordinal, x.prompt, x.outcome) for x in after.turns] == [
        (0, "one", "answer one"),
        (1, "three", "answer three"),
        (2, "five", "answer five"),
    ]
    assert after.turns[0] == before.turns[0]
    assert after.unfinished_turn is False


def test_growth_appends_a_turn_and_keeps_earlier_turns_identical(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.tool_use("toolu_2", "msg_2a")
    path = t.write(project(home))
    first = only_task(connector(home).parse(path))
    assert len(first.turns) == 1 and first.unfinished_turn is True

    t.tool_result("toolu_2")
    t.text("answer two", "msg_2b")
    t.system("turn_duration", durationMs=5, messageCount=3)
    t.write(project(home))
    second = only_task(connector(home).parse(path))
    assert [x.ordinal for x in second.turns] == [0, 1]
    assert second.turns[0] == first.turns[0]
    assert second.turns[1].prompt == "two" and second.turns[1].outcome == "answer two"
    assert second.unfinished_turn is False
    assert second.started_at == first.started_at


def test_api_error_turn_is_skipped_and_not_waited_for(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.text(
        "API Error: 529 Overloaded",
        "msg_err",
        model="<synthetic>",
        isApiErrorMessage=True,
        error="overloaded",
    )
    path = t.write(project(home))
    task = only_task(connector(home).parse(path))
    assert [x.prompt for x in task.turns] == ["one"]
    assert task.unfinished_turn is False
    t.turn("two again", "answer two", 2)
    t.write(project(home))
    task = only_task(connector(home).parse(path))
    assert [(x.ordinal, x.prompt) for x in task.turns] == [(0, "one"), (1, "two again")]


def test_streamed_blocks_are_merged_by_message_id(home: Path) -> None:
    t = Transcript()
    t.prompt("summarise")
    t.thinking("secret reasoning", "msg_1")
    t.text("Part one.", "msg_1")
    t.tool_use("toolu_1", "msg_1")
    t.tool_result("toolu_1")
    t.thinking("more reasoning", "msg_2")
    t.text("Final part A.", "msg_2")
    last = t.text("Final part B.", "msg_2", "end_turn")
    # A resume replay writes the same record (same uuid) again: nothing is doubled.
    t.raw(t.lines[-1])
    path = t.write(project(home))
    result = connector(home).parse(path)
    assert result.issues == []
    [turn] = only_task(result).turns
    assert turn.outcome == "Final part A.\n\nFinal part B."
    assert "reasoning" not in turn.outcome and "Part one." not in turn.outcome
    assert turn.native_message_ids == [turn.native_turn_id, "msg_2"]
    assert turn.completed_at is not None
    assert last in t.lines[-1]  # the replayed line is the leaf and resolves to the same record
