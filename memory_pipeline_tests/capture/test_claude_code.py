"""Claude Code connector: real fixtures (data/claude/) plus hand-made files in the same format."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline.capture.claude_code import ClaudeCodeConnector
from memory_pipeline.capture.claude_code import load as claude_code_load
from memory_pipeline.capture.models import ParsedTask, ParseResult

DATA = Path(__file__).parent / "data" / "claude"
MAIN_2_0_64 = DATA / "codemie-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
SPOTTER_SUBAGENTS = DATA / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents"
SHOWCASE_SUBAGENTS = (
    DATA / "claude-code-log-synthetic" / "55550000-0000-4000-8000-000000000001" / "subagents"
)
# Far after every file's mtime: the quiet-file rule (settle_after) is always met.
LATER = datetime(2099, 1, 1, tzinfo=UTC)


def connector(home: Path, *, now: datetime = LATER, **kwargs: Any) -> ClaudeCodeConnector:
    return ClaudeCodeConnector(home, now=lambda: now, **kwargs)


def only_task(result: ParseResult) -> ParsedTask:
    assert len(result.tasks) == 1, result
    return result.tasks[0]


def issue_reasons(result: ParseResult) -> list[str]:
    return [issue.reason for issue in result.issues]


# ---------------------------------------------------------------------------------------------
# A small writer for hand-made transcripts in the real record format (§2.2 of the notes)
# ---------------------------------------------------------------------------------------------

_LAST = object()


class Transcript:
    """Builds a Claude Code session file record by record; parents default to the last record."""

    def __init__(
        self, session_id: str = "5e551011-0000-4000-8000-000000000001", **envelope: Any
    ) -> None:
        self.session_id = session_id
        self.envelope: dict[str, Any] = {
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/app",
            "sessionId": session_id,
            "version": "2.1.229",
            "gitBranch": "main",
            "entrypoint": "cli",
        }
        self.envelope.update(envelope)
        self.envelope = {k: v for k, v in self.envelope.items() if v is not None}
        self.lines: list[str] = []
        self.last: str | None = None
        self.count = 0
        self.clock = datetime(2026, 9, 1, 10, 0, 0, tzinfo=UTC)

    def _threaded(self, rtype: str, parent: Any, **fields: Any) -> str:
        self.count += 1
        uuid = fields.pop("uuid", f"{rtype[:1]}{self.count:03d}-0000-4000-8000-000000000000")
        self.clock += timedelta(seconds=1)
        record = {
            "parentUuid": self.last if parent is _LAST else parent,
            **self.envelope,
            "type": rtype,
            "uuid": uuid,
            "timestamp": self.clock.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            **fields,
        }
        self.lines.append(json.dumps(record))
        self.last = uuid
        return uuid

    def prompt(self, content: Any, parent: Any = _LAST, **fields: Any) -> str:
        message = {"role": "user", "content": content}
        return self._threaded("user", parent, message=message, **fields)

    def tool_result(self, tool_id: str, output: str = "ok", parent: Any = _LAST) -> str:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        return self._threaded(
            "user",
            parent,
            message={"role": "user", "content": [block]},
            toolUseResult={"stdout": output},
        )

    def assistant(
        self,
        block: dict[str, Any],
        msg_id: str,
        stop_reason: str | None = None,
        parent: Any = _LAST,
        model: str = "claude-opus-5",
        **fields: Any,
    ) -> str:
        message = {
            "model": model,
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        return self._threaded("assistant", parent, message=message, requestId="req_1", **fields)

    def text(self, text: str, msg_id: str, stop_reason: str | None = None, **kw: Any) -> str:
        return self.assistant({"type": "text", "text": text}, msg_id, stop_reason, **kw)

    def thinking(self, text: str, msg_id: str) -> str:
        return self.assistant({"type": "thinking", "thinking": text, "signature": "x"}, msg_id)

    def tool_use(self, tool_id: str, msg_id: str, name: str = "Bash") -> str:
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": {"command": "ls"}}
        return self.assistant(block, msg_id, "tool_use")

    def system(self, subtype: str, parent: Any = _LAST, **fields: Any) -> str:
        return self._threaded("system", parent, subtype=subtype, isMeta=False, **fields)

    def attachment(self, attachment: dict[str, Any], parent: Any = _LAST) -> str:
        return self._threaded("attachment", parent, attachment=attachment)

    def sidecar(self, record: dict[str, Any]) -> None:
        self.lines.append(json.dumps(record))

    def raw(self, line: str) -> None:
        self.lines.append(line)

    def turn(self, prompt: str, answer: str, n: int, **prompt_fields: Any) -> str:
        """A complete 2.1.x turn: prompt, tool call, final text, turn_duration."""
        uuid = self.prompt(prompt, **prompt_fields)
        self.tool_use(f"toolu_{n}", f"msg_{n}a")
        self.tool_result(f"toolu_{n}")
        self.text(answer, f"msg_{n}b")
        self.system("turn_duration", durationMs=1000, messageCount=4)
        return uuid

    def write(self, directory: Path, name: str | None = None, newline_at_end: bool = True) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / (name or f"{self.session_id}.jsonl")
        body = "\n".join(self.lines) + ("\n" if newline_at_end else "")
        path.write_text(body, encoding="utf-8")
        return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty `~/.claude` with one project directory."""
    (tmp_path / "claude" / "projects" / "-home-dev-app").mkdir(parents=True)
    return tmp_path / "claude"


