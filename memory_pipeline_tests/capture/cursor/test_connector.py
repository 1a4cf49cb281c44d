"""The Cursor connector on fixtures written the way Cursor writes its stores (FORMAT.md)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.capture.cursor import bubbles as bubbles_module
from memory_pipeline.capture.cursor import sqlite as cursor_sqlite
from memory_pipeline.capture.cursor.connector import CursorConnector
from memory_pipeline_tests.capture.cursor.conftest import SPLIT_ID, TRANSCRIPT_ID, CursorHome
from memory_pipeline_tests.support.cursor_store import get, load_fixture, put, write_vscdb

CHAT_ID = "0b9d8e7f-6a5b-4c3d-2e1f-001122334455"
BROKEN_ID = "ba000000-0000-4000-8000-0000000000ba"


def tasks_by_id(result):
    return {t.native_id: t for t in result.tasks}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- layouts ---------------------------------------------------------------------------------


def test_split_layout_turns_are_the_prompt_and_the_final_answer(split_home: CursorHome):
    task = tasks_by_id(split_home.connector().parse(split_home.global_db))[SPLIT_ID]
    assert [(t.prompt, t.outcome) for t in task.turns] == [
        (
            "The meter upload fails with a 503 now and then. Make it retry.",
            "Uploads now retry 503s three times with exponential backoff (0.5 s, 1 s, 2 s) in"
            " `meterflow/upload.py`; the tests pass.",
        ),
        (
            "Log each retry at WARNING with the batch id.",
            "Each retry now logs `upload retry {n}/3 for batch {id}` at WARNING.",
        ),
    ]
    first = task.turns[0]
    # native ids kept as provenance: the user bubble is the turn id; commentary, thinking and
    # tool-call bubbles are not part of the turn
    assert first.native_turn_id == "u1-0001"
    assert first.native_message_ids == ["u1-0001", "a1-0005"]
    assert first.started_at == datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
    assert task.started_at == datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
    assert task.title is not None and task.title.text == "Retry the flaky upload"
    assert task.title.source == "cursor:name"
    ctx = task.native_context
    assert ctx["cwd"] == "/home/mara/src/meterflow"
    assert ctx["workspace_id"] == "a1b2c3d4e5f6"
    assert ctx["store_layout"] == "split"
    assert ctx["unifiedMode"] == "agent" and ctx["git_branch"] == "main"


def test_conversation_map_layout(split_home: CursorHome):
    task = tasks_by_id(split_home.connector().parse(split_home.global_db))[CHAT_ID]
    assert task.native_context["store_layout"] == "conversation-map"
    assert task.native_context["unifiedMode"] == "chat"
    assert [t.prompt for t in task.turns] == [
        "What does polars' scan_csv do differently from read_csv?"
    ]
    assert task.turns[0].outcome.startswith("scan_csv is lazy")
    assert task.title is None  # no name: the store derives one from the first prompt


def test_inline_layout_of_early_2025(home: CursorHome):
    write_vscdb(home.global_db, load_fixture("global-inline.json"))
    (task,) = home.connector().parse(home.global_db).tasks
    assert task.native_context["store_layout"] == "inline"
    assert [(t.prompt, t.outcome) for t in task.turns] == [
        (
            "Why does the DST change duplicate an hour of readings?",
            "The utility CSV uses local time; 02:00-03:00 on 26 Oct occurs twice. Parse with the"
            " UTC offset column instead.",
        ),
        ("Is there an offset column?", "Yes, `utc_offset` in every row since 2023."),
    ]
    assert task.ownership.reason == "cursor:typed-prompt"
    assert task.started_at == datetime(2025, 3, 14, 10, 0, tzinfo=UTC)


def test_workspace_inline_layout_of_2024_and_its_folder(home: CursorHome):
    ws = home.workspace("f00d", "workspace-inline.json", "file:///home/mara/src/meter%20flow")
    connector = home.connector()
    assert ws in connector.discover()
    (task,) = connector.parse(ws).tasks
    assert task.native_context["store_layout"] == "workspace-inline"
    assert task.native_context["cwd"] == "/home/mara/src/meter flow"
    assert [(t.prompt, t.outcome) for t in task.turns] == [
        ("Add a type hint to load_tariffs.", "`def load_tariffs(path: Path) -> pl.DataFrame:`")
    ]
    assert connector.task_days(ws) == {task.started_at.date()}


def test_a_workspace_composer_the_global_store_holds_is_read_from_the_global_store(
    home: CursorHome,
):
    ws = home.workspace("f00d", "workspace-inline.json", "file:///home/mara/src/meterflow")
    entry = load_fixture("workspace-inline.json")["ItemTable"]["composer.composerData"]
    composer = entry["allComposers"][0]
    write_vscdb(
        home.global_db, {"cursorDiskKV": {f"composerData:{composer['composerId']}": composer}}
    )
    connector = home.connector()
    assert connector.parse(ws).tasks == []
    assert connector.task_days(ws) == set()
    assert [t.native_id for t in connector.parse(home.global_db).tasks] == [composer["composerId"]]


def test_task_days_agree_with_started_at(split_home: CursorHome):
    connector = split_home.connector()
    result = connector.parse(split_home.global_db)
    assert {t.started_at.date() for t in result.tasks} <= connector.task_days(split_home.global_db)


def test_a_chat_opened_and_never_used_is_no_task(split_home: CursorHome):
    ids = tasks_by_id(split_home.connector().parse(split_home.global_db))
    assert "d0000000-0000-4000-8000-00000000000d" not in ids


# --- ownership --------------------------------------------------------------------------------


def test_ownership_matrix_of_the_ide_store(split_home: CursorHome):
    got = {
        t.native_id: (t.ownership.ownership, t.ownership.reason)
        for t in split_home.connector().parse(split_home.global_db).tasks
    }
    assert got[SPLIT_ID] == ("user_owned", "cursor:typed-prompt")
    assert got[CHAT_ID] == ("user_owned", "cursor:typed-prompt")
    assert got["task-toolu_01AbCdEfGh"] == ("delegated", "cursor:subagent")
    assert got["bg000000-0000-4000-8000-000000000001"] == ("delegated", "cursor:background-agent")
    assert got["b0n00000-0000-4000-8000-000000000002"] == ("delegated", "cursor:best-of-n-worker")
    assert got["e0000000-0000-4000-8000-0000000000e1"] == ("unknown", "cursor:no-editor-state")


def test_delegation_evidence_wins_over_a_typed_prompt(split_home: CursorHome):
    """A subagent listed in a parent's subComposerIds is delegated even with editor state."""
    db = split_home.global_db
    child = get(db, f"composerData:{CHAT_ID}")
    parent = get(db, f"composerData:{SPLIT_ID}")
    parent["subComposerIds"].append(CHAT_ID)
    put(db, f"composerData:{SPLIT_ID}", parent)
    assert child["conversationMap"]  # the child's prompt has richText
    task = tasks_by_id(split_home.connector().parse(db))[CHAT_ID]
    assert (task.ownership.ownership, task.ownership.reason) == ("delegated", "cursor:subagent")
    assert task.ownership.evidence["parentComposerId"] == SPLIT_ID


