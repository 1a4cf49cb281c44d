"""Gemini CLI captured into a real database: ownership skips, an idempotent re-run, monotonic
append, exclusion and forget. One database and one Gemini home for the module; the tests run in
order on them (each one says what it adds)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.capture.gemini_cli import GeminiCliConnector
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.db.connection import connect
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.capture.test_gemini_cli import (
    HEADLESS,
    HOME,
    INTERACTIVE,
    LEGACY,
    SUBAGENT,
    WORKING,
    gemini,
    line,
    user,
)
from memory_pipeline_tests.conftest import create_database, drop_database

WINDOW = (date(2025, 1, 1), date(2027, 1, 1))


@pytest.fixture(scope="module")
def db(pg_server, admin_url: str, template_db: str) -> Iterator[psycopg.Connection]:
    name = create_database(admin_url, template=template_db)
    with connect(pg_server.uri(name), autocommit=True) as connection:
        yield connection
    drop_database(admin_url, name)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copytree(HOME, tmp_path_factory.mktemp("gemini") / ".gemini"))


def run(conn: psycopg.Connection, home: Path):
    return capture_window(conn, [GeminiCliConnector([home])], *WINDOW)


def stored(conn: psycopg.Connection) -> dict[str, list[tuple[str, str]]]:
    rows = conn.execute(
        "SELECT k.native_id, t.prompt, t.outcome FROM captured_tasks k"
        " LEFT JOIN agent_turns t ON t.task_id = k.id WHERE k.source = 'gemini_cli'"
        " ORDER BY k.native_id, t.ordinal"
    ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for native, prompt, outcome in rows:
        out.setdefault(native, [])
        if prompt is not None:
            out[native].append((prompt, outcome))
    return out


def _parse_all(c: GeminiCliConnector):
    return [t for p in c.discover() for t in c.parse(p).tasks]


def log(home: Path) -> Path:
    return home / "tmp" / "ledger" / "chats" / "session-2026-10-12T08-05-3f9c1a2b.jsonl"


def test_capture_ownership_and_an_idempotent_rerun(db, home):
    report = run(db, home)
    got = stored(db)
    assert set(got) == {INTERACTIVE, WORKING}
    assert [p for p, _ in got[INTERACTIVE]] == [
        "Why does `ledger balance` print -0.00 for an empty account?",
        "Use Decimal then, and add a test for the empty account.",
    ]
    assert got[WORKING] == []  # its only turn is still running: it waits
    skips = dict(
        db.execute(
            "SELECT native_id, reason FROM capture_skips"
            " WHERE kind = 'task' AND source = 'gemini_cli'"
        ).fetchall()
    )
    assert skips == {
        HEADLESS: "gemini_cli:non-interactive",
        SUBAGENT: "gemini_cli:subagent",
        LEGACY: "gemini_cli:no-prompt-log",
    }
    assert report.ownership_skips == {
        "delegated:gemini_cli:non-interactive": 1,
        "delegated:gemini_cli:subagent": 1,
        "unknown:gemini_cli:no-prompt-log": 1,
    }
    context = db.execute(
        "SELECT native_context->>'cwd', native_context->>'project_hash', title"
        " FROM captured_tasks WHERE native_id = %s",
        [INTERACTIVE],
    ).fetchone()
    assert context is not None and context[0] == "/home/dev/src/ledger"
    assert len(context[1]) == 64 and context[2] == "Fix negative zero in ledger balance"
    before = db.execute("SELECT count(*), max(captured_at) FROM agent_turns").fetchone()
    second = run(db, home)
    assert second.turns_appended == 0 and second.tasks_captured == 0
    assert db.execute("SELECT count(*), max(captured_at) FROM agent_turns").fetchone() == before


def test_appended_turns_are_stored_after_the_old_ones(db, home):
    first = stored(db)[INTERACTIVE]
    with log(home).open("a") as f:
        f.write(line(user("n-1", "Also handle the CSV export.")))
        f.write(line(gemini("n-2", "The CSV export now uses `money()` too.")))
    report = run(db, home)
    assert report.turns_appended == 1
    assert stored(db)[INTERACTIVE] == [
        *first,
        ("Also handle the CSV export.", "The CSV export now uses `money()` too."),
    ]


def test_excluded_project_is_never_captured(db, home, monkeypatch):
    project = home / "tmp" / "secret"
    shutil.copytree(home / "tmp" / "ledger", project)
    (project / ".project_root").write_text("/home/dev/src/secret")
    logs = project / "logs.json"
    entries = json.loads(logs.read_text())
    for path in (project / "chats").glob("session-*.jsonl"):
        text = path.read_text().replace(INTERACTIVE, "0e0e0e0e-1111-4222-8333-444455556666")
        path.write_text(text.replace(WORKING, "0f0f0f0f-1111-4222-8333-444455556666"))
    logs.write_text(
        json.dumps(entries).replace(INTERACTIVE, "0e0e0e0e-1111-4222-8333-444455556666")
    )
    secret = "0e0e0e0e-1111-4222-8333-444455556666"
    parsed = {t.native_id: t for t in _parse_all(GeminiCliConnector([home]))}
    assert parsed[secret].native_context["cwd"] == "/home/dev/src/secret"
    assert parsed[secret].ownership.ownership == "user_owned" and parsed[secret].turns
    monkeypatch.setenv("MEMORY_EXCLUDE", "cwd:/home/dev/src/secret")
    run(db, home)
    assert "0e0e0e0e-1111-4222-8333-444455556666" not in stored(db)
    shutil.rmtree(project)


def test_forgotten_session_never_comes_back(db, home):
    forget(db, Selector(tasks=[("gemini_cli", INTERACTIVE)]))
    assert INTERACTIVE not in stored(db)
    with log(home).open("a") as f:  # Gemini keeps writing the forgotten session
        f.write(line(user("f-1", "One more question")))
        f.write(line(gemini("f-2", "One more answer.")))
    run(db, home)
    assert INTERACTIVE not in stored(db)
