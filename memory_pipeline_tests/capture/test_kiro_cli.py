"""Kiro CLI connector: every storage generation, ownership, append, rename, unfinished turns,
bad records and a store changed in place while it is read (pure parsing, no database)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.capture.kiro_cli import KiroCliConnector
from memory_pipeline.capture.kiro_cli import sqlite as kiro_sqlite
from memory_pipeline_tests.capture.kiro_fixtures import (
    build_store,
    create_store,
    kiro_home,
    put,
    value,
)

TYPED_ID = "01951b2e-6c1d-7a3b-9f00-1a2b3c4d5e6f"
HEADLESS_ID = "01951b30-0000-7c00-8a00-0f0e0d0c0b0a"
UNFINISHED_ID = "01951b31-1111-7d00-8b00-aaaaaaaaaaaa"
SESSION = "0f3d6b1c-2a9e-4c7f-b1d2-9e8f7a6b5c4d"
SUBAGENT = "5b8e2d41-7c3a-4f90-a6e1-3d2c1b0a9f8e"
RUNNING = "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    home = kiro_home(tmp_path / "kiro")
    data = tmp_path / "kiro-cli"
    build_store(data / "data.sqlite3", "kiro_cli")
    aq = tmp_path / "amazon-q"
    build_store(aq / "data.sqlite3", "amazon_q")
    return {"home": home, "data": data, "aq": aq}


def connector(roots: dict[str, Path]) -> KiroCliConnector:
    return KiroCliConnector([roots["home"], roots["data"], roots["aq"]])


def tasks_of(c: KiroCliConnector, path: Path) -> dict:
    result = c.parse(path)
    return {t.native_id: t for t in result.tasks}


def test_discover_finds_both_stores_and_the_session_files(roots):
    c = connector(roots)
    found = c.discover()
    assert roots["data"] / "data.sqlite3" in found
    assert roots["aq"] / "data.sqlite3" in found
    sessions = sorted(p.name for p in found if p.suffix == ".jsonl")
    assert sessions == sorted(f"{s}.jsonl" for s in (SESSION, SUBAGENT, RUNNING))
    # the WAL and the sidecars make up a file's version, they are not files of their own
    db = roots["data"] / "data.sqlite3"
    assert c.state_paths(db) == [db, db.with_name("data.sqlite3-wal")]
    jsonl = roots["home"] / "sessions" / "cli" / f"{SESSION}.jsonl"
    assert c.state_paths(jsonl) == [jsonl, jsonl.with_suffix(".json")]


def test_amazon_q_conversations_table_both_history_generations(roots):
    c = connector(roots)
    tasks = tasks_of(c, roots["aq"] / "data.sqlite3")
    pairs = tasks["3f6c2a1e-8a7b-4a51-9d0e-2b6f0c9e4d11"]
    assert pairs.native_context["history_format"] == "history-tuple"
    assert pairs.native_context["cwd"] == "/home/dev/src/tilemap"
    assert [t.prompt for t in pairs.turns] == [
        "How do I make the tile cache evict least recently used entries first?",
        "Should eviction also drop the tile's decoded texture?",
    ]
    # the answer after the tool round trip, not the narration before the tool call
    assert pairs.turns[1].outcome.startswith("Yes: the texture is only referenced")
    entries = tasks["7d0f5b9a-3c2e-4f11-8e6a-5a4b3c2d1e0f"]
    assert entries.native_context["history_format"] == "history-entry"
    # the harness's own resume prompt is not a turn of the user's
    assert [t.prompt for t in entries.turns] == [
        "Write a script that converts the old .tmx maps to our JSON format",
        "Keep the layer order the same as in the .tmx file",
    ]
    assert entries.turns[0].native_turn_id == "b2c3d4e5-0001-4000-8000-000000000001"
    assert entries.turns[0].outcome.startswith("Here is `tmx2json.py`")
    assert not entries.unfinished_turn


def test_kiro_conversations_v2_rows(roots):
    tasks = tasks_of(connector(roots), roots["data"] / "data.sqlite3")
    assert set(tasks) == {TYPED_ID, HEADLESS_ID, UNFINISHED_ID}
    typed = tasks[TYPED_ID]
    assert typed.started_at.isoformat() == "2026-10-12T08:05:00+00:00"  # created_at (ms)
    assert typed.native_context == {
        "store": "conversations_v2",
        "history_format": "history-entry",
        "cwd": "/home/dev/src/tilemap",
        "model": "claude-opus-4.6",
    }
    assert len(typed.turns) == 2 and not typed.unfinished_turn
    # a request whose tools still run is the unfinished turn: it waits
    unfinished = tasks[UNFINISHED_ID]
    assert [t.prompt for t in unfinished.turns] == ["Profile the renderer on the big harbour map"]
    assert unfinished.unfinished_turn


def test_v2_session_file(roots):
    c = connector(roots)
    path = roots["home"] / "sessions" / "cli" / f"{SESSION}.jsonl"
    (task,) = c.parse(path).tasks
    assert task.native_id == SESSION
    assert task.title is not None and task.title.text == "Harbour map load time"
    assert task.title.source == "kiro_cli:title"
    assert [t.native_turn_id for t in task.turns] == ["m-01", "m-05"]
    # final visible text only: no tool call, no narration before it, no thinking block
    assert task.turns[0].outcome.startswith("The loader reads `tiles.csv` lazily")
    assert task.turns[1].outcome.startswith("Done: `load_tiles()` now parses once")
    assert "tests pass" not in task.turns[1].outcome
    assert task.native_context["cwd"] == "/home/dev/src/tilemap"
    assert task.native_context["model"] == "claude-opus-4.6"
    assert c.task_days(path) == {task.started_at.date()}


def test_ownership_matrix(roots):
    c = connector(roots)
    store = tasks_of(c, roots["data"] / "data.sqlite3")
    cli = roots["home"] / "sessions" / "cli"
    verdicts = {
        "typed into the REPL": store[TYPED_ID].ownership,
        "--no-interactive": store[HEADLESS_ID].ownership,
        "subagent": c.parse(cli / f"{SUBAGENT}.jsonl").tasks[0].ownership,
        "interactive session": c.parse(cli / f"{SESSION}.jsonl").tasks[0].ownership,
    }
    assert {k: (v.ownership, v.reason) for k, v in verdicts.items()} == {
        "typed into the REPL": ("user_owned", "kiro_cli:typed-prompt"),
        "--no-interactive": ("unknown", "kiro_cli:no-typed-prompt"),
        "subagent": ("delegated", "kiro_cli:subagent"),
        "interactive session": ("user_owned", "kiro_cli:typed-prompt"),
    }
    assert verdicts["subagent"].evidence["parent_session_id"] == SESSION


def test_delegation_wins_over_a_typed_prompt(roots):
    cli = roots["home"] / "sessions" / "cli"
    first = (cli / f"{SUBAGENT}.jsonl").read_text().splitlines()[0]
    prompt = json.loads(first)["data"]["content"][0]["data"]
    with open(roots["home"] / ".cli_bash_history", "a") as f:
        f.write(prompt + "\n")
    (task,) = connector(roots).parse(cli / f"{SUBAGENT}.jsonl").tasks
    assert task.ownership.ownership == "delegated"


def test_a_short_history_entry_proves_nothing(roots, tmp_path):
    db = tmp_path / "short" / "data.sqlite3"
    conn = create_store(db)
    conv = value("kiro_cli_v2_no_interactive.json")
    conv["history"][0]["user"]["content"]["Prompt"]["prompt"] = "yes"  # also in the history file
    put(
        conn,
        {"table": "conversations_v2", "key": "/x", "created_at": 1791925205000, "updated_at": 1},
        conv,
    )
    conn.close()
    (task,) = KiroCliConnector([roots["home"], db.parent]).parse(db).tasks
    assert task.ownership.ownership == "unknown"


def test_append_keeps_earlier_turns_and_completes_the_waiting_one(roots):
    c = connector(roots)
    db = roots["data"] / "data.sqlite3"
    before = tasks_of(c, db)[UNFINISHED_ID]
    conv = value("kiro_cli_v2_unfinished.json")
    conv["history"].append(
        {
            "user": {"content": {"ToolUseResults": {"tool_use_results": []}}, "timestamp": None},
            "assistant": {
                "Response": {
                    "message_id": "e5f6a7b8-0003",
                    "content": "Blending is now vectorised: 4.1x faster.",
                }
            },
            "request_metadata": {
                "message_id": "e5f6a7b8-0003",
                "stream_end_timestamp_ms": 1791986700000,
            },
        }
    )
    conn = sqlite3.connect(db)
    put(
        conn,
        {
            "table": "conversations_v2",
            "key": "/home/dev/src/renderer",
            "created_at": 1791986400000,
            "updated_at": 1791986700000,
        },
        conv,
    )
    conn.commit()
    conn.close()
    after = tasks_of(c, db)[UNFINISHED_ID]
    assert after.turns[0] == before.turns[0]
    assert [t.prompt for t in after.turns] == [
        "Profile the renderer on the big harbour map",
        "Vectorise the alpha blend with numpy",
    ]
    assert after.turns[1].outcome == "Blending is now vectorised: 4.1x faster."
    assert not after.unfinished_turn


def test_session_turn_waits_until_its_turn_end_is_written(roots):
    c = connector(roots)
    path = roots["home"] / "sessions" / "cli" / f"{RUNNING}.jsonl"
    (task,) = c.parse(path).tasks
    assert [t.native_turn_id for t in task.turns] == ["r-01"] and task.unfinished_turn
    with open(path, "a") as f:
        f.write(
            json.dumps(
                {
                    "version": "v1",
                    "kind": "AssistantMessage",
                    "data": {
                        "message_id": "r-05",
                        "content": [{"kind": "text", "data": "Rerendered with 16 colours."}],
                    },
                }
            )
            + "\n"
        )
    (task,) = c.parse(path).tasks
    assert task.unfinished_turn  # the answer is there, the turn has not ended yet
    side = json.loads(path.with_suffix(".json").read_text())
    side["session_state"]["conversation_metadata"]["user_turn_metadatas"].append(
        {
            "message_ids": ["r-03", "r-04", "r-05"],
            "end_timestamp": "2026-10-14T08:06:40Z",
            "end_reason": "UserTurnEnd",
        }
    )
    path.with_suffix(".json").write_text(json.dumps(side))
    (task,) = c.parse(path).tasks
    assert [t.outcome for t in task.turns][-1] == "Rerendered with 16 colours."
    assert not task.unfinished_turn
    assert task.turns[1].completed_at.isoformat() == "2026-10-14T08:06:40+00:00"


def test_rename_is_read_from_the_sidecar(roots):
    c = connector(roots)
    path = roots["home"] / "sessions" / "cli" / f"{SESSION}.jsonl"
    side = json.loads(path.with_suffix(".json").read_text())
    side["title"] = "Speed up map loading"
    side["updated_at"] = "2026-10-13T09:00:00Z"
    path.with_suffix(".json").write_text(json.dumps(side))
    (task,) = c.parse(path).tasks
    assert task.title.text == "Speed up map loading"
    assert task.title.observed_at.isoformat() == "2026-10-13T09:00:00+00:00"
    # a title that is only the first prompt is no name: the store derives one
    (sub,) = c.parse(path.with_name(f"{SUBAGENT}.jsonl")).tasks
    assert sub.title is None


def test_bad_rows_are_recorded_and_the_other_conversations_kept(roots, tmp_path):
    db = tmp_path / "bad" / "data.sqlite3"
    conn = create_store(db)
    put(
        conn,
        {"table": "conversations_v2", "key": "/a", "created_at": 1791792300000, "updated_at": 1},
        value("kiro_cli_v2_typed.json"),
    )
    conn.execute("INSERT INTO conversations_v2 VALUES ('/b', 'broken', '{\"history\": [', 1, 1)")
    conn.execute("INSERT INTO conversations_v2 VALUES ('/c', 'odd', '[1, 2]', 1, 1)")
    conn.execute(
        "INSERT INTO conversations_v2 VALUES ('/d', 'deep', ?, 1, 1)",
        ("[" * 100000 + "]" * 100000,),
    )
    conn.execute("INSERT INTO conversations (key, value) VALUES ('/e', X'00FF')")
    conn.close()
    result = KiroCliConnector([db.parent]).parse(db)
    assert [t.native_id for t in result.tasks] == [TYPED_ID]
    assert sorted(i.reason for i in result.issues) == [
        "bad_record",
        "invalid_json",
        "invalid_json",
        "too_deep",
    ]


def test_not_a_database_is_one_recorded_issue(tmp_path):
    db = tmp_path / "data.sqlite3"
    db.write_bytes(b"this is not sqlite" * 100)
    result = KiroCliConnector([tmp_path]).parse(db)
    assert not result.tasks and [i.reason for i in result.issues] == ["unreadable"]
    assert KiroCliConnector([tmp_path]).task_days(db) == set()


def test_auth_and_state_tables_are_never_read(roots, monkeypatch):
    seen: list[str] = []
    real = kiro_sqlite.connect

    def spy(db):
        conn = real(db)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(kiro_sqlite, "connect", spy)
    connector(roots).parse(roots["data"] / "data.sqlite3")
    assert seen and not [
        s for s in seen if "auth_kv" in s or " state" in s.lower().replace("sqlite_master", "")
    ]


def test_store_changed_in_place_while_it_is_read(roots, monkeypatch):
    """A writer mid-transaction does not block the read (WAL), the read sees one consistent
    snapshot, and the commit changes the store's version (the -wal file) so it is read again."""
    db = roots["data"] / "data.sqlite3"
    c = connector(roots)

    def version() -> tuple[int, int]:
        states = [os.stat(p) for p in c.state_paths(db) if p.exists()]
        return sum(s.st_size for s in states), max(s.st_mtime_ns for s in states)

    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    before = version()
    writer.execute("BEGIN IMMEDIATE")
    conv = value("kiro_cli_v2_typed.json")
    conv["conversation_id"] = "01951b40-2222-7e00-8c00-bbbbbbbbbbbb"
    put(
        writer,
        {
            "table": "conversations_v2",
            "key": "/home/dev/src/new",
            "created_at": 1792000000000,
            "updated_at": 1,
        },
        conv,
    )
    # mid-transaction: the reader gets the committed snapshot, without the new row
    assert "01951b40-2222-7e00-8c00-bbbbbbbbbbbb" not in tasks_of(c, db)
    writer.execute("COMMIT")
    writer.close()
    assert version() != before
    assert "01951b40-2222-7e00-8c00-bbbbbbbbbbbb" in tasks_of(c, db)