def project(home: Path) -> Path:
    return home / "projects" / "-home-dev-app"


# ---------------------------------------------------------------------------------------------
# Real fixtures
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Ownership (§2.4)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("envelope", "prompt_fields", "history", "ownership", "reason"),
    [
        (
            {"entrypoint": "cli"},
            {"promptSource": "typed"},
            False,
            "user_owned",
            "claude_code:typed-prompt",
        ),
        (
            {"entrypoint": "claude-vscode"},
            {"origin": {"kind": "human"}},
            False,
            "user_owned",
            "claude_code:typed-prompt",
        ),
        (
            {"entrypoint": "sdk-cli"},
            {"promptSource": "typed"},
            True,
            "delegated",
            "claude_code:sdk-entrypoint",
        ),
        ({"entrypoint": "sdk-py"}, {}, False, "delegated", "claude_code:sdk-entrypoint"),
        (
            {"entrypoint": "cli"},
            {"promptSource": "sdk"},
            True,
            "delegated",
            "claude_code:sdk-prompt",
        ),
        (
            {"entrypoint": "cli"},
            {"turnOrigin": "sdk"},
            False,
            "delegated",
            "claude_code:sdk-prompt",
        ),
        ({"entrypoint": None}, {}, False, "unknown", "claude_code:no-entrypoint"),
        ({"entrypoint": None}, {}, True, "user_owned", "claude_code:history-match"),
        ({"entrypoint": "cli"}, {}, False, "unknown", "claude_code:unconfirmed-prompt"),
        ({"entrypoint": "cli"}, {}, True, "user_owned", "claude_code:history-match"),
        (
            {"entrypoint": "mcp"},
            {"promptSource": "typed"},
            False,
            "unknown",
            "claude_code:unrecognized-entrypoint",
        ),
    ],
)
def test_session_ownership_matrix(
    home: Path,
    envelope: dict[str, Any],
    prompt_fields: dict[str, Any],
    history: bool,
    ownership: str,
    reason: str,
) -> None:
    t = Transcript(**envelope)
    t.sidecar(
        {
            "type": "bridge-session",
            "sessionId": t.session_id,
            "bridgeSessionId": "bridge-1",
            "ownerAccountUuid": "acct-0000-secret",
            "ownerOrganizationUuid": "org-0000-secret",
        }
    )
    t.turn("fix the flaky test", "Fixed: the retry loop now waits.", 1, **prompt_fields)
    path = t.write(project(home))
    if history:
        entry = {
            "display": "fix the flaky test",
            "pastedContents": {},
            "timestamp": 1788256801000,
            "project": "/home/dev/app",
            "sessionId": t.session_id,
        }
        (home / "history.jsonl").write_text(json.dumps(entry) + "\n")
    task = only_task(connector(home).parse(path))
    assert (task.ownership.ownership, task.ownership.reason) == (ownership, reason)
    if envelope["entrypoint"]:
        assert task.ownership.evidence["entrypoint"] == envelope["entrypoint"]
    dumped = task.model_dump_json()
    assert "acct-0000-secret" not in dumped and "org-0000-secret" not in dumped
    assert "ownerAccountUuid" not in dumped
    assert len(task.turns) == 1  # ownership never changes what a turn is


