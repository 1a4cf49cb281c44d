"""Privacy at capture and tombstones: private markers never reach the database, excluded tasks
are recorded and never stored, and nothing forgotten comes back through the sensor or a
backfill."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from memory_pipeline.capture.definitions import transcript_sensor
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.errors import UserError
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline.jobs import PARTITION_TAG, run_days
from memory_pipeline.resources import DatabaseResource, SourcesResource
from memory_pipeline_tests.capture.test_capture_assets import codex_home, materialize
from memory_pipeline_tests.forget.test_cascade import dump

START = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
ALL = (date(2026, 1, 1), date(2027, 1, 1))


def chat(path: Path, task_id: str, turns: list[tuple[str, str]], start: datetime = START) -> None:
    """Append answered turns of one conversation to a chat import file."""
    lines = []
    for i, (prompt, answer) in enumerate(turns):
        at = start + timedelta(minutes=2 * i)
        lines.append(
            {"task_id": task_id, "role": "user", "text": prompt, "timestamp": at.isoformat()}
        )
        lines.append(
            {
                "task_id": task_id,
                "role": "assistant",
                "text": answer,
                "timestamp": (at + timedelta(seconds=30)).isoformat(),
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


def src(tmp_path: Path, codex: Path | None = None) -> SourcesResource:
    return SourcesResource.of(
        codex_home=str(codex or tmp_path / "no-codex"),
        claude_home=str(tmp_path / "no-claude"),
        import_dir=str(tmp_path / "imports"),
        kind="real",
        quiet_minutes=0,
    )


def turns(word: str, n: int, first: int = 0) -> list[tuple[str, str]]:
    return [
        (f"{word} question {i}: which cache eviction?", f"{word} answer {i}: LRU.")
        for i in range(first, first + n)
    ]


def count(conn: psycopg.Connection, query: str, *params: object) -> int:
    return int(conn.execute(query, list(params)).fetchone()[0])  # type: ignore[index]


def test_private_markers_never_reach_the_database(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    chat(
        tmp_path / "imports" / "a.jsonl",
        "chat-private",
        [
            ("deploy with <private>Hunter2WORDONE</private> as the key, ok?", "Yes."),
            ("and <PRIVATE>outer <private>WORDTWO</private> still</Private> here", "Fine."),
            ("the rest <private reason='x'>WORDTHREE never closed", "Echo: < private >WORDFOUR"),
        ],
    )
    report = capture_window(conn, src(tmp_path).connectors(), *ALL)
    assert report.turns_appended == 3
    assert report.redactions.by_kind["private"] == 4
    text = dump(db_url).lower()
    for word in ("hunter2wordone", "wordtwo", "wordthree", "wordfour"):
        assert word not in text
    prompts = [r[0] for r in conn.execute("SELECT prompt FROM agent_turns ORDER BY ordinal")]
    assert prompts == [
        "deploy with [PRIVATE] as the key, ok?",
        "and [PRIVATE] here",
        "the rest [PRIVATE]",
    ]
    assert count(conn, "SELECT sum(redactions) FROM agent_turns") == 4


def test_excluded_tasks_are_recorded_and_never_stored(
    conn: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = codex_home(tmp_path, "01a0c2e9")  # cwd /home/mara/src/logslice
    chat(tmp_path / "imports" / "a.jsonl", "chat-kept", turns("kept", 2))
    monkeypatch.setenv("MEMORY_EXCLUDE", "cwd:/home/mara/src/*")
    report = capture_window(conn, src(tmp_path, home).connectors(), *ALL)
    assert report.skipped_tasks == {"excluded": 1}
    assert conn.execute("SELECT source FROM captured_tasks").fetchall() == [("chat_import",)]
    (reason, detail, evidence) = conn.execute(
        "SELECT reason, detail, evidence FROM capture_skips WHERE kind = 'task'"
    ).fetchone()  # type: ignore[misc]
    assert reason == "excluded" and evidence == {"rule": "cwd:/home/mara/src/*"}
    assert "cwd:/home/mara/src/*" in detail

    monkeypatch.setenv("MEMORY_EXCLUDE", "source:chat_import, repo:logslice")
    capture_window(conn, src(tmp_path, home).connectors(), *ALL)
    # One row per task, naming the rule that matched this time. (The chat captured before the
    # rule existed stays captured: `forget --task` removes it.)
    assert dict(
        conn.execute("SELECT source, evidence->>'rule' FROM capture_skips WHERE kind = 'task'")
    ) == {"codex": "repo:logslice", "chat_import": "source:chat_import"}

    monkeypatch.setenv("MEMORY_EXCLUDE", "host:/x")
    with pytest.raises(UserError, match="MEMORY_EXCLUDE: 'host:/x' is not a rule"):
        capture_window(conn, src(tmp_path, home).connectors(), *ALL)


def test_a_forgotten_task_never_comes_back_through_the_sensor_or_a_backfill(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    a, b = tmp_path / "imports" / "a.jsonl", tmp_path / "imports" / "b.jsonl"
    chat(a, "chat-forget", turns("FORGETME", 2))
    chat(b, "chat-keep", turns("KEEPALIVE", 2))
    sources = src(tmp_path)
    capture_window(conn, sources.connectors(), *ALL)
    forget(conn, Selector(tasks=[("chat_import", "chat-forget")]))
    assert count(conn, "SELECT count(*) FROM captured_tasks") == 1

    # Both conversations go on; the sensor sees both files change and requests their day.
    chat(a, "chat-forget", turns("FORGETME", 1, first=2), START + timedelta(minutes=10))
    chat(b, "chat-keep", turns("KEEPALIVE", 1, first=2), START + timedelta(minutes=10))
    with (
        dg.DagsterInstance.ephemeral() as instance,
        dg.build_sensor_context(
            instance=instance,
            resources={"sources": sources, "db": DatabaseResource(url=db_url)},
        ) as context,
    ):
        result = transcript_sensor(context)
    (request,) = result.run_requests  # type: ignore[misc]
    tags = dict(request.tags)
    if request.partition_key:
        tags[PARTITION_TAG] = request.partition_key
    days = run_days(tags)
    assert days == {START.date()}
    for day in sorted(days):
        meta = materialize(db_url, sources, day.isoformat())
        assert meta["skipped_by_reason"] == {"forgotten": 1}
    assert count(conn, "SELECT count(*) FROM agent_turns") == 3  # B's three turns only

    # A full backfill reads every file again: still nothing of A.
    report = capture_window(conn, sources.connectors(), *ALL)
    assert report.skipped_tasks == {"forgotten": 1}
    assert "forgetme" not in dump(db_url).lower()


def test_a_forgotten_turn_is_not_recaptured_and_later_turns_keep_their_place(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "imports" / "a.jsonl"
    chat(path, "chat-a", [*turns("KEEPALIVE", 1), *turns("FORGETME", 2, first=1)])
    sources = src(tmp_path)
    capture_window(conn, sources.connectors(), *ALL)
    task_id, turn_ids = conn.execute(
        "SELECT t.id, array_agg(a.id ORDER BY a.ordinal) FROM captured_tasks t"
        " JOIN agent_turns a ON a.task_id = t.id GROUP BY t.id"
    ).fetchone()  # type: ignore[misc]
    # A segment memory made of turns 1 and 2 (what the semantic pass would store).
    memory = conn.execute(
        "INSERT INTO memories (type, title, content, partition_day) VALUES"
        " ('segment', 'FORGETME', 'FORGETME segment', '2026-10-05') RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    segment = conn.execute(
        "INSERT INTO topic_segments (task_id, first_ordinal, last_ordinal, title, memory_id)"
        " VALUES (%s, 1, 2, 'FORGETME', %s) RETURNING id",
        [task_id, memory],
    ).fetchone()[0]  # type: ignore[index]
    for turn in turn_ids[1:]:
        conn.execute(
            "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
            " VALUES (%s, %s, %s, %s, 'segment')",
            [memory, turn, segment, task_id],
        )
    report = forget(conn, Selector(memory_ids=[memory]))
    assert report.turns == 2 and report.tasks == []  # turn 0 keeps the task

    chat(path, "chat-a", turns("KEEPALIVE", 1, first=3), START + timedelta(minutes=10))
    capture_window(conn, sources.connectors(), *ALL)
    rows = conn.execute("SELECT ordinal, prompt FROM agent_turns ORDER BY ordinal").fetchall()
    assert [r[0] for r in rows] == [0, 3]  # the new turn comes after every turn ever stored
    assert "forgetme" not in dump(db_url).lower()


def test_a_forgotten_turn_stays_forgotten_after_the_redaction_rules_change(
    conn: psycopg.Connection, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn's stored hash is of its redacted text: new rules give the same source turn a new
    hash, so the tombstone must also hold a key of the source text itself."""
    from memory_pipeline.capture import store

    path = tmp_path / "imports" / "a.jsonl"
    secret = "zq81TOMBSTONE9kw"
    chat(
        path,
        "chat-rules",
        [("which cache eviction?", "LRU."), (f"deploy with OLDRULES_SECRET={secret}", "Done.")],
    )
    sources = src(tmp_path)
    real_redact = store.redact
    # An older release whose rules did not know the secret.
    monkeypatch.setattr(store, "redact", lambda text: (text, store.Redactions()))
    capture_window(conn, sources.connectors(), *ALL)
    turn = conn.execute("SELECT id FROM agent_turns WHERE prompt LIKE %s", [f"%{secret}%"])
    report = forget(conn, Selector(query=secret, query_turns=[turn.fetchone()[0]]))  # type: ignore[index]
    assert report.turns == 1

    monkeypatch.setattr(store, "redact", real_redact)  # the upgrade: the rules now know it
    capture_window(conn, sources.connectors(), *ALL)
    prompts = [r[0] for r in conn.execute("SELECT prompt FROM agent_turns ORDER BY ordinal")]
    assert prompts == ["which cache eviction?"], prompts
