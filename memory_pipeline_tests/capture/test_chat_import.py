from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.tuning import SEMANTIC_QUIET_MINUTES


def _write(path: Path, lines: list[dict | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line if isinstance(line, str) else json.dumps(line))
            fh.write("\n")
    return path


def _msg(task: str, text: str, ts: str, **extra) -> dict:
    return {"task_id": task, "text": text, "timestamp": ts, **extra}


def test_discover_finds_jsonl_recursively_and_sorted(tmp_path: Path) -> None:
    _write(tmp_path / "b.jsonl", [_msg("t", "hi", "2026-10-01T10:00:00Z", role="user")])
    _write(tmp_path / "sub" / "a.jsonl", [_msg("u", "hi", "2026-10-01T10:00:00Z", role="user")])
    (tmp_path / "notes.txt").write_text("not an import")
    connector = ChatImportConnector(tmp_path)
    assert connector.discover() == [tmp_path / "b.jsonl", tmp_path / "sub" / "a.jsonl"]
    assert ChatImportConnector(tmp_path / "missing").discover() == []


def test_user_assistant_chat(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "chat.jsonl",
        [
            _msg(
                "c1",
                "How do I vacuum?",
                "2026-09-12T19:02:11Z",
                role="user",
                message_id="m1",
                title="Postgres maintenance",
            ),
            _msg(
                "c1",
                "And is autovacuum enough?",
                "2026-09-12T19:02:20Z",
                role="user",
                message_id="m2",
            ),
            _msg(
                "c1",
                "Run VACUUM (ANALYZE).",
                "2026-09-12T19:02:30Z",
                role="assistant",
                message_id="m3",
            ),
            _msg(
                "c1",
                "Autovacuum is enough below 1M updates a day.",
                "2026-09-12T19:02:35Z",
                role="assistant",
                message_id="m4",
            ),
            _msg(
                "c1",
                "Thanks, what about bloat?",
                "2026-09-12T19:05:00Z",
                role="user",
                message_id="m5",
            ),
            _msg(
                "c1",
                "Use pgstattuple to measure it.",
                "2026-09-12T19:05:09Z",
                role="assistant",
                message_id="m6",
            ),
        ],
    )
    result = ChatImportConnector(tmp_path).parse(path)
    assert result.issues == []
    [task] = result.tasks
    assert task.source == "chat_import"
    assert task.native_id == "c1"
    assert task.started_at == datetime(2026, 9, 12, 19, 2, 11, tzinfo=UTC)
    assert task.title is not None
    assert task.title.text == "Postgres maintenance"
    assert task.title.source == "chat_import:title"
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.reason == "chat_import:user-import"
    assert task.ownership.evidence == {"import_file": "chat.jsonl"}
    assert task.source_path == str(path)
    assert task.unfinished_turn is False
    assert [t.ordinal for t in task.turns] == [0, 1]
    first, second = task.turns
    assert first.prompt == "How do I vacuum?\n\nAnd is autovacuum enough?"
    assert first.outcome == "Run VACUUM (ANALYZE).\n\nAutovacuum is enough below 1M updates a day."
    assert first.native_turn_id == "m1"
    assert first.native_message_ids == ["m1", "m2", "m3", "m4"]
    assert first.started_at == datetime(2026, 9, 12, 19, 2, 11, tzinfo=UTC)
    assert first.completed_at == datetime(2026, 9, 12, 19, 2, 35, tzinfo=UTC)
    assert first.prompt_speaker is None and first.outcome_speaker is None
    assert second.prompt == "Thanks, what about bloat?"
    assert second.outcome == "Use pgstattuple to measure it."


def test_two_humans_without_agent(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "review.jsonl",
        [
            _msg(
                "r1",
                "Should limits move to Postgres?",
                "2026-10-19T14:05:00+02:00",
                speaker="Mara",
                role="human",
            ),
            _msg("r1", "Yes.", "2026-10-19T14:06:00+02:00", speaker="Jonas"),
            _msg("r1", "Redis evicted the counters.", "2026-10-19T14:06:30+02:00", speaker="Jonas"),
            _msg(
                "r1",
                "Then one table with a token bucket?",
                "2026-10-19T14:08:00+02:00",
                speaker="Mara",
            ),
            _msg("r1", "Exactly, keyed by API key.", "2026-10-19T14:09:00+02:00", speaker="Jonas"),
        ],
    )
    [task] = ChatImportConnector(tmp_path).parse(path).tasks
    assert task.native_context["turn_rule"] == "speakers"
    assert task.native_context["speakers"] == ["Mara", "Jonas"]
    assert task.started_at == datetime(2026, 10, 19, 12, 5, tzinfo=UTC)
    assert [(t.prompt_speaker, t.outcome_speaker) for t in task.turns] == [
        ("Mara", "Jonas"),
        ("Mara", "Jonas"),
    ]
    assert task.turns[0].outcome == "Yes.\n\nRedis evicted the counters."
    assert task.turns[1].prompt == "Then one table with a token bucket?"
    assert task.unfinished_turn is False


def test_three_speakers_first_speaker_prompts_everyone_else_answers(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "three.jsonl",
        [
            _msg("s", "Who owns the invoice job?", "2026-10-20T09:00:00Z", speaker="Mara"),
            _msg("s", "I do.", "2026-10-20T09:01:00Z", speaker="Jonas"),
            _msg("s", "I review it.", "2026-10-20T09:02:00Z", speaker="Priya"),
            _msg("s", "And the alerts?", "2026-10-20T09:03:00Z", speaker="Mara"),
            _msg("s", "Mine.", "2026-10-20T09:04:00Z", speaker="Priya"),
            _msg("s", "Wait, are we moving it to Friday?", "2026-10-20T09:05:00Z", speaker="Jonas"),
        ],
    )
    [task] = ChatImportConnector(tmp_path).parse(path).tasks
    assert len(task.turns) == 2
    assert task.turns[0].prompt == "Who owns the invoice job?"
    assert task.turns[0].outcome == "I do.\n\nI review it."
    assert task.turns[0].outcome_speaker == "Jonas, Priya"
    assert task.turns[1].outcome == "Mine.\n\nWait, are we moving it to Friday?"
    assert task.turns[1].outcome_speaker == "Priya, Jonas"


def test_several_tasks_in_one_file_interleaved(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "export.jsonl",
        [
            _msg("a", "q1", "2026-09-01T10:00:00Z", role="user"),
            _msg("b", "other q", "2026-09-03T08:00:00Z", role="user"),
            _msg("a", "a1", "2026-09-01T10:00:05Z", role="assistant"),
            _msg("b", "other a", "2026-09-03T08:00:09Z", role="assistant"),
            _msg("a", "q2", "2026-09-02T09:00:00Z", role="user"),
            _msg("a", "a2", "2026-09-02T09:00:03Z", role="assistant"),
        ],
    )
    connector = ChatImportConnector(tmp_path)
    result = connector.parse(path)
    assert [t.native_id for t in result.tasks] == ["a", "b"]
    assert [len(t.turns) for t in result.tasks] == [2, 1]
    assert result.tasks[0].turns[1].prompt == "q2"
    assert connector.task_days(path) == {date(2026, 9, 1), date(2026, 9, 3)}


def test_unfinished_last_turn(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "u.jsonl",
        [
            _msg("u", "first", "2026-09-01T10:00:00Z", role="user"),
            _msg("u", "answer", "2026-09-01T10:00:05Z", role="assistant"),
            _msg("u", "still waiting", "2026-09-01T10:01:00Z", role="user"),
        ],
    )
    # Five minutes later the conversation is not quiet yet: the last prompt waits.
    soon = ChatImportConnector(tmp_path, now=lambda: datetime(2026, 9, 1, 10, 6, tzinfo=UTC))
    [task] = soon.parse(path).tasks
    assert task.unfinished_turn is True
    assert [t.prompt for t in task.turns] == ["first"]
    quiet = timedelta(minutes=SEMANTIC_QUIET_MINUTES)
    assert task.settles_at == datetime(2026, 9, 1, 10, 1, tzinfo=UTC) + quiet

    _write(tmp_path / "only.jsonl", [_msg("o", "hello?", "2026-09-01T10:00:00Z", role="user")])
    [lonely] = soon.parse(tmp_path / "only.jsonl").tasks
    assert lonely.turns == [] and lonely.unfinished_turn is True


def test_title_updates_latest_non_empty_wins(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        [
            _msg("t", "q", "2026-09-01T10:00:00Z", role="user", title="Draft"),
            _msg("t", "a", "2026-09-01T10:00:05Z", role="assistant", title="Backups: pgBackRest"),
            _msg("t", "q2", "2026-09-01T10:01:00Z", role="user", title=""),
            _msg("t", "a2", "2026-09-01T10:01:05Z", role="assistant"),
        ],
    )
    [task] = ChatImportConnector(tmp_path).parse(path).tasks
    assert task.title is not None
    assert task.title.text == "Backups: pgBackRest"
    assert task.title.observed_at == datetime(2026, 9, 1, 10, 0, 5, tzinfo=UTC)


def test_no_title_means_none(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        [
            _msg("t", "q", "2026-09-01T10:00:00Z", role="user"),
            _msg("t", "a", "2026-09-01T10:00:05Z", role="assistant"),
        ],
    )
    [task] = ChatImportConnector(tmp_path).parse(path).tasks
    assert task.title is None


def test_bad_lines_become_issues_and_the_rest_is_imported(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "bad.jsonl",
        [
            _msg("b", "ok prompt", "2026-09-01T10:00:00Z", role="user"),  # 1
            "{not json",  # 2
            {"text": "no task", "timestamp": "2026-09-01T10:00:01Z", "role": "user"},  # 3
            _msg("b", "no timestamp", None, role="user"),  # 4
            _msg("b", "bad timestamp", "yesterday", role="user"),  # 5
            _msg("b", "bad role", "2026-09-01T10:00:02Z", role="system"),  # 6
            _msg("b", "", "2026-09-01T10:00:02Z", role="user"),  # 7
            {"task_id": "b", "timestamp": "2026-09-01T10:00:02Z", "role": "user"},  # 8
            _msg("b", "no role or speaker", "2026-09-01T10:00:02Z"),  # 9
            _msg("b", ["list"], "2026-09-01T10:00:02Z", role="user"),  # 10
            "[1, 2]",  # 11
            _msg("b", "ok answer", "2026-09-01T10:00:09Z", role="assistant"),  # 12
            _msg("b", "speaker", "2026-09-01T10:00:10Z", speaker=42),  # 13
            _msg("b", "numeric ts", 1788000000, role="user"),  # 14
        ],
    )
    result = ChatImportConnector(tmp_path).parse(path)
    assert [(i.line, i.reason) for i in result.issues] == [
        (2, "invalid_json"),
        (3, "missing_field"),
        (4, "missing_field"),
        (5, "bad_timestamp"),
        (6, "bad_field"),
        (7, "missing_field"),
        (8, "missing_field"),
        (9, "missing_field"),
        (10, "bad_field"),
        (11, "invalid_json"),
        # Ten skipped lines between the prompt and the answer may hold a whole exchange (line 2
        # may have been the answer of line 1, line 4 the question of line 12): the two are not
        # joined into one turn (issue 31), each is recorded instead.
        (1, "turn_damaged"),
        (12, "outcome_without_prompt"),
        (13, "bad_field"),
        (14, "bad_timestamp"),
    ]
    assert all(i.path == str(path) for i in result.issues)
    [task] = result.tasks
    assert task.turns == []


def test_outcome_before_first_prompt_is_reported(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "greeting.jsonl",
        [
            _msg("g", "Hi! How can I help?", "2026-09-01T10:00:00Z", role="assistant"),
            _msg("g", "Explain WAL.", "2026-09-01T10:00:10Z", role="user"),
            _msg("g", "The write-ahead log...", "2026-09-01T10:00:20Z", role="assistant"),
        ],
    )
    result = ChatImportConnector(tmp_path).parse(path)
    assert [(i.line, i.reason) for i in result.issues] == [(1, "outcome_without_prompt")]
    [task] = result.tasks
    assert [t.prompt for t in task.turns] == ["Explain WAL."]
    assert task.started_at == datetime(2026, 9, 1, 10, 0, tzinfo=UTC)


def test_naive_timestamps_are_utc_and_offsets_are_converted(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "naive.jsonl",
        [
            _msg("n", "late night question", "2026-10-02T23:30:00", role="user"),
            _msg("n", "answer", "2026-10-03T01:31:00+02:00", role="assistant"),
        ],
    )
    connector = ChatImportConnector(tmp_path)
    [task] = connector.parse(path).tasks
    assert task.started_at == datetime(2026, 10, 2, 23, 30, tzinfo=UTC)
    assert task.turns[0].completed_at == datetime(2026, 10, 2, 23, 31, tzinfo=UTC)
    assert connector.task_days(path) == {date(2026, 10, 2)}


def test_messages_follow_file_order_not_timestamps(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "order.jsonl",
        [
            _msg("o", "question", "2026-09-01T10:05:00Z", role="user"),
            _msg("o", "answer (clock skew)", "2026-09-01T10:04:00Z", role="assistant"),
        ],
    )
    [task] = ChatImportConnector(tmp_path).parse(path).tasks
    assert [(t.prompt, t.outcome) for t in task.turns] == [("question", "answer (clock skew)")]
    assert task.started_at == datetime(2026, 9, 1, 10, 4, tzinfo=UTC)


def test_role_less_message_from_an_assistant_speaker(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "mixed.jsonl",
        [
            _msg("m", "q", "2026-09-01T10:00:00Z", role="user", speaker="Mara"),
            _msg("m", "a1", "2026-09-01T10:00:05Z", role="assistant", speaker="GPT"),
            _msg("m", "a2", "2026-09-01T10:00:06Z", speaker="GPT"),
            _msg("m", "q2", "2026-09-01T10:01:00Z", speaker="Mara"),
            _msg("m", "a3", "2026-09-01T10:01:05Z", role="assistant", speaker="GPT"),
        ],
    )
    [task] = ChatImportConnector(tmp_path).parse(path).tasks
    assert task.native_context["turn_rule"] == "roles"
    assert [(t.prompt, t.outcome) for t in task.turns] == [("q", "a1\n\na2"), ("q2", "a3")]
    assert task.turns[0].prompt_speaker == "Mara"
    assert task.turns[0].outcome_speaker == "GPT"


def test_empty_and_unreadable_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    connector = ChatImportConnector(tmp_path)
    result = connector.parse(empty)
    assert result.tasks == []
    assert [i.reason for i in result.issues] == ["empty_file"]
    assert connector.task_days(empty) == set()
    missing = connector.parse(tmp_path / "gone.jsonl")
    assert [i.reason for i in missing.issues] == ["unreadable"]


def test_out_of_range_timestamps_are_bad_lines_and_never_raise(tmp_path: Path) -> None:
    """Year 1 with a positive offset and year 9999 with a negative one parse as ISO 8601 but
    overflow when converted to UTC; `task_days` (called by the sensor and `memory-pipeline run`
    before any job) and `parse` must turn them into bad lines, not an OverflowError (issue 10)."""
    deep = '{"task_id": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = _write(
        tmp_path / "edges.jsonl",
        [
            _msg("e", "from year one", "0001-01-01T00:00:00+01:00", role="user"),  # 1
            deep,  # 2
            _msg("e", "from the far future", "9999-12-31T23:59:59-14:00", role="user"),  # 3
            _msg("e", "the real question", "2026-09-01T10:00:00Z", role="user"),  # 4
            _msg("e", "the real answer", "2026-09-01T10:00:05Z", role="assistant"),  # 5
        ],
    )
    connector = ChatImportConnector(tmp_path)
    assert connector.task_days(path) == {date(2026, 9, 1)}
    result = connector.parse(path)
    assert [(i.line, i.reason) for i in result.issues] == [
        (1, "bad_timestamp"),
        (2, "too_deep"),
        (3, "bad_timestamp"),
    ]
    [task] = result.tasks
    assert [(t.prompt, t.outcome) for t in task.turns] == [("the real question", "the real answer")]


