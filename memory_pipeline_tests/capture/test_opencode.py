"""OpenCode connector: every storage generation, ownership, turns, append, rename, bad records,
a store changed while it is read, and change detection (no database)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from memory_pipeline.capture.opencode import OpenCodeConnector
from memory_pipeline.capture.opencode import storage as oc_storage
from memory_pipeline_tests.support.opencode_store import (
    T0,
    Msg,
    Sess,
    text,
    turn,
    write_json_store,
    write_sqlite_store,
)


def file_state(connector: OpenCodeConnector, path: Path) -> tuple[int, int]:
    """The version change detection compares (protocol.file_state over `state_paths`)."""
    return oc_storage.state_of(connector.state_paths(path))


RUN_RULES = [
    {"permission": "question", "action": "deny", "pattern": "*"},
    {"permission": "plan_enter", "action": "deny", "pattern": "*"},
    {"permission": "plan_exit", "action": "deny", "pattern": "*"},
]


def session(
    sid: str = "ses_0a1b2c3d4e5fAbCdEf",
    n: int = 2,
    title: str = "Fix the --since window",
    **kw: object,
) -> Sess:
    msgs = []
    for i in range(n):
        msgs += turn(i, f"prompt {i}: why does --since drop lines?", f"answer {i}: it is exclusive")
    return Sess(sid, title, T0, T0 + 900_000, messages=msgs, **kw)  # type: ignore[arg-type]


def only_task(home: Path):  # type: ignore[no-untyped-def]
    connector = OpenCodeConnector(home)
    paths = connector.discover()
    tasks = [t for p in paths for t in connector.parse(p).tasks]
    assert len(tasks) == 1, tasks
    return tasks[0]


@pytest.mark.parametrize("generation", ["json", "json-legacy", "sqlite"])
def test_every_generation_gives_the_same_complete_turns(tmp_path: Path, generation: str) -> None:
    s = session()
    if generation == "sqlite":
        write_sqlite_store(tmp_path / "opencode.db", [s])
    else:
        write_json_store(tmp_path, [s], legacy=generation == "json-legacy")
    task = only_task(tmp_path)
    assert task.source == "opencode" and task.native_id == s.id
    assert [(t.prompt, t.outcome) for t in task.turns] == [
        ("prompt 0: why does --since drop lines?", "answer 0: it is exclusive"),
        ("prompt 1: why does --since drop lines?", "answer 1: it is exclusive"),
    ]
    # No tool call, tool output or reasoning in any turn; native ids kept as provenance.
    for t in task.turns:
        assert "fn main" not in t.outcome and "Let me look" not in t.outcome
        assert t.native_turn_id and t.native_turn_id.startswith("msg_")
        assert len(t.native_message_ids) == 3
    assert task.native_context["storage"] == generation
    assert task.native_context["cwd"] == "/home/mara/src/logslice"
    assert task.title is not None and task.title.text == "Fix the --since window"
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.reason == "opencode:typed-prompt"
    assert OpenCodeConnector(tmp_path).task_days(OpenCodeConnector(tmp_path).discover()[0]) == {
        task.started_at.date()
    }


def test_a_session_in_several_generations_is_read_from_the_newest_only(tmp_path: Path) -> None:
    s = session()
    write_json_store(tmp_path, [s], legacy=True)
    write_json_store(tmp_path, [s])
    other = session("ses_0a1b2c3d4e5fOther1", n=1)
    write_json_store(tmp_path, [other])  # only in the JSON store: still read from there
    write_sqlite_store(tmp_path / "opencode.db", [s])
    connector = OpenCodeConnector(tmp_path)
    paths = connector.discover()
    assert [p.name for p in paths] == ["opencode.db", f"{other.id}.json"]
    ids = [t.native_id for p in paths for t in connector.parse(p).tasks]
    assert sorted(ids) == sorted([s.id, other.id])


def test_opencode_db_override_is_read(tmp_path: Path) -> None:
    write_sqlite_store(tmp_path / "elsewhere" / "custom.db", [session()])
    connector = OpenCodeConnector(tmp_path / "data", database=tmp_path / "elsewhere" / "custom.db")
    assert [p.name for p in connector.discover()] == ["custom.db"]
    assert connector.parse(connector.discover()[0]).tasks[0].turns


@pytest.mark.parametrize(
    ("extra", "ownership", "reason"),
    [
        ({}, "user_owned", "opencode:typed-prompt"),
        ({"permission": RUN_RULES}, "delegated", "opencode:run"),
        ({"permission": RUN_RULES[:1]}, "delegated", "opencode:run"),  # older `opencode run`
        ({"parent": "ses_0a1b2c3d4e5fParent"}, "delegated", "opencode:child-session"),
        (
            {"parent": "ses_0a1b2c3d4e5fParent", "permission": RUN_RULES},
            "delegated",
            "opencode:child-session",
        ),
    ],
)
def test_ownership_matrix(
    tmp_path: Path, extra: dict[str, object], ownership: str, reason: str
) -> None:
    write_sqlite_store(tmp_path / "opencode.db", [session(**extra)])
    task = only_task(tmp_path)
    assert (task.ownership.ownership, task.ownership.reason) == (ownership, reason)


def test_a_session_without_a_typed_prompt_is_unknown(tmp_path: Path) -> None:
    s = session(n=1)
    s.messages[0].parts = [text("Summarize the conversation so far.", synthetic=True)]
    write_json_store(tmp_path, [s])
    task = only_task(tmp_path)
    assert task.ownership.ownership == "unknown"
    assert task.ownership.reason == "opencode:no-typed-prompt"
    assert task.turns == []


def test_synthetic_and_ignored_text_is_never_prompt_or_answer(tmp_path: Path) -> None:
    s = session(n=1)
    user, _tool, answer = s.messages
    user.parts += [
        text("Called the Read tool with the following input: {...}", synthetic=True),
        text("an ignored draft", ignored=True),
        {"type": "file", "mime": "text/plain", "filename": "a.rs", "url": "file:///a.rs"},
    ]
    answer.parts.insert(1, text("(internal note)", synthetic=True))
    write_json_store(tmp_path, [s])
    (t,) = only_task(tmp_path).turns
    assert t.prompt == "prompt 0: why does --since drop lines?"
    assert t.outcome == "answer 0: it is exclusive"


def test_unfinished_last_turn_waits_and_an_aborted_earlier_one_is_dropped(tmp_path: Path) -> None:
    msgs = turn(0, "first", "one")
    aborted = turn(1, "second (aborted)", "half", done=False)
    aborted[-1].error = {"name": "MessageAbortedError", "data": {"message": "aborted"}}
    msgs += aborted + turn(2, "third", "three") + turn(3, "fourth", "four", done=False)
    s = Sess("ses_0a1b2c3d4e5fAbCdEf", "t", T0, T0, messages=msgs)
    write_json_store(tmp_path, [s])
    task = only_task(tmp_path)
    assert [t.prompt for t in task.turns] == ["first", "third"]
    assert task.unfinished_turn is True
    # A step that stopped for tool calls is not an answer yet, even when completed.
    s.messages = turn(0, "first", "one")
    s.messages[-1].finish = "tool-calls"
    shutil.rmtree(tmp_path / "storage")
    write_json_store(tmp_path, [s])
    task = only_task(tmp_path)
    assert task.turns == [] and task.unfinished_turn is True


def test_append_keeps_earlier_turns_identical_and_a_rename_is_a_new_title(tmp_path: Path) -> None:
    s = session(n=1, title="New session - 2026-09-21T14:13:20.000Z")
    write_json_store(tmp_path, [s])
    first = only_task(tmp_path)
    assert first.title is None  # OpenCode's placeholder is no name (the store derives one)
    s.messages += turn(1, "and now?", "now inclusive")
    s.title = "Make --since inclusive"
    write_json_store(tmp_path, [s])
    second = only_task(tmp_path)
    assert second.turns[0] == first.turns[0]
    assert [t.prompt for t in second.turns] == [first.turns[0].prompt, "and now?"]
    assert second.title is not None
    assert (second.title.text, second.title.source) == (
        "Make --since inclusive",
        "opencode:session.title",
    )


def test_reverted_messages_are_not_turns(tmp_path: Path) -> None:
    s = session(n=3)
    write_json_store(tmp_path, [s])
    session_file = next((tmp_path / "storage" / "session").rglob("*.json"))
    info = json.loads(session_file.read_text())
    info["revert"] = {"messageID": s.messages[6].id}  # the third prompt was undone
    session_file.write_text(json.dumps(info, indent=2))
    assert len(only_task(tmp_path).turns) == 2


def test_bad_files_and_rows_are_recorded_and_the_rest_is_kept(tmp_path: Path) -> None:
    s = session(n=3)
    write_json_store(tmp_path, [s])
    storage = tmp_path / "storage"
    (storage / "message" / s.id / f"{s.messages[3].id}.json").write_bytes(b'{"role": "us\xff')
    tool_step = storage / "part" / s.messages[7].id  # turn 2's tool step: not its answer
    sorted(tool_step.glob("*.json"))[2].write_text("[1, 2")
    (tool_step / "prt_zzzz.json").write_bytes(b"\x00\x01binary")
    answer = storage / "part" / s.messages[5].id  # turn 1's answer: a part of it is lost
    sorted(answer.glob("*.json"))[1].write_text('{"type": "text", "text": "answ')
    connector = OpenCodeConnector(tmp_path)
    (path,) = connector.discover()
    result = connector.parse(path)
    reasons = sorted(i.reason for i in result.issues)
    assert reasons == ["invalid_json", "invalid_json", "invalid_json", "invalid_utf8"]
    (task,) = result.tasks
    # Turn 1 lost its user message and a part of its answer: no turn, never half of one.
    assert [t.prompt for t in task.turns] == [
        "prompt 0: why does --since drop lines?",
        "prompt 2: why does --since drop lines?",
    ]

    db = write_sqlite_store(tmp_path / "db" / "opencode.db", [session()])
    conn = sqlite3.connect(db)
    conn.execute("UPDATE part SET data = '{not json' WHERE rowid = 1")
    conn.execute("UPDATE message SET data = X'FF00' WHERE rowid = 4")
    conn.commit()
    conn.close()
    result = OpenCodeConnector(tmp_path / "db").parse(db)
    assert {i.reason for i in result.issues} == {"invalid_json", "bad_record"}
    assert all("#" in i.path for i in result.issues)  # the row named: db#part/<id>
    assert len(result.tasks) == 1


def test_a_db_session_with_no_usable_start_time_has_the_day_parse_gives(tmp_path: Path) -> None:
    # Found by make fuzz: a session row whose time_created is text (a NUL, a BOM; the column's
    # integer affinity keeps it as text) starts at its first message's time in parse, and
    # task_days must give that same day, not none.
    day = 86_400_000
    nul = Sess("ses_1nul", "A", "\x00", T0, messages=turn(0, "p0", "a0", base=T0 + day))  # type: ignore[arg-type]
    bom = Sess("ses_2bom", "B", "\ufeff", T0, messages=turn(0, "p1", "a1", base=T0 + 3 * day))  # type: ignore[arg-type]
    bare = Sess("ses_3bare", "C", "\x00", T0)  # type: ignore[arg-type]
    db = write_sqlite_store(tmp_path / "opencode.db", [session(), nul, bom, bare])
    conn = sqlite3.connect(db)
    first_of_bom = min(m.id for m in bom.messages)
    conn.execute('UPDATE message SET data = \'{"role": "us\' WHERE id = ?', [first_of_bom])
    conn.commit()
    conn.close()
    connector = OpenCodeConnector(tmp_path)
    (path,) = connector.discover()
    tasks = connector.parse(path).tasks
    starts = {t.native_id: t.started_at for t in tasks}
    assert set(starts) == {"ses_0a1b2c3d4e5fAbCdEf", "ses_1nul", "ses_2bom"}  # none lost
    assert int(starts["ses_1nul"].timestamp() * 1000) == nul.messages[0].created
    assert int(starts["ses_2bom"].timestamp() * 1000) == bom.messages[1].created
    assert connector.task_days(path) == {s.date() for s in starts.values()}
    assert len(connector.task_days(path)) == 3  # T0's day, one and three days later


def test_a_file_that_is_no_database_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "opencode.db").write_bytes(b"this is not sqlite" * 100)
    connector = OpenCodeConnector(tmp_path)
    (path,) = connector.discover()
    assert connector.task_days(path) == set()
    assert [i.reason for i in connector.parse(path).issues] == ["unreadable"]


def test_the_database_is_read_as_one_snapshot_while_opencode_writes(tmp_path: Path) -> None:
    db = write_sqlite_store(tmp_path / "opencode.db", [session(n=1)])
    connector = OpenCodeConnector(tmp_path)
    before = file_state(connector, db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # OpenCode in the middle of writing the next turn
    s2 = session(n=2)
    writer.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data)"
        " VALUES (?, ?, ?, ?, ?)",
        [s2.messages[3].id, s2.id, T0, T0, json.dumps({"role": "user", "time": {"created": T0}})],
    )
    result = connector.parse(db)  # neither blocked nor torn
    assert [len(t.turns) for t in result.tasks] == [1] and not result.issues
    writer.execute("COMMIT")
    from memory_pipeline_tests.support.opencode_store import add_sqlite_session

    add_sqlite_session(writer, s2)
    writer.close()
    # The change lands in the -wal file: the version changes, and the new turn is read.
    assert file_state(connector, db) != before
    assert [len(t.turns) for t in connector.parse(db).tasks] == [2]


def test_a_json_session_changed_while_read_gives_no_half_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = session(n=1)
    (path,) = write_json_store(tmp_path, [s])
    real = oc_storage.read_json
    calls = {"n": 0}

    def racing(p: Path, issues: list) -> dict | None:  # type: ignore[type-arg]
        calls["n"] += 1
        if calls["n"] == 2:  # OpenCode adds a message while we read
            s.messages += turn(1, "more", "yes")
            write_json_store(tmp_path, [s])
        return real(p, issues)

    monkeypatch.setattr(oc_storage, "read_json", racing)
    result = OpenCodeConnector(tmp_path).parse(path)
    assert result.tasks == []
    assert [i.reason for i in result.issues] == ["changed_while_reading"]
    monkeypatch.setattr(oc_storage, "read_json", real)
    assert len(OpenCodeConnector(tmp_path).parse(path).tasks[0].turns) == 2


def test_change_detection_sees_new_messages_parts_and_a_finished_answer(tmp_path: Path) -> None:
    s = session(n=1)
    s.messages += turn(1, "next", "done", done=False)
    (path,) = write_json_store(tmp_path, [s])
    connector = OpenCodeConnector(tmp_path)
    states = [file_state(connector, path)]
    # The answer finishes: its message file is rewritten with time.completed.
    time.sleep(0.02)
    last: Msg = s.messages[-1]
    last.completed, last.parts = T0 + 999_000, [text("done")]
    write_json_store(tmp_path, [s])
    states.append(file_state(connector, path))
    # A new part file in an older message's directory (a late tool result), a tick later
    # (OpenCode's writes are that far apart; a coarse file-system clock would merge them).
    time.sleep(0.02)
    (tmp_path / "storage" / "part" / s.messages[1].id / "prt_zzzzlate.json").write_text("{}")
    states.append(file_state(connector, path))
    assert len(set(states)) == 3, states
    assert connector.parse(path).tasks[0].unfinished_turn is False