def test_real_2_0_64_session_is_user_owned_when_history_jsonl_has_it(home: Path) -> None:
    path = project(home) / MAIN_2_0_64.name
    shutil.copy(MAIN_2_0_64, path)
    entry = {
        "display": "create hello.py, md and js",
        "pastedContents": {},
        "timestamp": 1765395465343,
        "project": "/tmp/private",
        "sessionId": "4c2ddfdc-b619-4525-8d03-1950fb1b0257",
    }
    (home / "history.jsonl").write_text(json.dumps(entry) + "\n")
    task = only_task(connector(home).parse(path))
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.reason == "claude_code:history-match"
    assert task.ownership.evidence == {"history_match": "sessionId"}


def test_history_without_session_id_matches_project_and_prompt(home: Path) -> None:
    t = Transcript(entrypoint=None, version="2.0.64")
    t.turn("explain the build", "It uses hatch.", 1)
    path = t.write(project(home))
    lines = [
        {"display": "something else", "project": "/home/dev/app", "timestamp": 1},
        {"display": "explain the build", "project": "/home/dev/app", "timestamp": 2},
    ]
    (home / "history.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    task = only_task(connector(home).parse(path))
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.evidence["history_match"] == "project+display"


def test_sdk_evidence_on_a_later_prompt_wins_over_a_typed_first_prompt(home: Path) -> None:
    t = Transcript()
    t.turn("typed by me", "ok", 1, promptSource="typed")
    t.turn("sent by a script", "ok", 2, promptSource="sdk")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert task.ownership.ownership == "delegated"
    assert task.ownership.evidence["promptSource"] == "sdk"


# ---------------------------------------------------------------------------------------------
# Turn completion (§2.5)
# ---------------------------------------------------------------------------------------------


def _session_with_open_last_turn(ending: str) -> Transcript:
    t = Transcript()
    t.turn("first question", "first answer", 1)
    t.prompt("second question")
    if ending == "prompt":
        return t
    t.tool_use("toolu_2", "msg_2a")
    if ending == "tool_use":
        return t
    t.tool_result("toolu_2")
    if ending == "tool_result":
        return t
    t.text("second answer", "msg_2b")
    return t


@pytest.mark.parametrize("ending", ["prompt", "tool_use", "tool_result"])
def test_file_ending_mid_turn_is_unfinished_even_when_quiet(home: Path, ending: str) -> None:
    path = _session_with_open_last_turn(ending).write(project(home))
    task = only_task(connector(home).parse(path))
    assert [t.prompt for t in task.turns] == ["first question"]
    assert task.unfinished_turn is True


def test_last_answer_without_end_marker_waits_for_a_quiet_file(home: Path) -> None:
    path = _session_with_open_last_turn("text").write(project(home))
    written = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)

    fresh = only_task(connector(home, now=written + timedelta(minutes=5)).parse(path))
    assert [t.prompt for t in fresh.turns] == ["first question"]
    assert fresh.unfinished_turn is True

    quiet = only_task(connector(home, now=written + timedelta(minutes=31)).parse(path))
    assert [t.prompt for t in quiet.turns] == ["first question", "second question"]
    assert quiet.turns[1].outcome == "second answer"
    assert quiet.unfinished_turn is False

    never = only_task(connector(home, settle_after=None).parse(path))
    assert len(never.turns) == 1 and never.unfinished_turn is True


@pytest.mark.parametrize("marker", ["turn_duration", "stop_hook_summary", "end_turn"])
def test_end_markers_complete_the_last_turn_at_once(home: Path, marker: str) -> None:
    t = Transcript()
    t.prompt("what changed?")
    answer = t.text("Two files.", "msg_1", "end_turn" if marker == "end_turn" else None)
    if marker != "end_turn":
        # 2.1.x writes the marker as a child of the answer; a later attachment takes the chain.
        t.system(marker, parent=answer)
        t.attachment({"type": "total_tokens_reminder", "text": "x"}, parent=answer)
    path = t.write(project(home))
    written = datetime.fromtimestamp(os.stat(path).st_mtime, tz=UTC)
    task = only_task(connector(home, now=written).parse(path))
    assert [(t.prompt, t.outcome) for t in task.turns] == [("what changed?", "Two files.")]
    assert task.unfinished_turn is False