def test_ownership_matrix_of_agent_transcripts(home: CursorHome):
    typed = home.transcript()
    home.chat_meta()
    (task,) = home.connector().parse(typed).tasks
    assert task.ownership.reason == "cursor:cli-unconfirmed"  # no prompt history: unknown
    assert task.ownership.ownership == "unknown"
    (home.data / "prompt_history.json").write_text(
        json.dumps(["fix it", "list the failing tests in meterflow"])
    )
    (task,) = home.connector().parse(typed).tasks
    assert (task.ownership.ownership, task.ownership.reason) == (
        "user_owned",
        "cursor:cli-prompt-history",
    )
    sub_id = "0a0a0a0a-1111-4222-8333-444455556666"
    sub = typed.parent / "subagents" / f"{sub_id}.jsonl"
    sub.parent.mkdir()
    sub.write_text(typed.read_text())
    home.chat_meta(sub_id)
    (task,) = home.connector().parse(sub).tasks
    assert (task.ownership.ownership, task.ownership.reason) == ("delegated", "cursor:subagent")


# --- transcripts ------------------------------------------------------------------------------


def test_agent_transcript_turns_and_start(home: CursorHome):
    path = home.transcript(nested=False)  # older builds: agent-transcripts/<id>.jsonl
    home.chat_meta()
    connector = home.connector()
    assert path in connector.discover()
    (task,) = connector.parse(path).tasks
    assert task.native_id == TRANSCRIPT_ID
    assert [(t.prompt, t.outcome) for t in task.turns] == [
        (
            "list the failing tests in meterflow",
            "One test fails: `test_dst_gap` (expects 23 hours on 29 March, gets 24).",
        ),
        ("fix it", "`hours_in_day()` now uses the zone's transitions; `test_dst_gap` passes."),
    ]
    assert task.started_at == datetime.fromtimestamp(1791273600, UTC)
    assert task.title is not None and task.title.text == "Failing tests"
    assert connector.task_days(path) == {task.started_at.date()}


def test_a_transcript_without_its_chat_store_has_no_start_and_is_recorded(home: CursorHome):
    path = home.transcript()
    result = home.connector().parse(path)
    assert result.tasks == []
    assert [i.reason for i in result.issues] == ["no_start_time"]


