"""Bad input: every problem is a ParseIssue, the rest of the file is used."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline_tests.support.claude_transcript import (
    Transcript,
    connector,
    issue_reasons,
    only_task,
    project,
)


def test_truncated_last_line_is_left_for_later(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.raw('{"parentUuid": "x", "type": "assistant", "message": {"content": [{"ty')
    path = t.write(project(home), newline_at_end=False)
    result = connector(home).parse(path)
    assert issue_reasons(result) == ["truncated_line"]
    assert result.issues[0].line == len(t.lines)
    task = only_task(result)
    assert [x.prompt for x in task.turns] == ["one"] and task.unfinished_turn is True


def test_invalid_json_line_unknown_types_and_binary_garbage(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.sidecar({"type": "hologram-state", "sessionId": t.session_id, "beam": 3})
    t.sidecar({"type": "hologram-state", "sessionId": t.session_id, "beam": 4})
    t.raw("{this is not json")
    t.raw("[1, 2, 3]")
    t.prompt("two")
    lost = t.text("narration", "msg_lost")  # this line gets corrupted below
    t.text("answer two", "msg_2", "end_turn")
    lines = list(t.lines)
    lines[lines.index(next(x for x in lines if lost in x and '"uuid"' in x))] = "{broken"
    t.lines = lines
    path = t.write(project(home))
    with open(path, "ab") as fh:
        fh.write(b"\xff\xfe\x00garbage\x9c\n")
    result = connector(home).parse(path)
    reasons = issue_reasons(result)
    assert reasons.count("invalid_json") == 3
    assert "binary" in reasons
    assert "unknown_record" in reasons
    unknown = next(i for i in result.issues if i.reason == "unknown_record")
    assert "hologram-state" in unknown.detail and "2 lines" in unknown.detail
    # The answer's parent line was lost: the walk bridges the gap and keeps turn one.
    assert "broken_chain" in reasons
    task = only_task(result)
    assert [(x.prompt, x.outcome) for x in task.turns] == [
        ("one", "answer one"),
        ("two", "answer two"),
    ]


def test_empty_and_binary_files_return_no_task(home: Path) -> None:
    empty = project(home) / "e0000000-0000-4000-8000-000000000000.jsonl"
    empty.write_text("")
    result = connector(home).parse(empty)
    assert result.tasks == [] and issue_reasons(result) == ["empty_file"]

    binary = project(home) / "b1000000-0000-4000-8000-000000000000.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8\xff\xe0\n")
    result = connector(home).parse(binary)
    assert result.tasks == []
    assert issue_reasons(result) == ["binary", "invalid_json", "binary", "no_threaded_records"]

    sidecars_only = Transcript(session_id="5c000000-0000-4000-8000-000000000000")
    sidecars_only.sidecar({"type": "mode", "sessionId": sidecars_only.session_id})
    result = connector(home).parse(sidecars_only.write(project(home)))
    assert result.tasks == [] and issue_reasons(result) == ["no_threaded_records"]

    missing = connector(home).parse(project(home) / "gone.jsonl")
    assert missing.tasks == [] and issue_reasons(missing) == ["unreadable"]


def test_odd_shapes_never_raise(home: Path) -> None:
    t = Transcript()
    t.prompt(None)
    t.prompt([1, "two", {"type": "text", "text": 3}])
    t.sidecar({"type": "assistant", "uuid": "odd-1", "parentUuid": t.last, "message": "text"})
    t.sidecar({"type": "user", "uuid": 5, "message": {}})
    t.sidecar({"type": "ai-title", "aiTitle": ["not", "a", "string"]})
    t.sidecar({"no_type": True})
    t.last = "odd-1"
    t.turn("real", "answer", 1)
    result = connector(home).parse(t.write(project(home)))
    task = only_task(result)
    assert [x.prompt for x in task.turns] == ["real"]
    assert "parser_error" not in issue_reasons(result)
    assert set(issue_reasons(result)) == {"missing_uuid", "unknown_record", "bad_record"}
    # The two prompts of the wrong shape and the assistant message that is a string, by line.
    bad = [i.line for i in result.issues if i.reason == "bad_record"]
    assert bad == [1, 2, 3]
