"""Side threads written by hand: forks, workflows, /btw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline_tests.support.claude_transcript import (
    Transcript,
    connector,
    only_task,
    project,
)


def _side_file(home: Path, relative: str, meta: dict[str, Any] | None = None) -> Path:
    session = "5e551011-0000-4000-8000-000000000001"
    agent_id = Path(relative).stem.removeprefix("agent-")
    t = Transcript(session_id=session, isSidechain=True, agentId=agent_id)
    t.prompt("Look into the failing job", parent=None)
    t.text("It fails on a missing env var.", f"msg_{agent_id}", "end_turn")
    path = t.write((project(home) / session / relative).parent, Path(relative).name)
    if meta is not None:
        path.with_name(path.stem + ".meta.json").write_text(json.dumps(meta))
    return path


@pytest.mark.parametrize(
    ("relative", "meta", "ownership", "reason", "n_turns"),
    [
        (
            "subagents/agent-a1b2c3d4e5f6a7b8c.jsonl",
            {
                "agentType": "Explore",
                "description": "Find it",
                "toolUseId": "toolu_9",
                "spawnDepth": 1,
            },
            "delegated",
            "claude_code:subagent",
            1,
        ),
        (
            "subagents/workflows/wf_run1/agent-a0f0f0f0f0f0f0f0f.jsonl",
            {"agentType": "workflow-subagent", "spawnDepth": 1},
            "delegated",
            "claude_code:workflow-subagent",
            1,
        ),
        (
            "subagents/agent-acompact-767ece576f2b74e8.jsonl",
            None,
            "delegated",
            "claude_code:compaction",
            0,
        ),
        (
            "subagents/agent-aprompt_suggestion-1234abcd.jsonl",
            None,
            "delegated",
            "claude_code:prompt-suggestion",
            0,
        ),
        (
            "subagents/agent-aside_question-c5e5c961a7749e08.jsonl",
            None,
            "delegated",
            "claude_code:aside-question",
            0,
        ),
        ("subagents/agent-agentSummary-1234.jsonl", None, "delegated", "claude_code:sidechain", 0),
    ],
)
def test_side_thread_classification(
    home: Path,
    relative: str,
    meta: dict[str, Any] | None,
    ownership: str,
    reason: str,
    n_turns: int,
) -> None:
    path = _side_file(home, relative, meta)
    assert path in connector(home).discover()
    result = connector(home).parse(path)
    assert result.issues == []
    task = only_task(result)
    assert task.native_id == f"5e551011-0000-4000-8000-000000000001/{path.stem}"
    assert (task.ownership.ownership, task.ownership.reason) == (ownership, reason)
    assert len(task.turns) == n_turns
    if meta:
        for key, value in meta.items():
            assert task.ownership.evidence[key] == value


def test_side_thread_native_id_never_collides_with_the_session(home: Path) -> None:
    main = Transcript()
    main.turn("one", "answer one", 1)
    main_path = main.write(project(home))
    side_path = _side_file(home, "subagents/agent-a1b2c3d4e5f6a7b8c.jsonl")
    ids = {only_task(connector(home).parse(p)).native_id for p in (main_path, side_path)}
    assert len(ids) == 2