def test_the_ides_copy_of_a_composer_is_left_to_the_store(split_home: CursorHome):
    path = split_home.transcript(chat_id=SPLIT_ID)
    split_home.chat_meta(SPLIT_ID)
    connector = split_home.connector()
    assert connector.parse(path).tasks == []
    assert connector.task_days(path) == set()


def test_unfinished_last_transcript_turn_waits_until_it_ends_or_settles(home: CursorHome):
    lines = (home.transcript().read_text()).splitlines()
    path = home.transcript(text="\n".join(lines[:-1]) + "\n")  # no turn_ended yet
    home.chat_meta()
    now = datetime.now(UTC)
    (task,) = home.connector(now=lambda: now).parse(path).tasks
    assert [t.prompt for t in task.turns] == ["list the failing tests in meterflow"]
    assert task.unfinished_turn
    later = now + timedelta(hours=1)
    (task,) = home.connector(now=lambda: later).parse(path).tasks
    assert [t.prompt for t in task.turns] == ["list the failing tests in meterflow", "fix it"]
    assert not task.unfinished_turn


def test_a_damaged_transcript_line_drops_its_turn_only(home: CursorHome):
    lines = home.transcript().read_text().splitlines()
    lines[2] = lines[2][:30]  # the first turn's answer, torn
    path = home.transcript(text="\n".join(lines) + "\n")
    home.chat_meta()
    result = home.connector().parse(path)
    (task,) = result.tasks
    assert [t.prompt for t in task.turns] == ["fix it"]
    assert {"invalid_json", "bad_record"} <= {i.reason for i in result.issues}


def test_answer_lines_after_a_turn_end_without_a_prompt_join_no_turn(home: CursorHome):
    """The prompt line between them was lost: its answer must not become the earlier turn's."""
    lines = home.transcript().read_text().splitlines()
    del lines[4]  # the second prompt
    path = home.transcript(text="\n".join(lines) + "\n")
    home.chat_meta()
    (task,) = home.connector().parse(path).tasks
    assert [(t.prompt, t.outcome) for t in task.turns] == [
        (
            "list the failing tests in meterflow",
            "One test fails: `test_dst_gap` (expects 23 hours on 29 March, gets 24).",
        )
    ]


# --- unfinished turns, append, rename ---------------------------------------------------------


def test_unfinished_last_turn_waits(split_home: CursorHome):
    task = tasks_by_id(split_home.connector().parse(split_home.global_db))[
        "9e000000-0000-4000-8000-000000000009"
    ]
    assert [t.prompt for t in task.turns] == ["Add a --dry-run flag to the CLI."]
    assert task.unfinished_turn


def test_a_new_turn_is_appended_and_earlier_turns_stay_as_they_were(split_home: CursorHome):
    db = split_home.global_db
    before = tasks_by_id(split_home.connector().parse(db))[SPLIT_ID]
    composer = get(db, f"composerData:{SPLIT_ID}")
    for bid, btype, text in (
        ("u3-0001", 1, "Add jitter."),
        ("a3-0001", 2, "Jitter of ±20% added."),
    ):
        bubble = {"_v": 3, "type": btype, "bubbleId": bid, "text": text}
        if btype == 1:
            bubble["richText"] = '{"root":{"children":[],"type":"root"}}'
        put(db, f"bubbleId:{SPLIT_ID}:{bid}", bubble)
        composer["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": btype})
    put(db, f"composerData:{SPLIT_ID}", composer)
    after = tasks_by_id(split_home.connector().parse(db))[SPLIT_ID]
    assert after.turns[:2] == before.turns
    assert [(t.ordinal, t.prompt, t.outcome) for t in after.turns[2:]] == [
        (2, "Add jitter.", "Jitter of ±20% added.")
    ]


def test_a_rename_is_the_new_title(split_home: CursorHome):
    db = split_home.global_db
    composer = get(db, f"composerData:{SPLIT_ID}")
    composer["name"] = "Upload retries with backoff"
    composer["lastUpdatedAt"] += 60_000
    put(db, f"composerData:{SPLIT_ID}", composer)
    task = tasks_by_id(split_home.connector().parse(db))[SPLIT_ID]
    assert task.title is not None and task.title.text == "Upload retries with backoff"
    assert task.title.observed_at == datetime(2026, 10, 5, 9, 3, 20, tzinfo=UTC)


# --- bad records ------------------------------------------------------------------------------


