"""The connector on real Claude Code transcripts (data/claude/): main sessions, subagents,
compaction threads, discovery and task days."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline.capture.claude_code import load as claude_code_load
from memory_pipeline_tests.support.claude_transcript import (
    DATA,
    MAIN_2_0_64,
    SHOWCASE_SUBAGENTS,
    SPOTTER_SUBAGENTS,
    Transcript,
    connector,
    only_task,
    project,
)


def test_real_2_0_64_main_transcript(tmp_path: Path) -> None:
    result = connector(tmp_path).parse(MAIN_2_0_64)
    assert result.issues == []  # file-history-snapshot lines are known sidecars, not issues
    task = only_task(result)
    assert task.source == "claude_code"
    assert task.native_id == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert task.started_at == datetime(2025, 12, 10, 19, 37, 45, 343000, tzinfo=UTC)
    assert task.title is None
    assert task.unfinished_turn is False
    assert task.source_path == str(MAIN_2_0_64)
    assert task.native_context == {
        "project_key": "codemie-tmp-private",
        "cwd": "/tmp/private",
        "git_branch": "analytics-v2",
        "cli_version": "2.0.64",
        "model": "claude-sonnet-4-5-20250929",
    }
    # 2.0.64 writes no entrypoint and there is no history.jsonl under tmp_path.
    assert task.ownership.ownership == "unknown"
    assert task.ownership.reason == "claude_code:no-entrypoint"

    assert [t.ordinal for t in task.turns] == [0, 1, 2]
    assert [t.prompt for t in task.turns] == [
        "create hello.py, md and js",
        "update py with one liner comment",
        "delete js",
    ]
    first, second, third = task.turns
    assert first.outcome == (
        "Done! I've created three files:\n\n"
        '1. **hello.py** - Python script with a simple "Hello, World!" function\n'
        "2. **hello.md** - Markdown file with basic formatting and structure\n"
        '3. **hello.js** - Node.js script with a simple "Hello, World!" function\n\n'
        "All files are ready to use in your working directory."
    )
    assert second.outcome == (
        "Done! I've added a one-liner comment to hello.py: `# Simple hello world program`"
    )
    assert third.outcome == "Done! I've deleted hello.js."
    # The narration before the tool calls, tool inputs and tool results are not the outcome.
    for turn in task.turns:
        assert "I'll create three simple files" not in turn.outcome
        assert "File created successfully" not in turn.outcome
        assert "tool_use" not in turn.outcome and "print(" not in turn.outcome
    assert first.native_turn_id == "40523152-693d-4e07-8434-7f0c8f28cc05"
    assert first.native_message_ids == [
        "40523152-693d-4e07-8434-7f0c8f28cc05",
        "msg_bdrk_0123PinQPTX8hVMAsUpLZEeW",
    ]
    assert first.started_at == datetime(2025, 12, 10, 19, 37, 45, 343000, tzinfo=UTC)
    assert third.native_turn_id == "6fff5bfd-5653-4fde-bf50-2ffaaa3a5a9b"
    assert third.completed_at == datetime(2025, 12, 10, 19, 38, 31, 216000, tzinfo=UTC)


def test_real_main_transcript_last_turn_needs_no_quiet_period(tmp_path: Path) -> None:
    # The last answer carries stop_reason "end_turn": complete even for a file written just now.
    just_written = datetime.fromtimestamp(os.stat(MAIN_2_0_64).st_mtime, tz=UTC)
    task = only_task(connector(tmp_path, now=just_written).parse(MAIN_2_0_64))
    assert len(task.turns) == 3 and task.unfinished_turn is False


@pytest.mark.parametrize("name", ["agent-36541525.jsonl", "agent-50243ee8.jsonl"])
def test_real_warmup_sidechains_are_delegated(tmp_path: Path, name: str) -> None:
    path = DATA / "codemie-tmp-private" / name
    result = connector(tmp_path).parse(path)
    assert result.issues == []
    task = only_task(result)
    agent_id = name.removeprefix("agent-").removesuffix(".jsonl")
    assert task.native_id == f"4c2ddfdc-b619-4525-8d03-1950fb1b0257/agent-{agent_id}"
    assert task.ownership.ownership == "delegated"
    assert task.ownership.reason == "claude_code:warmup"
    assert task.ownership.evidence == {
        "agentId": agent_id,
        "isSidechain": True,
        "first_prompt": "Warmup",
    }
    assert task.turns == [] and task.unfinished_turn is False
    assert task.native_context["parent_session_id"] == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert task.native_context["layout"] == "flat"


def test_real_new_layout_task_subagent(tmp_path: Path) -> None:
    path = SPOTTER_SUBAGENTS / "agent-aac57f5.jsonl"
    result = connector(tmp_path).parse(path)
    assert result.issues == []
    task = only_task(result)
    assert task.native_id == "ae4a77f8-aedd-4bc1-888f-c94edc91af04/agent-aac57f5"
    assert task.ownership.ownership == "delegated"
    assert task.ownership.reason == "claude_code:subagent"
    assert task.ownership.evidence == {"agentId": "aac57f5", "isSidechain": True}
    assert task.native_context["project_key"] == "spotter"
    assert task.native_context["layout"] == "subagents"
    # Turns of delegated work are returned (parallel tool calls branch the tree; the live chain
    # still reaches the delegated prompt and the final report).
    [turn] = task.turns
    assert turn.prompt.startswith("Search hex.pm for the latest versions of these Elixir packages")
    assert turn.outcome.startswith(
        "Perfect! I now have all the version information needed. Let me compile the "
        "recommendations.\n\n## OpenTelemetry Package Ve"
    )
    assert "Let me fetch more specific version information" not in turn.outcome
    assert turn.native_message_ids == [
        "f1eb9ac5-1928-4a73-b605-aaf2f3a24db9",
        "msg_01QGx4ZWACvqLdKD387cHH6u",
    ]


def test_real_compaction_thread_is_delegated_without_turns(tmp_path: Path) -> None:
    path = SPOTTER_SUBAGENTS / "agent-acompact-946d2b.jsonl"
    result = connector(tmp_path).parse(path)
    assert result.issues == []  # its first record's parent lives in the main file: not an issue
    task = only_task(result)
    assert task.native_id == "ae4a77f8-aedd-4bc1-888f-c94edc91af04/agent-acompact-946d2b"
    assert task.ownership.ownership == "delegated"
    assert task.ownership.reason == "claude_code:compaction"
    assert task.turns == [] and task.unfinished_turn is False


def test_real_synthetic_subagent_with_meta(tmp_path: Path) -> None:
    path = SHOWCASE_SUBAGENTS / "agent-showcol1.jsonl"
    task = only_task(connector(tmp_path).parse(path))
    assert task.native_id == "55550000-0000-4000-8000-000000000001/agent-showcol1"
    assert task.ownership.ownership == "delegated"
    assert task.ownership.reason == "claude_code:subagent"
    assert task.ownership.evidence == {
        "agentId": "showcol1",
        "isSidechain": True,
        "agentType": "general-purpose",
        "description": "Survey the web module",
        "toolUseId": "toolu_sc_showcol1",
    }
    assert task.title is not None
    assert task.title.text == "Survey the web module"
    assert task.title.source == "claude_code:agent-description"
    [turn] = task.turns
    assert turn.prompt == "Survey src/web and report its layout, with a screenshot."
    assert turn.outcome.startswith("## The web module\n\nPages render in a **column layout**")


def test_discover_and_task_days_over_the_fixture_layouts(tmp_path: Path) -> None:
    home = tmp_path / "claude"
    shutil.copytree(DATA, home / "projects", ignore=shutil.ignore_patterns("README.md"))
    found = connector(home).discover()
    projects = home / "projects"
    assert found == sorted(
        [
            projects
            / "claude-code-log-synthetic"
            / SHOWCASE_SUBAGENTS.relative_to(DATA / "claude-code-log-synthetic")
            / "agent-showcol1.jsonl",
            projects / "codemie-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
            projects / "codemie-tmp-private" / "agent-36541525.jsonl",
            projects / "codemie-tmp-private" / "agent-50243ee8.jsonl",
            projects
            / "spotter"
            / SPOTTER_SUBAGENTS.relative_to(DATA / "spotter")
            / "agent-aac57f5.jsonl",
            projects
            / "spotter"
            / SPOTTER_SUBAGENTS.relative_to(DATA / "spotter")
            / "agent-acompact-946d2b.jsonl",
        ]
    )
    days = {path.name: connector(home).task_days(path) for path in found}
    assert days["4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"] == {date(2025, 12, 10)}
    assert days["agent-aac57f5.jsonl"] == {date(2026, 2, 12)}
    # task_days agrees with parse().started_at
    for path in found:
        task = only_task(connector(home).parse(path))
        assert days[path.name] == {task.started_at.date()}
    assert connector(tmp_path / "missing").discover() == []


def test_task_days_reads_only_to_the_first_threaded_record(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Transcript()
    t.sidecar({"type": "mode", "sessionId": t.session_id, "mode": "normal"})
    t.turn("first", "answer", 1)
    path = t.write(project(home))
    consumed: list[int] = []
    real_iter = claude_code_load.iter_jsonl

    def counting(path: Path, read: Any) -> Any:
        for line_no, obj in real_iter(path, read):
            consumed.append(line_no)
            yield line_no, obj

    monkeypatch.setattr(claude_code_load, "iter_jsonl", counting)
    assert connector(home).task_days(path) == {date(2026, 9, 1)}
    assert consumed == [1, 2]  # the sidecar and the first prompt, nothing after
    empty = project(home) / "empty.jsonl"
    empty.write_text("")
    assert connector(home).task_days(empty) == set()
