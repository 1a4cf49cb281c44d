"""Kiro CLI and Kiro IDE captured into a real database: ownership skips, monotonic append with
drift ignored, renames, the SQLite store changed in place, exclusions, forget and tombstones."""

from __future__ import annotations

import json
import sqlite3
from datetime import date
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.kiro_cli import KiroCliConnector
from memory_pipeline.capture.kiro_ide import KiroIdeConnector
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.capture.kiro_fixtures import build_store, kiro_home, put, value
from memory_pipeline_tests.capture.test_kiro_ide import DATA as IDE_DATA

WINDOW = (date(2026, 1, 1), date(2027, 1, 1))
TYPED = "01951b2e-6c1d-7a3b-9f00-1a2b3c4d5e6f"
SESSION = "0f3d6b1c-2a9e-4c7f-b1d2-9e8f7a6b5c4d"
IDE_CHAT = "b7c1d2e3-f4a5-4b6c-9d7e-8f9a0b1c2d3e"


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Path]:
    import shutil

    home = kiro_home(tmp_path / "kiro")
    data = tmp_path / "kiro-cli"
    build_store(data / "data.sqlite3", "kiro_cli")
    ide = Path(shutil.copytree(IDE_DATA, tmp_path / "kiro.kiroagent"))
    return {"home": home, "data": data, "ide": ide}


def run(conn: psycopg.Connection, s: dict[str, Path]):
    connectors = [KiroCliConnector([s["home"], s["data"]]), KiroIdeConnector([s["ide"]])]
    return capture_window(conn, connectors, *WINDOW)


def stored(conn: psycopg.Connection) -> dict[tuple[str, str], list[tuple[str, str]]]:
    rows = conn.execute(
        "SELECT k.source, k.native_id, t.prompt, t.outcome FROM captured_tasks k"
        " LEFT JOIN agent_turns t ON t.task_id = k.id ORDER BY k.source, k.native_id, t.ordinal"
    ).fetchall()
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for source, native, prompt, outcome in rows:
        out.setdefault((source, native), [])
        if prompt is not None:
            out[(source, native)].append((prompt, outcome))
    return out


def skips(conn: psycopg.Connection) -> dict[str, str]:
    rows = conn.execute(
        "SELECT native_id, reason FROM capture_skips WHERE kind = 'task' AND source LIKE 'kiro%'"
    ).fetchall()
    return dict(rows)


def test_capture_ownership_and_idempotence(conn, sources):
    report = run(conn, sources)
    got = stored(conn)
    assert {k for k in got if k[0] == "kiro_cli"} == {
        ("kiro_cli", TYPED),
        ("kiro_cli", SESSION),
        ("kiro_cli", "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"),
    }
    assert {k for k in got if k[0] == "kiro_ide"} == {
        ("kiro_ide", "wf-3a1b9c"),
        ("kiro_ide", IDE_CHAT),
        ("kiro_ide", "d9e3f4a5-b6c7-4d8e-9fa0-1b2c3d4e5f6a"),
    }
    assert skips(conn) == {
        "01951b30-0000-7c00-8a00-0f0e0d0c0b0a": "kiro_cli:no-typed-prompt",
        "01951b31-1111-7d00-8b00-aaaaaaaaaaaa": "kiro_cli:no-typed-prompt",
        "5b8e2d41-7c3a-4f90-a6e1-3d2c1b0a9f8e": "kiro_cli:subagent",
        "c8d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f": "kiro_ide:hook",
    }
    assert report.ownership_skips == {
        "unknown:kiro_cli:no-typed-prompt": 2,
        "delegated:kiro_cli:subagent": 1,
        "delegated:kiro_ide:hook": 1,
    }
    cwd = conn.execute(
        "SELECT native_context->>'cwd' FROM captured_tasks WHERE native_id = %s", [TYPED]
    ).fetchone()
    assert cwd == ("/home/dev/src/tilemap",)
    before = conn.execute("SELECT count(*), max(captured_at) FROM agent_turns").fetchone()
    second = run(conn, sources)
    assert second.turns_appended == 0 and second.tasks_captured == 0
    assert conn.execute("SELECT count(*), max(captured_at) FROM agent_turns").fetchone() == before


