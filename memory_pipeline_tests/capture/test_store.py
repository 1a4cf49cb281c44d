"""Monotonic capture against the real database: append, drift, rename, skips, namespaces."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from memory_pipeline.capture.models import (
    OwnershipVerdict,
    ParsedTask,
    ParsedTurn,
    ParseIssue,
    TaskTitle,
)
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.capture.store import record_file_issue, store_task

T0 = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
USER = OwnershipVerdict(ownership="user_owned", reason="codex:interactive-cli")


def turn(i: int, prompt: str | None = None, outcome: str | None = None) -> ParsedTurn:
    return ParsedTurn(
        ordinal=i,
        native_turn_id=f"turn-{i}",
        prompt=prompt or f"prompt {i}",
        outcome=outcome or f"outcome {i}",
        started_at=T0 + timedelta(minutes=10 * i),
        completed_at=T0 + timedelta(minutes=10 * i + 5),
    )


def task(turns: list[ParsedTurn], **kw: object) -> ParsedTask:
    fields: dict[str, object] = {
        "source": "codex",
        "native_id": "019a-thread",
        "started_at": T0,
        "title": TaskTitle(text="Rate limiter", source="codex:session_index", observed_at=T0),
        "ownership": USER,
        "native_context": {"cwd": "/home/me/billing"},
        "turns": turns,
        "source_path": "/x/rollout.jsonl",
    }
    fields.update(kw)
    return ParsedTask.model_validate(fields)


def capture(conn: psycopg.Connection, t: ParsedTask) -> CaptureReport:
    report = CaptureReport()
    with conn.transaction():
        store_task(conn, t, report)
    return report


def snapshot(conn: psycopg.Connection) -> tuple[list[tuple], list[tuple], list[tuple]]:
    tasks = conn.execute("SELECT * FROM captured_tasks ORDER BY source, native_id").fetchall()
    turns = conn.execute("SELECT * FROM agent_turns ORDER BY task_id, ordinal").fetchall()
    skips = conn.execute("SELECT * FROM capture_skips ORDER BY id").fetchall()
    return tasks, turns, skips


def stored_turns(conn: psycopg.Connection) -> list[tuple[int, str, str]]:
    return conn.execute(
        "SELECT ordinal, prompt, outcome FROM agent_turns ORDER BY ordinal"
    ).fetchall()


def test_capture_then_rerun_changes_nothing(conn: psycopg.Connection) -> None:
    report = capture(conn, task([turn(0), turn(1)]))
    assert (report.tasks_captured, report.turns_appended) == (1, 2)
    before = snapshot(conn)
    again = capture(conn, task([turn(0), turn(1)]))
    assert (again.tasks_captured, again.turns_appended, again.drift_ignored) == (0, 0, 0)
    assert snapshot(conn) == before


def test_growth_appends_only_new_turns_and_moves_the_clock(conn: psycopg.Connection) -> None:
    capture(conn, task([turn(0), turn(1)]))
    first_ids = conn.execute("SELECT id FROM agent_turns ORDER BY ordinal").fetchall()
    report = capture(conn, task([turn(0), turn(1), turn(2)]))
    assert report.turns_appended == 1
    ids = conn.execute("SELECT id FROM agent_turns ORDER BY ordinal").fetchall()
    assert ids[:2] == first_ids and len(ids) == 3
    row = conn.execute("SELECT turn_count, last_turn_appended_at FROM captured_tasks").fetchone()
    assert row == (3, turn(2).completed_at)


def test_drift_is_ignored_and_new_turns_still_append(conn: psycopg.Connection) -> None:
    capture(conn, task([turn(0), turn(1), turn(2)]))
    # The source rewrote turn 1 and lost turn 0; turn 3 is new.
    drifted = [turn(1, outcome="edited answer"), turn(2), turn(3)]
    report = capture(conn, task(drifted))
    # turn 0 vanished; turn 1 changed and moved; turn 2 moved (its predecessor vanished)
    assert report.drift_ignored == 3
    assert report.turns_appended == 1
    assert stored_turns(conn) == [
        (0, "prompt 0", "outcome 0"),
        (1, "prompt 1", "outcome 1"),
        (2, "prompt 2", "outcome 2"),
        (3, "prompt 3", "outcome 3"),
    ]


def test_a_known_turn_that_moved_is_not_captured_twice(conn: psycopg.Connection) -> None:
    capture(conn, task([turn(0), turn(1)]))
    report = capture(conn, task([turn(1), turn(0), turn(2)]))
    assert report.turns_appended == 1 and report.drift_ignored == 2
    assert [r[0] for r in stored_turns(conn)] == [0, 1, 2]
    assert stored_turns(conn)[2][1] == "prompt 2"


def test_rename_touches_nothing_but_the_title(conn: psycopg.Connection) -> None:
    capture(conn, task([turn(0), turn(1)]))
    turns_before = conn.execute("SELECT * FROM agent_turns ORDER BY ordinal").fetchall()
    clock_before = conn.execute("SELECT last_turn_appended_at FROM captured_tasks").fetchone()
    renamed = TaskTitle(
        text="Rate limiter in Postgres",
        source="codex:session_index",
        observed_at=T0 + timedelta(days=2),
    )
    report = capture(conn, task([turn(0), turn(1)], title=renamed))
    assert report.renames == 1 and report.turns_appended == 0
    row = conn.execute(
        "SELECT title, title_source, title_observed_at, title_updated_at IS NOT NULL,"
        " last_turn_appended_at FROM captured_tasks"
    ).fetchone()
    assert row == (
        "Rate limiter in Postgres",
        "codex:session_index",
        renamed.observed_at,
        True,
        clock_before[0],
    )
    assert conn.execute("SELECT * FROM agent_turns ORDER BY ordinal").fetchall() == turns_before


def test_untitled_task_is_titled_by_its_first_prompt_until_named(conn: psycopg.Connection) -> None:
    capture(
        conn, task([turn(0, prompt="Fix the flaky migration test\nIt fails on CI")], title=None)
    )
    assert conn.execute("SELECT title, title_source FROM captured_tasks").fetchone() == (
        "Fix the flaky migration test",
        "derived:first_prompt",
    )
    capture(conn, task([turn(0, prompt="Fix the flaky migration test\nIt fails on CI")]))
    assert conn.execute("SELECT title FROM captured_tasks").fetchone() == ("Rate limiter",)


def test_secrets_are_redacted_before_storage(conn: psycopg.Connection) -> None:
    secret = turn(
        0,
        prompt="use key sk-proj-Ab3dEf5gH7iJ9kL1mN3oP5qR7sT9uV1w please",
        outcome="done; DATABASE_URL=postgres://app:s3cretpass@db/app",
    )
    report = capture(conn, task([secret]))
    assert report.redactions.by_kind == {"openai_key": 1, "url_password": 1}
    prompt, outcome, redactions = conn.execute(
        "SELECT prompt, outcome, redactions FROM agent_turns"
    ).fetchone()
    assert "sk-proj" not in prompt and "s3cretpass" not in outcome and redactions == 2
    dump = str(snapshot(conn))
    assert "Ab3dEf5gH7" not in dump and "s3cretpass" not in dump


def test_delegated_tasks_are_skipped_with_evidence(conn: psycopg.Connection) -> None:
    delegated = OwnershipVerdict(
        ownership="delegated",
        reason="codex:subagent:thread_spawn",
        evidence={"parent_thread_id": "019a-parent", "thread_source": "subagent"},
    )
    report = capture(conn, task([turn(0)], native_id="019a-child", ownership=delegated))
    assert report.skipped_tasks == {"codex:subagent:thread_spawn": 1}
    assert conn.execute("SELECT count(*) FROM captured_tasks").fetchone() == (0,)
    row = conn.execute(
        "SELECT native_id, reason, ownership, evidence FROM capture_skips"
    ).fetchone()
    assert row == (
        "019a-child",
        "codex:subagent:thread_spawn",
        "delegated",
        {"parent_thread_id": "019a-parent", "thread_source": "subagent"},
    )
    before = snapshot(conn)
    capture(conn, task([turn(0)], native_id="019a-child", ownership=delegated))
    assert snapshot(conn) == before


def test_identity_is_namespaced_by_source(conn: psycopg.Connection) -> None:
    capture(conn, task([turn(0)], native_id="same-id", source="codex"))
    capture(conn, task([turn(0)], native_id="same-id", source="claude_code"))
    rows = conn.execute("SELECT source, native_id FROM captured_tasks ORDER BY source").fetchall()
    assert rows == [("claude_code", "same-id"), ("codex", "same-id")]


def test_file_issues_are_recorded_once_and_transient_ones_only_reported(
    conn: psycopg.Connection,
) -> None:
    report = CaptureReport()
    issues = [
        ParseIssue(path="/x/a.jsonl", line=7, reason="invalid_json", detail="Expecting value"),
        ParseIssue(path="/x/a.jsonl", line=9, reason="truncated_line", detail="live file"),
    ]
    for _ in range(2):
        with conn.transaction():
            for issue in issues:
                record_file_issue(conn, "codex", issue, report)
    assert report.file_issues == {"invalid_json": 2, "truncated_line": 2}
    rows = conn.execute("SELECT kind, path, line, reason FROM capture_skips").fetchall()
    assert rows == [("file", "/x/a.jsonl", 7, "invalid_json")]


def test_credentials_in_native_context_are_redacted(conn: psycopg.Connection) -> None:
    ctx = {
        "git": {
            "repository_url": "https://me:ghp_abcdefghijklmnopqrstuvwxyz0123456789AB@github.com/me/x"
        }
    }
    capture(conn, task([turn(0)], native_context=ctx))
    stored = conn.execute("SELECT native_context FROM captured_tasks").fetchone()[0]
    assert "ghp_" not in str(stored) and "github.com/me/x" in stored["git"]["repository_url"]


# -- storable text (issue 10) -------------------------------------------------------------------


def test_nul_and_lone_surrogates_are_replaced_and_counted_before_storage(
    conn: psycopg.Connection,
) -> None:
    """PostgreSQL refuses NUL in text and `\\u0000` in jsonb, and a lone surrogate cannot be
    encoded at all: every text we write is made storable (U+FFFD) instead of failing the run."""
    bad = ParsedTurn(
        ordinal=0,
        native_turn_id="turn\x00-0",
        prompt="why does\x00 the parser \ud800 fail?",
        outcome="because of \udfff and \x00",
        native_message_ids=["m\x001", "m2"],
        prompt_speaker="Ma\ud800ra",
        outcome_speaker="bot\x00",
        started_at=T0,
    )
    report = capture(
        conn,
        task(
            [bad],
            native_id="019a\x00-thread\ud800",
            title=TaskTitle(text="Title\x00 with \ud800", source="chat_import:title"),
            native_context={"cwd": "/home/me/\x00x", "k\x00ey": ["\ud800", 1, None, 2.5]},
            ownership=OwnershipVerdict(
                ownership="user_owned", reason="codex:interactive-cli", evidence={"e": "\x00"}
            ),
            source_path="/x/roll\udcffout.jsonl",
        ),
    )
    assert report.tasks_captured == 1 and report.turns_appended == 1
    # 8 in the turn, 9 in the task (one per escaped byte of the path)
    assert report.unstorable_chars_replaced == 17
    assert report.metadata()["unstorable_chars_replaced"] == 17
    row = conn.execute(
        "SELECT native_id, title, native_context, ownership_evidence, source_path"
        " FROM captured_tasks"
    ).fetchone()
    assert row == (
        "019a\ufffd-thread\ufffd",
        "Title\ufffd with \ufffd",
        {"cwd": "/home/me/\ufffdx", "k\ufffdey": ["\ufffd", 1, None, 2.5]},
        {"e": "\ufffd"},
        "/x/roll\\xffout.jsonl",
    )
    turn_row = conn.execute(
        "SELECT native_turn_id, prompt, outcome, native_message_ids, prompt_speaker,"
        " outcome_speaker FROM agent_turns"
    ).fetchone()
    assert turn_row == (
        "turn\ufffd-0",
        "why does\ufffd the parser \ufffd fail?",
        "because of \ufffd and \ufffd",
        ["m\ufffd1", "m2"],
        "Ma\ufffdra",
        "bot\ufffd",
    )
    again = capture(conn, task([bad], native_id="019a\x00-thread\ud800"))
    assert (again.tasks_captured, again.turns_appended, again.drift_ignored) == (0, 0, 0)
    assert again.unstorable_chars_replaced == 0  # counted when written, not on every run


def test_file_issues_with_unstorable_text_are_recorded(conn: psycopg.Connection) -> None:
    report = CaptureReport()
    issue = ParseIssue(path="/x/\udcff.jsonl", line=3, reason="bad_field", detail="a\x00b\ud800")
    with conn.transaction():
        record_file_issue(conn, "chat_import", issue, report)
    assert conn.execute("SELECT path, detail FROM capture_skips").fetchone() == (
        "/x/\\xff.jsonl",
        "a\ufffdb\ufffd",
    )


# -- unanswered turns (issue 11): stored once quiet, the answer appended next to them ---------


def asked(i: int, prompt: str, native_id: str | None = "q") -> ParsedTurn:
    return ParsedTurn(
        ordinal=i,
        native_turn_id=native_id,
        prompt=prompt,
        outcome="",
        unanswered=True,
        started_at=T0 + timedelta(minutes=10 * i),
    )


def answered(i: int, prompt: str, outcome: str, native_id: str | None = "q") -> ParsedTurn:
    return ParsedTurn(
        ordinal=i,
        native_turn_id=native_id,
        prompt=prompt,
        outcome=outcome,
        started_at=T0 + timedelta(minutes=10 * i),
        completed_at=T0 + timedelta(minutes=10 * i + 90),
    )


def turn_rows(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT ordinal, prompt, outcome, unanswered, continues_ordinal FROM agent_turns"
        " ORDER BY ordinal"
    ).fetchall()


def test_an_unanswered_turn_is_stored_marked_and_its_late_answer_appended_beside_it(
    conn: psycopg.Connection,
) -> None:
    first = capture(conn, task([turn(0), asked(1, "anyone?")], source="chat_import"))
    assert first.turns_appended == 2
    stored = turn_rows(conn)
    assert stored == [(0, "prompt 0", "outcome 0", False, None), (1, "anyone?", "", True, None)]
    # The answer arrives: the stored turn stays as it is, the complete turn is appended and
    # says which turn it answers. Nothing counts as drift.
    late = capture(conn, task([turn(0), answered(1, "anyone?", "yes")], source="chat_import"))
    assert (late.turns_appended, late.drift_ignored) == (1, 0)
    assert turn_rows(conn) == [*stored, (2, "anyone?", "yes", False, 1)]
    row = conn.execute("SELECT turn_count, last_turn_appended_at FROM captured_tasks").fetchone()
    assert row == (3, T0 + timedelta(minutes=100))
    # Re-running changes nothing; the next turn appends after the answer.
    again = capture(conn, task([turn(0), answered(1, "anyone?", "yes")], source="chat_import"))
    assert (again.turns_appended, again.drift_ignored) == (0, 0)
    grown = capture(
        conn,
        task([turn(0), answered(1, "anyone?", "yes"), turn(2)], source="chat_import"),
    )
    assert (grown.turns_appended, grown.drift_ignored) == (1, 0)
    assert turn_rows(conn)[3] == (3, "prompt 2", "outcome 2", False, None)


def test_a_still_unanswered_turn_is_not_stored_twice(conn: psycopg.Connection) -> None:
    capture(conn, task([turn(0), asked(1, "anyone?")], source="chat_import"))
    again = capture(conn, task([turn(0), asked(1, "anyone?")], source="chat_import"))
    assert (again.turns_appended, again.drift_ignored) == (0, 0)
    # More prompt-side messages, not quiet yet: the connector returns only turn 0 for now.
    waiting = capture(conn, task([turn(0)], source="chat_import", unfinished_turn=True))
    assert (waiting.turns_appended, waiting.drift_ignored) == (0, 0)
    assert len(turn_rows(conn)) == 2


def test_a_question_extended_then_answered_is_appended_each_time(
    conn: psycopg.Connection,
) -> None:
    """Without message ids the question is recognised by its prompt: the new prompt starts with
    the stored one (more messages were added to the prompt side)."""
    capture(conn, task([asked(0, "anyone?", native_id=None)], source="chat_import"))
    more = capture(
        conn, task([asked(0, "anyone?\n\nhello?", native_id=None)], source="chat_import")
    )
    assert (more.turns_appended, more.drift_ignored) == (1, 0)
    done = capture(
        conn,
        task([answered(0, "anyone?\n\nhello?", "here", native_id=None)], source="chat_import"),
    )
    assert (done.turns_appended, done.drift_ignored) == (1, 0)
    assert turn_rows(conn) == [
        (0, "anyone?", "", True, None),
        (1, "anyone?\n\nhello?", "", True, 0),
        (2, "anyone?\n\nhello?", "here", False, 1),
    ]
    again = capture(
        conn,
        task([answered(0, "anyone?\n\nhello?", "here", native_id=None)], source="chat_import"),
    )
    assert (again.turns_appended, again.drift_ignored) == (0, 0)


def test_a_different_turn_in_place_of_an_unanswered_one_is_drift(
    conn: psycopg.Connection,
) -> None:
    capture(conn, task([asked(0, "anyone?", native_id=None)], source="chat_import"))
    report = capture(
        conn, task([answered(0, "something else", "x", native_id=None)], source="chat_import")
    )
    assert (report.turns_appended, report.drift_ignored) == (0, 1)