def test_interrupted_turn_is_skipped_and_later_ordinals_stay_stable(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.text("Starting on two, here is a partial", "msg_2a")
    path = t.write(project(home))
    before = only_task(connector(home, settle_after=None).parse(path))
    assert [x.prompt for x in before.turns] == ["one"]
    assert before.unfinished_turn is True

    t.prompt([{"type": "text", "text": "[Request interrupted by user]"}])
    t.turn("three", "answer three", 3)
    t.prompt("four")
    t.tool_use("toolu_4", "msg_4a")
    t.tool_result("toolu_4", "The user doesn't want to proceed with this tool use.")
    t.prompt([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    t.turn("five", "answer five", 5)
    t.write(project(home))
    after = only_task(connector(home, settle_after=None).parse(path))
    assert [(x.ordinal, x.prompt, x.outcome) for x in after.turns] == [
        (0, "one", "answer one"),
        (1, "three", "answer three"),
        (2, "five", "answer five"),
    ]
    assert after.turns[0] == before.turns[0]
    assert after.unfinished_turn is False


def test_growth_appends_a_turn_and_keeps_earlier_turns_identical(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.tool_use("toolu_2", "msg_2a")
    path = t.write(project(home))
    first = only_task(connector(home).parse(path))
    assert len(first.turns) == 1 and first.unfinished_turn is True

    t.tool_result("toolu_2")
    t.text("answer two", "msg_2b")
    t.system("turn_duration", durationMs=5, messageCount=3)
    t.write(project(home))
    second = only_task(connector(home).parse(path))
    assert [x.ordinal for x in second.turns] == [0, 1]
    assert second.turns[0] == first.turns[0]
    assert second.turns[1].prompt == "two" and second.turns[1].outcome == "answer two"
    assert second.unfinished_turn is False
    assert second.started_at == first.started_at


def test_api_error_turn_is_skipped_and_not_waited_for(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.text(
        "API Error: 529 Overloaded",
        "msg_err",
        model="<synthetic>",
        isApiErrorMessage=True,
        error="overloaded",
    )
    path = t.write(project(home))
    task = only_task(connector(home).parse(path))
    assert [x.prompt for x in task.turns] == ["one"]
    assert task.unfinished_turn is False
    t.turn("two again", "answer two", 2)
    t.write(project(home))
    task = only_task(connector(home).parse(path))
    assert [(x.ordinal, x.prompt) for x in task.turns] == [(0, "one"), (1, "two again")]


def test_streamed_blocks_are_merged_by_message_id(home: Path) -> None:
    t = Transcript()
    t.prompt("summarise")
    t.thinking("secret reasoning", "msg_1")
    t.text("Part one.", "msg_1")
    t.tool_use("toolu_1", "msg_1")
    t.tool_result("toolu_1")
    t.thinking("more reasoning", "msg_2")
    t.text("Final part A.", "msg_2")
    last = t.text("Final part B.", "msg_2", "end_turn")
    # A resume replay writes the same record (same uuid) again: nothing is doubled.
    t.raw(t.lines[-1])
    path = t.write(project(home))
    result = connector(home).parse(path)
    assert result.issues == []
    [turn] = only_task(result).turns
    assert turn.outcome == "Final part A.\n\nFinal part B."
    assert "reasoning" not in turn.outcome and "Part one." not in turn.outcome
    assert turn.native_message_ids == [turn.native_turn_id, "msg_2"]
    assert turn.completed_at is not None
    assert last in t.lines[-1]  # the replayed line is the leaf and resolves to the same record


# ---------------------------------------------------------------------------------------------
# The tree (§2.2): rewind branches, compaction, resumed history, sidechain records
# ---------------------------------------------------------------------------------------------


def test_rewind_branch_keeps_only_the_live_leaf_chain(home: Path) -> None:
    t = Transcript()
    t.prompt("one")
    answer_one = t.text("answer one", "msg_1", "end_turn")
    t.prompt("two (abandoned)")
    t.text("answer two", "msg_2", "end_turn")
    t.prompt("two, edited", parent=answer_one)  # second child of the same parent
    t.text("answer two, edited", "msg_3", "end_turn")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.ordinal, x.prompt) for x in task.turns] == [(0, "one"), (1, "two, edited")]


def test_last_prompt_leaf_after_the_last_message_selects_another_branch(home: Path) -> None:
    t = Transcript()
    t.prompt("one")
    answer_one = t.text("answer one", "msg_1", "end_turn")
    t.prompt("two")
    answer_two = t.text("answer two", "msg_2", "end_turn")
    t.prompt("two, edited", parent=answer_one)
    t.text("answer two, edited", "msg_3", "end_turn")
    path = t.write(project(home))
    assert [x.prompt for x in only_task(connector(home).parse(path)).turns] == [
        "one",
        "two, edited",
    ]
    # The user went back to the first branch: last-prompt names its leaf, after every message.
    t.sidecar({"type": "last-prompt", "sessionId": t.session_id, "leafUuid": answer_two})
    t.write(project(home))
    assert [x.prompt for x in only_task(connector(home).parse(path)).turns] == ["one", "two"]
    # A leafUuid naming an ancestor of the last message is not trusted to drop turns.
    t.sidecar({"type": "last-prompt", "sessionId": t.session_id, "leafUuid": answer_one})
    t.write(project(home))
    assert [x.prompt for x in only_task(connector(home).parse(path)).turns] == [
        "one",
        "two, edited",
    ]


def test_compaction_summary_is_not_a_prompt_and_the_old_chain_is_kept(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    before = t.last
    t.system(
        "compact_boundary",
        parent=None,
        logicalParentUuid=before,
        content="Conversation compacted",
        compactMetadata={"trigger": "manual", "preTokens": 100},
    )
    t.prompt(
        "This session is being continued from a previous conversation that ran out of context.",
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    t.turn("two", "answer two", 2)
    # An auto-compaction in the middle of a turn does not split it.
    t.prompt("three")
    t.tool_use("toolu_3", "msg_3a")
    t.tool_result("toolu_3")
    boundary_parent = t.last
    t.system("compact_boundary", parent=None, logicalParentUuid=boundary_parent)
    t.prompt("Summary of the conversation so far...", isCompactSummary=True)
    t.text("answer three", "msg_3b", "end_turn")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.prompt, x.outcome) for x in task.turns] == [
        ("one", "answer one"),
        ("two", "answer two"),
        ("three", "answer three"),
    ]


def test_resumed_history_from_an_ancestor_is_not_captured_again(home: Path) -> None:
    ancestor = "a0c35702-0000-4000-8000-000000000000"
    t = Transcript()
    # Copied ancestor records: snake session_id names the ancestor (§2.2, corpus §3.1).
    t.turn("old question", "old answer", 1, session_id=ancestor)
    t.turn("new question", "new answer", 2, session_id=t.session_id)
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.ordinal, x.prompt) for x in task.turns] == [(0, "new question")]
    assert task.native_context["ancestor_session_ids"] == [ancestor]

    # Older copies that keep the ancestor's camel-case sessionId are inherited too.
    t2 = Transcript(session_id="b0000000-0000-4000-8000-000000000002")
    t2.envelope["sessionId"] = ancestor
    t2.turn("old question", "old answer", 1)
    t2.envelope["sessionId"] = t2.session_id
    t2.turn("newer question", "newer answer", 2)
    task2 = only_task(connector(home).parse(t2.write(project(home))))
    assert task2.native_id == t2.session_id
    assert [x.prompt for x in task2.turns] == ["newer question"]


def test_sidechain_records_inside_a_main_file_are_skipped(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.envelope.update(isSidechain=True, agentId="deadbeef")
    t.prompt("delegated prompt", parent=None)
    t.text("delegated answer", "msg_side", "end_turn")
    t.envelope.update(isSidechain=False)
    del t.envelope["agentId"]
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [x.prompt for x in task.turns] == ["one"]


def test_commands_notifications_and_harness_text_are_not_prompts(home: Path) -> None:
    t = Transcript()
    t.prompt(
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n"
        "<command-args></command-args>"
    )
    t.prompt("<local-command-stdout></local-command-stdout>")
    t.prompt(
        "Caveat: The messages below were generated by the user while running local commands. "
        "DO NOT respond to these messages.",
        isMeta=True,
    )
    t.turn("real question", "real answer", 1, promptSource="typed")
    t.prompt(
        "<task-notification><task-id>b1</task-id><status>completed</status></task-notification>",
        origin={"kind": "task-notification"},
        promptSource="system",
    )
    t.text("The background job finished.", "msg_n", "end_turn")
    t.prompt(
        "<command-message>review</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>42</command-args>"
    )
    t.prompt("Review pull request 42 carefully ...", isMeta=True)
    t.text("PR 42 looks good.", "msg_r", "end_turn")
    t.prompt(
        [
            {"type": "text", "text": "<ide_opened_file>The user opened app.py</ide_opened_file>"},
            {"type": "text", "text": "and this one?"},
        ]
    )
    t.text("That one too.", "msg_q", "end_turn")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert [(x.prompt, x.outcome) for x in task.turns] == [
        ("real question", "real answer"),
        ("/review 42", "PR 42 looks good."),
        ("and this one?", "That one too."),
    ]
    assert task.ownership.reason == "claude_code:typed-prompt"
    assert task.unfinished_turn is False


def test_queued_steering_is_attached_to_the_turn_prompt(home: Path) -> None:
    t = Transcript()
    t.prompt("refactor the parser")
    t.tool_use("toolu_1", "msg_1")
    t.tool_result("toolu_1")
    t.attachment(
        {"type": "queued_command", "prompt": "and keep the tests green", "commandMode": "prompt"}
    )
    t.text("Refactored; tests pass.", "msg_2", "end_turn")
    [turn] = only_task(connector(home).parse(t.write(project(home)))).turns
    assert turn.prompt == "refactor the parser\n\nand keep the tests green"


# ---------------------------------------------------------------------------------------------
# Titles
# ---------------------------------------------------------------------------------------------


def test_custom_title_beats_ai_title(home: Path) -> None:
    t = Transcript()
    t.sidecar({"type": "custom-title", "sessionId": t.session_id, "customTitle": "My rename"})
    t.turn("one", "answer one", 1)
    t.sidecar({"type": "ai-title", "sessionId": t.session_id, "aiTitle": "Fix flaky test"})
    task = only_task(connector(home).parse(t.write(project(home))))
    assert task.title is not None
    assert (task.title.text, task.title.source) == ("My rename", "claude_code:custom-title")
    assert task.title.observed_at is None  # these sidecars carry no timestamp


def test_latest_ai_title_then_summary_then_none(home: Path) -> None:
    t = Transcript()
    leaf = t.turn("one", "answer one", 1)
    t.sidecar({"type": "ai-title", "sessionId": t.session_id, "aiTitle": "First guess"})
    t.sidecar({"type": "ai-title", "sessionId": t.session_id, "aiTitle": "Better title"})
    task = only_task(connector(home).parse(t.write(project(home))))
    assert task.title is not None
    assert (task.title.text, task.title.source) == ("Better title", "claude_code:ai-title")

    old = Transcript(session_id="01d00000-0000-4000-8000-000000000000", entrypoint=None)
    old.sidecar({"type": "summary", "summary": "Someone else's session", "leafUuid": "nowhere"})
    leaf = old.turn("one", "answer one", 1)
    old.sidecar({"type": "summary", "summary": "Parser refactor", "leafUuid": leaf})
    task = only_task(connector(home).parse(old.write(project(home))))
    assert task.title is not None
    assert (task.title.text, task.title.source) == ("Parser refactor", "claude_code:summary")

    bare = Transcript(session_id="0b000000-0000-4000-8000-000000000000")
    bare.turn("one", "answer one", 1)
    assert only_task(connector(home).parse(bare.write(project(home)))).title is None


# ---------------------------------------------------------------------------------------------
# Side threads written by hand: forks, workflows, /btw
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Bad input: every problem is a ParseIssue, the rest of the file is used
# ---------------------------------------------------------------------------------------------


def test_truncated_last_line_is_left_for_later(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.prompt("two")
    t.raw('{"parentUuid": "x", "type": "assistant", "message": {"content": [{"ty')
    path = t.write(project(home), newline_at_end=False)
    result = connector(home).parse(path)
    assert issue_reasons(result) == ["truncated_line"]
    assert result.issues[0].line == len(t.lines)
    task = only_task(result)
    assert [x.prompt for x in task.turns] == ["one"] and task.unfinished_turn is True


def test_invalid_json_line_unknown_types_and_binary_garbage(home: Path) -> None:
    t = Transcript()
    t.turn("one", "answer one", 1)
    t.sidecar({"type": "hologram-state", "sessionId": t.session_id, "beam": 3})
    t.sidecar({"type": "hologram-state", "sessionId": t.session_id, "beam": 4})
    t.raw("{this is not json")
    t.raw("[1, 2, 3]")
    t.prompt("two")
    lost = t.text("narration", "msg_lost")  # this line gets corrupted below
    t.text("answer two", "msg_2", "end_turn")
    lines = list(t.lines)
    lines[lines.index(next(x for x in lines if lost in x and '"uuid"' in x))] = "{broken"
    t.lines = lines
    path = t.write(project(home))
    with open(path, "ab") as fh:
        fh.write(b"\xff\xfe\x00garbage\x9c\n")
    result = connector(home).parse(path)
    reasons = issue_reasons(result)
    assert reasons.count("invalid_json") == 3
    assert "binary" in reasons
    assert "unknown_record" in reasons
    unknown = next(i for i in result.issues if i.reason == "unknown_record")
    assert "hologram-state" in unknown.detail and "2 lines" in unknown.detail
    # The answer's parent line was lost: the walk bridges the gap and keeps turn one.
    assert "broken_chain" in reasons
    task = only_task(result)
    assert [(x.prompt, x.outcome) for x in task.turns] == [
        ("one", "answer one"),
        ("two", "answer two"),
    ]


def test_empty_and_binary_files_return_no_task(home: Path) -> None:
    empty = project(home) / "e0000000-0000-4000-8000-000000000000.jsonl"
    empty.write_text("")
    result = connector(home).parse(empty)
    assert result.tasks == [] and issue_reasons(result) == ["empty_file"]

    binary = project(home) / "b1000000-0000-4000-8000-000000000000.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8\xff\xe0\n")
    result = connector(home).parse(binary)
    assert result.tasks == []
    assert issue_reasons(result) == ["binary", "invalid_json", "binary", "no_threaded_records"]

    sidecars_only = Transcript(session_id="5c000000-0000-4000-8000-000000000000")
    sidecars_only.sidecar({"type": "mode", "sessionId": sidecars_only.session_id})
    result = connector(home).parse(sidecars_only.write(project(home)))
    assert result.tasks == [] and issue_reasons(result) == ["no_threaded_records"]

    missing = connector(home).parse(project(home) / "gone.jsonl")
    assert missing.tasks == [] and issue_reasons(missing) == ["unreadable"]


def test_odd_shapes_never_raise(home: Path) -> None:
    t = Transcript()
    t.prompt(None)
    t.prompt([1, "two", {"type": "text", "text": 3}])
    t.sidecar({"type": "assistant", "uuid": "odd-1", "parentUuid": t.last, "message": "text"})
    t.sidecar({"type": "user", "uuid": 5, "message": {}})
    t.sidecar({"type": "ai-title", "aiTitle": ["not", "a", "string"]})
    t.sidecar({"no_type": True})
    t.last = "odd-1"
    t.turn("real", "answer", 1)
    result = connector(home).parse(t.write(project(home)))
    task = only_task(result)
    assert [x.prompt for x in task.turns] == ["real"]
    assert "parser_error" not in issue_reasons(result)
    assert set(issue_reasons(result)) == {"missing_uuid", "unknown_record", "bad_record"}
    # The two prompts of the wrong shape and the assistant message that is a string, by line.
    bad = [i.line for i in result.issues if i.reason == "bad_record"]
    assert bad == [1, 2, 3]