def test_store_changed_in_place_appends_and_ignores_drift(conn, sources):
    run(conn, sources)
    db = sources["data"] / "data.sqlite3"
    conv = value("kiro_cli_v2_typed.json")
    conv["history"][0]["assistant"]["Response"]["content"] = "rewritten in place"  # drift
    conv["history"].append(
        {
            "user": {
                "content": {"Prompt": {"prompt": "And a test for the error text"}},
                "timestamp": "2026-10-12T10:09:00+02:00",
            },
            "assistant": {
                "Response": {
                    "message_id": "c3d4e5f6-0003",
                    "content": "Added `test_strict_lists_all_ids`.",
                }
            },
            "request_metadata": {
                "message_id": "c3d4e5f6-0003",
                "stream_end_timestamp_ms": 1791792600000,
            },
        }
    )
    writer = sqlite3.connect(db)
    put(
        writer,
        {
            "table": "conversations_v2",
            "key": "/home/dev/src/tilemap",
            "created_at": 1791792300000,
            "updated_at": 1791792600000,
        },
        conv,
    )
    writer.commit()  # WAL mode: only data.sqlite3-wal changes, not the database file
    writer.close()
    report = run(conn, sources)
    turns = stored(conn)[("kiro_cli", TYPED)]
    assert report.turns_appended == 1 and report.drift_ignored == 1
    assert turns[0][1].startswith("Added `--strict`")  # the stored turn never changes
    assert turns[2] == ("And a test for the error text", "Added `test_strict_lists_all_ids`.")


def test_rename_of_a_session_is_kept_as_a_new_title(conn, sources):
    run(conn, sources)
    side = sources["home"] / "sessions" / "cli" / f"{SESSION}.json"
    doc = json.loads(side.read_text())
    doc["title"], doc["updated_at"] = "Speed up map loading", "2026-10-13T09:00:00Z"
    side.write_text(json.dumps(doc))
    report = run(conn, sources)
    assert report.renames == 1
    assert conn.execute(
        "SELECT title, title_source FROM captured_tasks WHERE native_id = %s", [SESSION]
    ).fetchone() == ("Speed up map loading", "kiro_cli:title")


def test_exclusion_by_source_and_by_cwd(conn, sources, monkeypatch):
    monkeypatch.setenv("MEMORY_EXCLUDE", "source:kiro_ide, cwd:/home/dev/src/renderer")
    run(conn, sources)
    got = stored(conn)
    assert not [k for k in got if k[0] == "kiro_ide"]
    assert ("kiro_cli", "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d") not in got  # ran in renderer/
    assert ("kiro_cli", TYPED) in got


def test_forgotten_kiro_tasks_never_come_back(conn, sources):
    run(conn, sources)
    forget(conn, Selector(tasks=[("kiro_cli", SESSION), ("kiro_ide", IDE_CHAT)]))
    assert ("kiro_cli", SESSION) not in stored(conn)
    # the agent keeps writing: a new turn in the forgotten session
    path = sources["home"] / "sessions" / "cli" / f"{SESSION}.jsonl"
    with path.open("a") as f:
        f.write(
            json.dumps(
                {
                    "version": "v1",
                    "kind": "Prompt",
                    "data": {
                        "message_id": "m-09",
                        "content": [{"kind": "text", "data": "One more question"}],
                        "meta": {"timestamp": 1791881400},
                    },
                }
            )
            + "\n"
        )
    run(conn, sources)
    got = stored(conn)
    assert ("kiro_cli", SESSION) not in got and ("kiro_ide", IDE_CHAT) not in got
