"""The Task Semantic Pass against the database: atomic storage, one cursor, provenance."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest

from memory_pipeline.capture.models import OwnershipVerdict, ParsedTask, ParsedTurn, TaskTitle
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.capture.store import store_task
from memory_pipeline.semantic.models import (
    CorrectionEpisode,
    DistilledMemory,
    PassInput,
    PassResult,
    Segment,
)
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
from memory_pipeline.semantic.process import process_window

T0 = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=1)  # every task below is quiet by then
WINDOW = (date(2026, 10, 5), date(2026, 10, 6))
TURNS = [
    (
        "Set up rate limiting for the billing API.",
        "I added a token bucket in Redis with 100 requests per minute per key.",
    ),
    (
        "No, that's wrong - I asked for limits per customer, not per API key.",
        "Understood: the bucket is now keyed by customer id instead of API key.",
    ),
    (
        "Which store should hold the counters long term?",
        "We decided to keep the counters in Postgres because Redis added an ops burden.",
    ),
    (
        "Unrelated, but the nightly backup failed again.",
        "Turns out the root cause was a full /var partition; I rotated the old dumps.",
    ),
]


def turn(i: int) -> ParsedTurn:
    prompt, outcome = TURNS[i]
    return ParsedTurn(
        ordinal=i,
        native_turn_id=f"turn-{i}",
        prompt=prompt,
        outcome=outcome,
        native_message_ids=[f"u{i}", f"a{i}"],
        started_at=T0 + timedelta(minutes=10 * i),
        completed_at=T0 + timedelta(minutes=10 * i + 3),
    )


def capture(conn: psycopg.Connection, n: int, title: str = "Billing API limits") -> None:
    task = ParsedTask(
        source="codex",
        native_id="019a-billing",
        started_at=T0,
        title=TaskTitle(text=title, source="codex:session_index", observed_at=T0),
        ownership=OwnershipVerdict(ownership="user_owned", reason="codex:interactive-cli"),
        native_context={"cwd": "/home/me/src/ledgerline"},
        turns=[turn(i) for i in range(n)],
        source_path="/x/rollout.jsonl",
    )
    with conn.transaction():
        store_task(conn, task, CaptureReport())


def semantic_rows(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    tables = [
        "memories",
        "topic_segments",
        "memory_provenance",
        "semantic_cursors",
        "semantic_pass_runs",
    ]
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}


def cursor(conn: psycopg.Connection) -> int | None:
    row = conn.execute("SELECT last_ordinal FROM semantic_cursors").fetchone()
    return row[0] if row else None


class ScriptedBackend:
    """A backend whose answer the test chooses (the Ollama path has its own tests)."""

    name = "scripted"

    def __init__(self, answer: PassResult | Exception) -> None:
        self.answer = answer
        self.inputs: list[PassInput] = []

    def run(self, pass_input: PassInput) -> PassResult:
        self.inputs.append(pass_input)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_offline_pass_stores_segments_memories_and_a_correction(conn) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 4)
    report = process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    assert report.tasks_processed == 1 and not report.failures
    assert report.backend == "offline-rules"
    types = dict(conn.execute("SELECT type, count(*) FROM memories GROUP BY 1").fetchall())
    assert types["segment"] >= 2  # the backup question is its own topic
    assert types.get("decision", 0) >= 1 and types.get("correction_episode") == 1
    assert cursor(conn) == 3
    correction = conn.execute(
        "SELECT content, mem_class, metadata, tags FROM memories WHERE type = 'correction_episode'"
    ).fetchone()
    assert correction[1] == "episodic" and correction[2]["attributed_to"] == "user"
    assert "per customer" in correction[0] and correction[3] == ["correction"]
    # The native cwd is provenance, never the semantic project.
    assert conn.execute("SELECT count(*) FROM memories WHERE project IS NOT NULL").fetchone() == (
        0,
    )


def test_provenance_walk_from_a_memory_to_native_ids(conn) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 4)
    process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    rows = conn.execute(
        "SELECT t.source, t.native_id, s.first_ordinal, s.last_ordinal, a.ordinal, a.native_turn_id"
        " FROM memories m JOIN memory_provenance p ON p.memory_id = m.id"
        " JOIN topic_segments s ON s.id = p.segment_id JOIN captured_tasks t ON t.id = p.task_id"
        " JOIN agent_turns a ON a.id = p.turn_id"
        " WHERE m.type = 'decision' AND m.content ILIKE '%%postgres%%'"
    ).fetchall()
    assert rows, "the Postgres decision has no provenance"
    source, native_id, first, last, ordinal, native_turn = rows[0]
    assert (source, native_id) == ("codex", "019a-billing")
    assert first <= ordinal <= last and native_turn == f"turn-{ordinal}"
    assert 2 in {r[4] for r in rows}


def test_quiet_period_holds_back_a_live_task(conn) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 2)
    just_after = T0 + timedelta(minutes=20)
    report = process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=just_after)
    assert report.tasks_processed == 0 and report.tasks_waiting_for_quiet == 1
    assert cursor(conn) is None


def test_new_turns_get_the_tail_segment_as_context(conn) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 2)
    process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    assert cursor(conn) == 1
    before = semantic_rows(conn)["memories"]
    capture(conn, 4)
    backend = ScriptedBackend(
        PassResult(segments=[Segment(first_ordinal=2, last_ordinal=3, title="Counter storage")])
    )
    report = process_window(conn, backend, *WINDOW, 30, now=LATER)
    assert report.tasks_processed == 1
    (seen,) = backend.inputs
    tail = conn.execute(
        "SELECT first_ordinal, last_ordinal FROM topic_segments"
        " ORDER BY first_ordinal DESC OFFSET 1 LIMIT 1"
    ).fetchone()
    assert [t.ordinal for t in seen.tail_context] == list(range(tail[0], tail[1] + 1))
    assert [t.ordinal for t in seen.new_turns] == [2, 3]
    assert cursor(conn) == 3
    after = {r[0] for r in semantic_rows(conn)["memories"]}
    assert {r[0] for r in before} < after  # earlier memories untouched, one segment added


def test_a_continued_tail_grows_its_segment_memory(conn) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 1)
    process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    capture(conn, 2)
    backend = ScriptedBackend(
        PassResult(
            segments=[
                Segment(first_ordinal=0, last_ordinal=1, continues_tail=True, title="Rate limiting")
            ]
        )
    )
    process_window(conn, backend, *WINDOW, 30, now=LATER)
    segments = conn.execute("SELECT first_ordinal, last_ordinal FROM topic_segments").fetchall()
    assert segments == [(0, 1)]
    content = conn.execute("SELECT content FROM memories WHERE type = 'segment'").fetchone()[0]
    assert "token bucket" in content and "per customer" in content


def test_rename_changes_nothing_semantic(conn) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 4)
    process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    before = semantic_rows(conn)
    clock = conn.execute("SELECT last_turn_appended_at FROM captured_tasks").fetchone()
    capture(conn, 4, title="Rate limits per customer")
    report = process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    assert report.tasks_processed == 0
    assert semantic_rows(conn) == before
    assert conn.execute("SELECT last_turn_appended_at FROM captured_tasks").fetchone() == clock


BAD_RESULTS = {
    "model error": RuntimeError("ollama: HTTP 500"),
    "segments that do not cover the turns": PassResult(
        segments=[Segment(first_ordinal=0, last_ordinal=1, title="half")]
    ),
    "a memory citing a turn outside its segment": PassResult(
        segments=[
            Segment(
                first_ordinal=0,
                last_ordinal=3,
                title="all",
                memories=[
                    DistilledMemory(
                        type="decision", title="x", content="y", supporting_ordinals=[7]
                    )
                ],
            )
        ]
    ),
    "a correction of a later turn": PassResult(
        segments=[Segment(first_ordinal=0, last_ordinal=3, title="all")],
        corrections=[
            CorrectionEpisode(
                correcting_ordinal=1,
                corrected_ordinal=2,
                title="t",
                agent_did="a",
                user_expected="b",
            )
        ],
    ),
}


@pytest.mark.parametrize("answer", list(BAD_RESULTS.values()), ids=list(BAD_RESULTS))
def test_backend_failures_store_nothing(conn, answer) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 4)
    report = process_window(conn, ScriptedBackend(answer), *WINDOW, 30, now=LATER)
    assert len(report.failures) == 1 and report.failures[0].native_id == "019a-billing"
    assert all(rows == [] for rows in semantic_rows(conn).values())
    assert conn.execute("SELECT count(*) FROM agent_turns").fetchone() == (4,)


@pytest.mark.parametrize(
    "table",
    ["memories", "topic_segments", "memory_provenance", "semantic_cursors", "semantic_pass_runs"],
)
def test_a_database_failure_at_any_step_leaves_no_partial_rows(conn, table: str) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 4)
    # A real database error in the middle of storing the pass: the nth write to `table` fails.
    conn.execute(
        "CREATE FUNCTION fail_write() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$"
    )
    conn.execute(
        f"CREATE TRIGGER fail_write BEFORE INSERT ON {table} FOR EACH ROW"
        " EXECUTE FUNCTION fail_write()"
    )
    report = process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    assert len(report.failures) == 1 and "injected failure" in report.failures[0].error
    assert all(rows == [] for rows in semantic_rows(conn).values())
    conn.execute(f"DROP TRIGGER fail_write ON {table}")
    retry = process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    assert retry.tasks_processed == 1 and not retry.failures and cursor(conn) == 3


def test_error_mid_batch_keeps_the_other_tasks(conn) -> None:  # type: ignore[no-untyped-def]
    capture(conn, 4)
    other = ParsedTask(
        source="claude_code",
        native_id="sess-2",
        started_at=T0 + timedelta(hours=1),
        ownership=OwnershipVerdict(ownership="user_owned", reason="claude_code:typed-prompt"),
        turns=[turn(0)],
        source_path="/y.jsonl",
    )
    with conn.transaction():
        store_task(conn, other, CaptureReport())

    class FailsOnBilling(OfflineRulesBackend):
        def run(self, pass_input: PassInput) -> PassResult:
            if pass_input.task_title == "Billing API limits":
                raise RuntimeError("model crashed")
            return super().run(pass_input)

    report = process_window(conn, FailsOnBilling(), *WINDOW, 30, now=LATER)
    assert report.tasks_processed == 1 and [f.native_id for f in report.failures] == [
        "019a-billing"
    ]
    processed = conn.execute(
        "SELECT t.native_id FROM semantic_cursors c JOIN captured_tasks t ON t.id = c.task_id"
    ).fetchall()
    assert processed == [("sess-2",)]


PEOPLE = [
    (
        "Morning! I had a second interview yesterday with a company in Copenhagen.",
        "Copenhagen?? Since when are you looking at jobs abroad? How do you feel about it?",
    ),
    (
        "I wasn't really looking. A recruiter messaged me and I said yes to a call out of boredom.",
        "That's wild. How did it go? What did you ask them for?",
    ),
    (
        "No, I asked for forty-five thousand. That covers the flat and the move.",
        "Good weird. Tell me when you've decided.",
    ),
]


def capture_chat(conn: psycopg.Connection, turn_rule: str) -> None:
    """A chat import: two people talking (the speaker rule) or a person and an AI (roles)."""
    people = turn_rule == "speakers"
    turns = [
        ParsedTurn(
            ordinal=i,
            native_turn_id=f"m{i}",
            prompt=prompt,
            outcome=outcome,
            native_message_ids=[f"p{i}", f"o{i}"],
            started_at=T0 + timedelta(minutes=10 * i),
            completed_at=T0 + timedelta(minutes=10 * i + 3),
            prompt_speaker="Sam" if people else None,
            outcome_speaker="Aoife" if people else None,
        )
        for i, (prompt, outcome) in enumerate(PEOPLE)
    ]
    task = ParsedTask(
        source="chat_import",
        native_id=f"friends-{turn_rule}",
        started_at=T0,
        title=None,
        ownership=OwnershipVerdict(ownership="user_owned", reason="chat_import:user-import"),
        native_context={"import_file": "friends.jsonl", "turn_rule": turn_rule},
        turns=turns,
        source_path="/x/friends.jsonl",
    )
    with conn.transaction():
        store_task(conn, task, CaptureReport())


def test_a_reply_between_people_is_no_correction_episode_whatever_the_backend(conn) -> None:  # type: ignore[no-untyped-def]
    # "No, I asked for ..." answers a friend's question: nobody corrected an agent's work. Between
    # a person and an AI the same words after an outcome are a correction.
    capture_chat(conn, "speakers")
    capture_chat(conn, "roles")
    report = process_window(conn, OfflineRulesBackend(), *WINDOW, 30, now=LATER)
    assert report.tasks_processed == 2 and not report.failures
    rows = conn.execute(
        "SELECT t.native_id, count(DISTINCT m.id) FROM captured_tasks t"
        " LEFT JOIN memory_provenance p ON p.task_id = t.id"
        " LEFT JOIN memories m ON m.id = p.memory_id AND m.type = 'correction_episode'"
        " GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert rows[0][0] == "friends-roles" and rows[0][1] >= 1
    assert rows[1] == ("friends-speakers", 0)
    # Chit-chat between people ("That's wild", "How do you feel?", "Good weird") is neither a
    # decision nor an insight.
    assert conn.execute(
        "SELECT count(*) FROM memories m JOIN memory_provenance p ON p.memory_id = m.id"
        " JOIN captured_tasks t ON t.id = p.task_id"
        " WHERE t.native_id = 'friends-speakers' AND m.type IN ('decision', 'insight')"
    ).fetchone() == (0,)


def test_the_pass_input_says_when_people_talk_to_each_other(conn) -> None:  # type: ignore[no-untyped-def]
    capture_chat(conn, "speakers")
    backend = ScriptedBackend(RuntimeError("stop"))
    process_window(conn, backend, *WINDOW, 30, now=LATER)
    assert [i.between_people for i in backend.inputs] == [True]
    # Not part of the stored input hash or the model prompt: the field is excluded from dumps.
    assert "between_people" not in backend.inputs[0].model_dump_json()
