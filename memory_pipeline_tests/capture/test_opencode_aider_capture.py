"""OpenCode and Aider through the real capture store: ownership skips, monotonic append and
drift, renames, per-source counts, exclusions, forget and tombstones (one database per test,
both sources in each)."""

from __future__ import annotations

import sqlite3
from datetime import date, datetime
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.capture.aider import AiderConnector
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.opencode import OpenCodeConnector
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.support.aider_history import History, chat
from memory_pipeline_tests.support.opencode_store import (
    T0,
    Sess,
    add_sqlite_session,
    turn,
    write_sqlite_store,
)

ALL = (date(2026, 1, 1), date(2027, 1, 1))
ANSWER = "Opened it with utf8-lossy and strip the BOM."
TYPED = "ses_5f2a9c1e0ffeTyped0000001"
RUN = [{"permission": "question", "action": "deny", "pattern": "*"}]


def stores(tmp_path: Path) -> tuple[OpenCodeConnector, AiderConnector, Path, History]:
    data = tmp_path / "opencode"
    sessions = [
        Sess(
            "ses_5f2a9c1e0ffeTyped0000001",
            "Inclusive --since",
            T0,
            T0 + 1,
            messages=turn(0, "why does --since drop lines?", "It is exclusive; fixed."),
        ),
        Sess(
            "ses_5f2a9c1e0ffeRun00000001",
            "Bump MSRV",
            T0,
            T0 + 1,
            permission=RUN,
            messages=turn(0, "bump the msrv", "done", base=T0 + 5_000),
        ),
        Sess(
            "ses_5f2a9c1e0ffeChild000001",
            "explore",
            T0,
            T0 + 1,
            parent="ses_5f2a9c1e0ffeTyped0000001",
            messages=turn(0, "find comparisons", "two places", base=T0 + 9_000),
        ),
    ]
    db = write_sqlite_store(data / "opencode.db", sessions)
    repo = tmp_path / "src" / "meterflow"
    h = History(repo / ".aider.chat.history.md")
    h.start(datetime(2026, 9, 24, 8, 41, 12))
    chat(h, "accept the BOM in the utility CSV", ANSWER)
    h.start(datetime(2026, 9, 25, 8, 0, 0), argv="aider --message 'add type hints' --yes-always")
    chat(h, "add type hints", "Added.")
    return (
        OpenCodeConnector(data),
        AiderConnector(roots=[tmp_path / "src"]),
        db,
        h,
    )


def rows(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    return conn.execute(
        "SELECT t.source, u.prompt, u.outcome FROM agent_turns u"
        " JOIN captured_tasks t ON t.id = u.task_id ORDER BY t.source, u.ordinal"
    ).fetchall()


def test_capture_append_drift_rename_and_counts(conn: psycopg.Connection, tmp_path: Path) -> None:
    oc, ai, db, h = stores(tmp_path)
    report = capture_window(conn, [oc, ai], *ALL)
    assert rows(conn) == [
        (
            "aider",
            "accept the BOM in the utility CSV",
            "Opened it with utf8-lossy and strip the BOM.",
        ),
        ("opencode", "why does --since drop lines?", "It is exclusive; fixed."),
    ]
    # Delegated sessions are skipped and recorded with their native reason.
    assert report.ownership_skips == {
        "delegated:aider:scripted-message": 1,
        "delegated:opencode:child-session": 1,
        "delegated:opencode:run": 1,
    }
    assert report.by_source["opencode"]["turns_appended"] == 1
    assert report.by_source["aider"]["turns_appended"] == 1
    before = conn.execute("SELECT * FROM agent_turns ORDER BY id").fetchall()
    tasks_before = conn.execute("SELECT * FROM captured_tasks ORDER BY id").fetchall()
    capture_window(conn, [oc, ai], *ALL)  # idempotent: a second run changes no row
    assert conn.execute("SELECT * FROM agent_turns ORDER BY id").fetchall() == before
    assert conn.execute("SELECT * FROM captured_tasks ORDER BY id").fetchall() == tasks_before

    # OpenCode answers a second prompt in place (WAL) and renames the session; the first
    # answer is rewritten in the database (drift: the stored turn stays as captured).
    s = Sess(
        "ses_5f2a9c1e0ffeTyped0000001",
        "Make --since inclusive",
        T0,
        T0 + 2,
        messages=turn(0, "why does --since drop lines?", "REWRITTEN")
        + turn(1, "and --until?", "half-open already"),
    )
    w = sqlite3.connect(db)
    add_sqlite_session(w, s)
    w.commit()
    w.close()
    # Aider's file is rewritten (the first answer changed: drift) and a new chat appended.
    path = h.path
    path.write_text(path.read_text().replace("strip the BOM.", "CHANGED."))
    h.start(datetime(2026, 9, 26, 7, 55, 30))
    chat(h, "rename GridPulse to GridPulseClient", "Renamed in 4 files.")
    report = capture_window(conn, [oc, ai], *ALL)
    assert ("aider", "rename GridPulse to GridPulseClient", "Renamed in 4 files.") in rows(conn)
    assert [r for r in rows(conn) if "CHANGED" in r[2]] == []
    assert ("opencode", "and --until?", "half-open already") in rows(conn)
    assert ("opencode", "why does --since drop lines?", "It is exclusive; fixed.") in rows(conn)
    assert report.drift_ignored == 2
    title = conn.execute(
        "SELECT title, title_source FROM captured_tasks WHERE native_id = %s", [s.id]
    ).fetchone()
    assert title == ("Make --since inclusive", "opencode:session.title")


def test_exclusions_and_forget_apply_to_both_sources(
    conn: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    oc, ai, _db, _h = stores(tmp_path)
    monkeypatch.setenv("MEMORY_EXCLUDE", "source:aider, cwd:/home/mara/src/logslice")
    report = capture_window(conn, [oc, ai], *ALL)
    assert report.skipped_tasks == {"excluded": 5}  # exclusion first, whoever owns them
    assert rows(conn) == []
    monkeypatch.delenv("MEMORY_EXCLUDE")
    capture_window(conn, [oc, ai], *ALL)
    assert [r[0] for r in rows(conn)] == ["aider", "opencode"]
    (aider_id,) = conn.execute(
        "SELECT native_id FROM captured_tasks WHERE source = 'aider'"
    ).fetchone()  # type: ignore[misc]
    forget(
        conn, Selector(tasks=[("aider", aider_id), ("opencode", "ses_5f2a9c1e0ffeTyped0000001")])
    )
    assert rows(conn) == []
    capture_window(conn, [oc, ai], *ALL)  # tombstones: nothing forgotten comes back
    assert rows(conn) == []
