"""Cursor tasks through the real capture store (PostgreSQL): ownership skips, append and drift,
renames, idempotence, exclusions and forget."""

from __future__ import annotations

import sqlite3
from datetime import date

import psycopg
import pytest

from memory_pipeline.capture.changes import scan_changes
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.capture.cursor.conftest import SPLIT_ID, CursorHome
from memory_pipeline_tests.support.cursor_store import get, put

ALL = (date(2026, 1, 1), date(2027, 1, 1))
CAPTURED = {  # user-owned composers of global-split.json and their complete turns
    SPLIT_ID: 2,
    "0b9d8e7f-6a5b-4c3d-2e1f-001122334455": 1,
    "9e000000-0000-4000-8000-000000000009": 1,
    "ba000000-0000-4000-8000-0000000000ba": 2,
}


def turns_of(conn: psycopg.Connection) -> dict[str, int]:
    rows = conn.execute(
        "SELECT t.native_id, count(a.id) FROM captured_tasks t"
        " LEFT JOIN agent_turns a ON a.task_id = t.id WHERE t.source = 'cursor'"
        " GROUP BY t.native_id"
    ).fetchall()
    return dict(rows)


def snapshot(conn: psycopg.Connection) -> list:
    return conn.execute(
        "SELECT t.native_id, t.title, a.ordinal, a.prompt, a.outcome FROM captured_tasks t"
        " JOIN agent_turns a ON a.task_id = t.id ORDER BY 1, 3"
    ).fetchall()


def test_capture_keeps_the_users_composers_and_records_the_others(
    conn: psycopg.Connection, split_home: CursorHome
):
    report = capture_window(conn, [split_home.connector()], *ALL)
    assert turns_of(conn) == CAPTURED
    skips = dict(
        conn.execute(
            "SELECT native_id, reason FROM capture_skips WHERE kind = 'task' AND source = 'cursor'"
        ).fetchall()
    )
    assert skips == {
        "task-toolu_01AbCdEfGh": "cursor:subagent",
        "bg000000-0000-4000-8000-000000000001": "cursor:background-agent",
        "b0n00000-0000-4000-8000-000000000002": "cursor:best-of-n-worker",
        "e0000000-0000-4000-8000-0000000000e1": "cursor:no-editor-state",
    }
    file_skips = {
        r[0]
        for r in conn.execute(
            "SELECT reason FROM capture_skips WHERE kind = 'file' AND source = 'cursor'"
        )
    }
    assert {"invalid_json", "missing_record"} <= file_skips
    assert report.unfinished_turns_waiting >= 1
    (cwd,) = conn.execute(
        "SELECT native_context->>'cwd' FROM captured_tasks WHERE native_id = %s", [SPLIT_ID]
    ).fetchone()
    assert cwd == "/home/mara/src/meterflow"
    before = snapshot(conn)
    capture_window(conn, [split_home.connector()], *ALL)  # a second run changes no row
    assert snapshot(conn) == before


def test_append_drift_and_rename_through_the_store(
    conn: psycopg.Connection, split_home: CursorHome
):
    db = split_home.global_db
    capture_window(conn, [split_home.connector()], *ALL)
    before = [r for r in snapshot(conn) if r[0] == SPLIT_ID]
    composer = get(db, f"composerData:{SPLIT_ID}")
    for bid, btype, text in (("u3", 1, "Add jitter."), ("a3", 2, "Jitter of 20% added.")):
        put(
            db,
            f"bubbleId:{SPLIT_ID}:{bid}",
            {"type": btype, "bubbleId": bid, "text": text, "richText": "{}"},
        )
        composer["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": btype})
    composer["name"] = "Upload retries with backoff"
    put(db, f"composerData:{SPLIT_ID}", composer)
    # drift: Cursor rewrites an old answer in place; the stored turn stays as it was
    old = get(db, f"bubbleId:{SPLIT_ID}:a2-0001")
    put(db, f"bubbleId:{SPLIT_ID}:a2-0001", {**old, "text": "rewritten later"})
    report = capture_window(conn, [split_home.connector()], *ALL)
    after = [r for r in snapshot(conn) if r[0] == SPLIT_ID]
    assert [r[2:] for r in after[:2]] == [r[2:] for r in before]
    assert after[2][2:] == (2, "Add jitter.", "Jitter of 20% added.")
    assert report.turns_appended == 1 and report.drift_ignored == 1 and report.renames == 1
    assert after[0][1] == "Upload retries with backoff"


def test_excluded_cursor_tasks_are_recorded_and_never_stored(
    conn: psycopg.Connection, split_home: CursorHome, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MEMORY_EXCLUDE", "cwd:/home/mara/src/*")
    report = capture_window(conn, [split_home.connector()], *ALL)
    assert turns_of(conn) == {}
    assert report.skipped_tasks["excluded"] == 8  # every task in that folder, whoever owns it
    monkeypatch.setenv("MEMORY_EXCLUDE", "source:cursor")
    capture_window(conn, [split_home.connector()], *ALL)
    assert turns_of(conn) == {}


def test_a_forgotten_cursor_task_never_comes_back(conn: psycopg.Connection, split_home: CursorHome):
    capture_window(conn, [split_home.connector()], *ALL)
    forget(conn, Selector(tasks=[("cursor", SPLIT_ID)]))
    assert SPLIT_ID not in turns_of(conn)
    put(split_home.global_db, "probe", "{}")  # the store changed: the next run reads it again
    capture_window(conn, [split_home.connector()], *ALL)
    assert SPLIT_ID not in turns_of(conn)
    assert set(turns_of(conn)) == set(CAPTURED) - {SPLIT_ID}


def test_the_sensor_sees_a_write_that_only_reached_the_wal(
    conn: psycopg.Connection, split_home: CursorHome
):
    db = split_home.global_db
    capture_window(conn, [split_home.connector()], *ALL)
    # captured as is (a workspace store without tasks has no day: nothing to request)
    assert [c for c in scan_changes(conn, [split_home.connector()]).changes if c.days] == []
    main_file = (db.stat().st_size, db.stat().st_mtime_ns)
    cursor_app = sqlite3.connect(db)  # Cursor keeps the store open while it runs
    cursor_app.execute("INSERT INTO ItemTable (key, value) VALUES ('probe', '{}')")
    cursor_app.commit()  # the page goes to state.vscdb-wal; no checkpoint yet
    try:
        assert (db.stat().st_size, db.stat().st_mtime_ns) == main_file
        changes = [c for c in scan_changes(conn, [split_home.connector()]).changes if c.days]
    finally:
        cursor_app.close()
    assert [c.path for c in changes] == [str(db)]
    assert date(2026, 10, 5) in changes[0].days