def test_a_bom_before_the_first_line_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    lines = [
        _msg("b", "question", "2026-09-01T10:00:00Z", role="user"),
        _msg("b", "answer", "2026-09-01T10:00:05Z", role="assistant"),
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(m) + "\n" for m in lines).encode())
    result = ChatImportConnector(tmp_path).parse(path)
    assert result.issues == []
    assert [(t.prompt, t.outcome) for t in result.tasks[0].turns] == [("question", "answer")]


# -- the quiet rule: nothing said is left behind (issue 11) -----------------------------------

QUIET = timedelta(minutes=30)
LAST = datetime(2026, 9, 1, 10, 1, tzinfo=UTC)  # the unanswered message of the chats below


def _at(moment: datetime) -> ChatImportConnector:
    return ChatImportConnector(Path("/nonexistent"), quiet_after=QUIET, now=lambda: moment)


def _waiting_chat(path: Path) -> Path:
    return _write(
        path,
        [
            _msg("q", "first", "2026-09-01T10:00:00Z", role="user", message_id="m1"),
            _msg("q", "answer", "2026-09-01T10:00:05Z", role="assistant", message_id="m2"),
            _msg("q", "still there?", "2026-09-01T10:00:30Z", role="user", message_id="m3"),
            _msg("q", "hello?", LAST.isoformat(), role="user", message_id="m4"),
        ],
    )