def test_a_torn_bubble_and_a_missing_bubble_cost_their_turns_only(split_home: CursorHome):
    result = split_home.connector().parse(split_home.global_db)
    task = tasks_by_id(result)[BROKEN_ID]
    assert [(t.native_turn_id, t.prompt) for t in task.turns] == [
        ("ku-0002", "And the index?"),
        ("ku-0004", "Run the migration tests."),
    ]
    issues = {(i.reason, i.detail) for i in result.issues}
    assert ("invalid_json", f"bubbleId:{BROKEN_ID}:ka-0001") in issues
    assert any(r == "missing_record" and "ku-0003" in d for r, d in issues)


def test_a_broken_composer_record_is_recorded_and_the_others_are_read(split_home: CursorHome):
    db = split_home.global_db
    put(db, f"composerData:{CHAT_ID}", '{"_v":10,"composerId":')
    result = split_home.connector().parse(db)
    assert CHAT_ID not in tasks_by_id(result)
    assert SPLIT_ID in tasks_by_id(result)
    assert any(i.reason == "invalid_json" and CHAT_ID in i.detail for i in result.issues)


def test_a_file_that_is_not_a_database_is_one_issue(home: CursorHome):
    home.global_db.parent.mkdir(parents=True)
    home.global_db.write_bytes(b"this is not sqlite" * 100)
    connector = home.connector()
    result = connector.parse(home.global_db)
    assert result.tasks == [] and [i.reason for i in result.issues] == ["not_a_database"]
    assert connector.task_days(home.global_db) == set()


# --- reading without locking Cursor out, and a store that changes in place --------------------


def test_reading_changes_nothing_and_never_blocks_a_writer(split_home: CursorHome):
    db = split_home.global_db
    wal = db.with_name(db.name + "-wal")
    before = (digest(db), wal.exists() and digest(wal))
    with cursor_sqlite.snapshot(db) as snap:
        assert snap.get("cursorDiskKV", f"composerData:{SPLIT_ID}") is not None
        writer = sqlite3.connect(db, timeout=0)  # Cursor writing while we read: never waits
        writer.execute("INSERT INTO ItemTable (key, value) VALUES ('x', 'y')")
        writer.commit()
        writer.close()
    assert digest(db) == before[0]  # the main file is only written at a checkpoint
    put(db, "probe", "{}")
    connector = split_home.connector()
    connector.parse(db)
    assert wal.exists()


def test_a_write_while_the_run_reads_is_not_seen_half_and_changes_the_version(
    split_home: CursorHome, monkeypatch: pytest.MonkeyPatch
):
    """Cursor appends a turn (bubbles, then composerData) while the parse is in the middle of the
    store: the parse sees the snapshot it began with, and the store's version changes, so the
    next look reads it again and gets the new turn."""
    db = split_home.global_db
    connector = split_home.connector()
    state_before = _state(connector, db)
    real = bubbles_module.build_turns
    wrote = []

    def build_turns_while_cursor_writes(bubbles, generating):
        if not wrote:
            composer = get(db, f"composerData:{SPLIT_ID}")
            for bid, btype, text in (("u9", 1, "Late prompt"), ("a9", 2, "Late answer")):
                put(
                    db,
                    f"bubbleId:{SPLIT_ID}:{bid}",
                    {"type": btype, "bubbleId": bid, "text": text, "richText": "{}"},
                )
                composer["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": btype})
            put(db, f"composerData:{SPLIT_ID}", composer)
            wrote.append(True)
        return real(bubbles, generating)

    monkeypatch.setattr(
        "memory_pipeline.capture.cursor.connector.build_turns", build_turns_while_cursor_writes
    )
    during = tasks_by_id(connector.parse(db))[SPLIT_ID]
    monkeypatch.undo()
    assert (
        wrote
        and [t.prompt for t in during.turns][-1] == "Log each retry at WARNING with the batch id."
    )
    assert _state(connector, db) != state_before
    after = tasks_by_id(connector.parse(db))[SPLIT_ID]
    assert [t.prompt for t in after.turns][-1] == "Late prompt"


def _state(connector: CursorConnector, path: Path) -> tuple[int, int]:
    sts = [p.stat() for p in connector.state_paths(path) if p.exists()]
    return (sum(s.st_size for s in sts), max(s.st_mtime_ns for s in sts))


def test_state_paths_cover_the_wal_when_it_holds_pages(split_home: CursorHome):
    db = split_home.global_db
    connector = split_home.connector()
    connector.parse(db)  # may leave an empty -wal: reading is not a change
    assert connector.state_paths(db) == [db]
    cursor_app = sqlite3.connect(db)  # Cursor keeps its store open: no checkpoint at close
    cursor_app.execute("INSERT INTO ItemTable (key, value) VALUES ('probe', '{}')")
    cursor_app.commit()
    try:
        assert connector.state_paths(db) == [db, db.with_name("state.vscdb-wal")]
    finally:
        cursor_app.close()
