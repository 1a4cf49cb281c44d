"""Kiro IDE connector: both globalStorage layouts, workspaces, ownership, append, rename,
unfinished turns, bad records and files rewritten while they are read (pure parsing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.capture import files
from memory_pipeline.capture.kiro_ide import KiroIdeConnector

DATA = Path(__file__).parent / "data" / "kiro_ide" / "kiro.kiroagent"
WS = "L2hvbWUvZGV2L3NyYy90aWxlbWFw"
CHAT = "b7c1d2e3-f4a5-4b6c-9d7e-8f9a0b1c2d3e"
HOOK = "c8d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"
WAITING = "d9e3f4a5-b6c7-4d8e-9fa0-1b2c3d4e5f6a"
HASH = "5f0c2e9a7b1d4c3e8f6a0b2d4e6f8a1c"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return Path(shutil.copytree(DATA, tmp_path / "kiro.kiroagent"))


def session(root: Path, sid: str) -> Path:
    return root / "workspace-sessions" / WS / f"{sid}.json"


def test_discover_lists_session_files_and_old_layout_workspaces(root):
    c = KiroIdeConnector([root])
    found = c.discover()
    assert found == sorted([root / HASH, *(session(root, s) for s in (CHAT, HOOK, WAITING))])
    assert c.state_paths(session(root, CHAT)) == [
        session(root, CHAT),
        session(root, CHAT).with_name("sessions.json"),
    ]
    # an old-layout workspace's version is every snapshot and execution log in it
    assert len(c.state_paths(root / HASH)) == 4


def test_new_layout_session(root):
    (task,) = KiroIdeConnector([root]).parse(session(root, CHAT)).tasks
    assert task.native_id == CHAT
    assert task.started_at.isoformat() == "2026-10-14T08:00:00+00:00"  # dateCreated, a string
    assert task.native_context["workspace"] == "/home/dev/src/tilemap"
    assert task.native_context["session_type"] == "vibe"
    assert task.title.text == "Tile atlas packing" and task.title.source == "kiro_ide:title"
    # the <identity> system prompt and the steering/environment wrappers are not the prompt
    assert [t.prompt for t in task.turns] == [
        "How should I pack tiles into one texture atlas?",
        "Pad by 2 px, we use mipmaps",
    ]
    # "On it." is a placeholder; an empty answer falls back to promptLogs.completion
    assert task.turns[0].outcome.startswith("Use a shelf packer")
    assert task.turns[1].outcome.startswith("With mipmaps pad by 2 px")
    assert not task.unfinished_turn


def test_old_layout_workflow_from_its_fullest_snapshot_and_execution_log(root):
    (task,) = KiroIdeConnector([root]).parse(root / HASH).tasks
    assert task.native_id == "wf-3a1b9c"
    assert task.native_context["workspace_hash"] == HASH
    assert task.native_context["execution_ids"] == ["exec-0001", "exec-0002"]
    assert task.started_at.isoformat() == "2026-08-06T10:00:00+00:00"
    assert [t.prompt for t in task.turns] == [
        "Why does the minimap flicker when scrolling?",
        "Fix it by double-buffering the minimap surface",
    ]
    # the first answer is only "On it." in the snapshot: the execution log has it
    assert task.turns[0].outcome.startswith("It redraws the whole minimap surface")
    assert task.turns[1].outcome.startswith("The minimap now draws into an offscreen surface")


def test_ownership_matrix(root):
    c = KiroIdeConnector([root])
    got = {
        sid: (t.ownership.ownership, t.ownership.reason)
        for sid in (CHAT, HOOK)
        for t in c.parse(session(root, sid)).tasks
    }
    assert got == {CHAT: ("user_owned", "kiro_ide:chat"), HOOK: ("delegated", "kiro_ide:hook")}
    doc = json.loads(session(root, CHAT).read_text())
    doc["history"] = [
        h for h in doc["history"] if h["message"]["role"] != "user" or "identity" in str(h)
    ]
    session(root, CHAT).write_text(json.dumps(doc))
    (task,) = c.parse(session(root, CHAT)).tasks
    assert (task.ownership.ownership, task.ownership.reason) == ("unknown", "kiro_ide:no-prompt")


def test_unfinished_turn_waits_then_completes(root):
    c = KiroIdeConnector([root])
    (task,) = c.parse(session(root, WAITING)).tasks
    assert task.turns == [] and task.unfinished_turn  # only "On it." so far
    doc = json.loads(session(root, WAITING).read_text())
    doc["history"].append(
        {
            "message": {
                "role": "assistant",
                "content": "Cells are 16 px; each holds a bitmask of solid edges.",
                "id": "a-21",
            }
        }
    )
    session(root, WAITING).write_text(json.dumps(doc))
    (task,) = c.parse(session(root, WAITING)).tasks
    assert [t.outcome for t in task.turns] == [
        "Cells are 16 px; each holds a bitmask of solid edges."
    ]
    assert not task.unfinished_turn


def test_append_keeps_earlier_turns(root):
    c = KiroIdeConnector([root])
    before = c.parse(session(root, CHAT)).tasks[0]
    doc = json.loads(session(root, CHAT).read_text())
    doc["history"] += [
        {"message": {"role": "user", "content": "And for the UI atlas?", "id": "u-03"}},
        {
            "message": {
                "role": "assistant",
                "content": "The UI atlas has no mipmaps: 1 px is enough.",
                "id": "a-04",
            }
        },
    ]
    session(root, CHAT).write_text(json.dumps(doc))
    after = c.parse(session(root, CHAT)).tasks[0]
    assert after.turns[:2] == before.turns and after.turns[2].native_turn_id == "u-03"


def test_rename_comes_from_sessions_json(root):
    c = KiroIdeConnector([root])
    index_path = session(root, CHAT).with_name("sessions.json")
    index = json.loads(index_path.read_text())
    index[0]["title"] = "Atlas padding for mipmaps"
    index_path.write_text(json.dumps(index))
    (task,) = c.parse(session(root, CHAT)).tasks
    assert task.title.text == "Atlas padding for mipmaps"


def test_a_file_rewritten_while_it_is_read_is_one_issue_and_no_task(root, monkeypatch):
    path = session(root, CHAT)

    class Rewritten:
        """The file as Kiro rewrites it in place while we read: the read gets the old bytes."""

        def __init__(self, p, mode):
            self.handle = open(p, mode)  # noqa: SIM115

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def read(self, n):
            data = self.handle.read(n)
            with open(path, "a") as f:
                f.write(" ")
            return data

    monkeypatch.setattr(files.os, "fdopen", Rewritten)  # the shared reader's open of the fd
    result = KiroIdeConnector([root]).parse(path)
    assert not result.tasks and [i.reason for i in result.issues] == ["changed_while_reading"]
    monkeypatch.undo()
    assert KiroIdeConnector([root]).parse(path).tasks  # the next look reads it


def test_bad_snapshot_and_bad_history_entries_are_recorded(root):
    (root / HASH / "3c4d5e6f7a8b.chat").write_bytes(b"\x00\x01 not json")
    (root / HASH / "4d5e6f7a8b9c.chat").write_text('{"chat": [')
    doc = json.loads(session(root, CHAT).read_text())
    doc["history"].insert(1, "garbage")
    session(root, CHAT).write_text(json.dumps(doc))
    c = KiroIdeConnector([root])
    old = c.parse(root / HASH)
    assert [t.native_id for t in old.tasks] == ["wf-3a1b9c"] and len(old.tasks[0].turns) == 2
    assert sorted(i.reason for i in old.issues) == ["binary", "invalid_json"]
    new = c.parse(session(root, CHAT))
    assert len(new.tasks[0].turns) == 2 and [i.reason for i in new.issues] == ["bad_record"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=0, max_value=4000), junk=st.binary(max_size=40))
def test_damaged_documents_never_raise(tmp_path, cut, junk):
    case = tmp_path / f"c{cut}-{abs(hash(junk))}"
    root = Path(shutil.copytree(DATA, case, dirs_exist_ok=True))
    path = session(root, CHAT)
    raw = path.read_bytes()
    path.write_bytes(raw[:cut] + junk + raw[cut + len(junk) :])
    c = KiroIdeConnector([root])
    result = c.parse(path)
    assert result.tasks or result.issues
    assert isinstance(c.task_days(path), set)