def test_an_unanswered_last_message_waits_until_the_conversation_is_quiet(
    tmp_path: Path,
) -> None:
    path = _waiting_chat(tmp_path / "q.jsonl")
    [task] = _at(LAST + QUIET - timedelta(seconds=1)).parse(path).tasks
    assert task.unfinished_turn is True
    assert [t.prompt for t in task.turns] == ["first"]


def test_after_the_quiet_period_the_unanswered_message_is_a_marked_turn(tmp_path: Path) -> None:
    path = _waiting_chat(tmp_path / "q.jsonl")
    [task] = _at(LAST + QUIET).parse(path).tasks
    assert task.unfinished_turn is False
    first, last = task.turns
    assert first.unanswered is False and first.outcome == "answer"
    assert last.unanswered is True
    assert (last.ordinal, last.prompt, last.outcome) == (1, "still there?\n\nhello?", "")
    assert last.native_turn_id == "m3" and last.native_message_ids == ["m3", "m4"]
    assert last.started_at == datetime(2026, 9, 1, 10, 0, 30, tzinfo=UTC)
    assert last.completed_at is None


def test_quiet_is_measured_from_the_last_message_time_not_the_file(tmp_path: Path) -> None:
    """An export written today of a conversation that ended months ago is already quiet; a file
    written long ago whose last message carries a time in the future is not."""
    path = _waiting_chat(tmp_path / "q.jsonl")
    os.utime(path, (0, 0))  # mtime 1970: must not matter
    assert _at(LAST + QUIET).parse(path).tasks[0].turns[-1].unanswered
    assert _at(LAST + QUIET / 2).parse(path).tasks[0].unfinished_turn