def test_a_store_locked_past_the_timeout_is_store_busy(tmp_path, monkeypatch):
    monkeypatch.setattr(kiro_sqlite, "KIRO_SQLITE_TIMEOUT_S", 0.05)
    db = tmp_path / "data.sqlite3"
    build_store(db, "amazon_q")  # rollback journal: an exclusive lock blocks readers
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        result = KiroCliConnector([tmp_path]).parse(db)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert not result.tasks and [i.reason for i in result.issues] == ["store_busy"]
    assert KiroCliConnector([tmp_path]).parse(db).tasks  # read again on the next look


def test_sqlite_is_opened_read_only(roots):
    db = roots["data"] / "data.sqlite3"
    conn = kiro_sqlite.connect(db)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM conversations_v2")
    conn.close()


record = st.one_of(
    st.binary(max_size=80),
    st.dictionaries(
        st.sampled_from(["version", "kind", "data"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=8), inner, max_size=3)
            ),
            max_leaves=8,
        ),
    ).map(lambda d: json.dumps(d).encode()),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.lists(record, min_size=1, max_size=6), at=st.integers(min_value=0, max_value=8))
def test_damaged_session_lines_never_lose_intact_turns(tmp_path, junk, at):
    src = Path(__file__).parent / "data" / "kiro_cli" / "kiro_home" / "sessions" / "cli"
    case = tmp_path / f"case{abs(hash((tuple(junk), at)))}"
    cli = case / "sessions" / "cli"
    cli.mkdir(parents=True, exist_ok=True)
    lines = (src / f"{SESSION}.jsonl").read_bytes().split(b"\n")
    at = min(at, len(lines) - 1)
    damaged = lines[:at] + [j.replace(b"\n", b" ") for j in junk] + lines[at:]
    (cli / f"{SESSION}.jsonl").write_bytes(b"\n".join(damaged))
    shutil.copy(src / f"{SESSION}.json", cli / f"{SESSION}.json")
    result = KiroCliConnector([case]).parse(cli / f"{SESSION}.jsonl")
    (task,) = result.tasks
    intact = KiroCliConnector([src.parent.parent]).parse(src / f"{SESSION}.jsonl").tasks[0]
    # every turn the junk did not split is captured verbatim
    for turn in task.turns:
        assert turn in intact.turns or turn.native_turn_id in {
            t.native_turn_id for t in intact.turns
        }
    assert all(i.path.endswith(".jsonl") or i.path.endswith(".json") for i in result.issues)