def test_a_lone_question_becomes_a_turn_once_quiet(tmp_path: Path) -> None:
    path = _write(tmp_path / "o.jsonl", [_msg("o", "anyone?", LAST.isoformat(), speaker="Mara")])
    [task] = _at(LAST + QUIET).parse(path).tasks
    [turn] = task.turns
    assert (turn.prompt, turn.outcome, turn.unanswered) == ("anyone?", "", True)
    assert turn.prompt_speaker == "Mara" and turn.outcome_speaker is None


def test_after_the_answer_arrives_the_turn_is_complete(tmp_path: Path) -> None:
    path = _waiting_chat(tmp_path / "q.jsonl")
    with path.open("a") as fh:
        fh.write(json.dumps(_msg("q", "yes!", "2026-09-01T12:00:00Z", role="assistant")) + "\n")
    [task] = _at(datetime(2026, 9, 2, tzinfo=UTC)).parse(path).tasks
    assert [(t.prompt, t.outcome, t.unanswered) for t in task.turns] == [
        ("first", "answer", False),
        ("still there?\n\nhello?", "yes!", False),
    ]


def test_the_quiet_rule_can_be_turned_off(tmp_path: Path) -> None:
    path = _waiting_chat(tmp_path / "q.jsonl")
    connector = ChatImportConnector(tmp_path, quiet_after=None)
    [task] = connector.parse(path).tasks
    assert task.unfinished_turn is True and len(task.turns) == 1
