"""Codex CLI connector: real fixtures plus hand-made rollouts in the real formats.

Real fixtures live in data/codex/ (licenses beside them). Everything else is written here into
tmp_path in the formats of transcript-formats.md §1.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.models import ParsedTask, ParseResult

DATA = Path(__file__).parent / "data" / "codex"
CODEMIE_TUI = (
    DATA / "codemie" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799"
    ".first-turn.jsonl"
)
CODEMIE_EXEC = DATA / "codemie" / "turn-2.synthetic-exec.jsonl"
LOCALPUSH = (
    DATA / "localpush" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)

# UUIDv7 ids: the first 48 bits are unix ms. 0x019ca8d72d00 ms = 2026-03-01T10:00:00Z = T0.
T0_MS = 0x019CA8D72D00
THREAD = "019ca8d7-2d00-7000-8000-000000000001"
T0 = "2026-03-01T10:00:00.000Z"


# --- builders in the real line formats -----------------------------------------------------------


def ts(minute: int, second: float = 0.0) -> str:
    whole = int(second)
    millis = round((second - whole) * 1000)
    return f"2026-03-01T10:{minute:02d}:{whole:02d}.{millis:03d}Z"


def meta(thread: str = THREAD, at: str = T0, **fields: Any) -> dict[str, Any]:
    payload = {
        "id": thread,
        "timestamp": at,
        "cwd": "/home/u/proj",
        "originator": "codex-tui",
        "cli_version": "0.125.0",
        "source": "cli",
        "model_provider": "openai",
    }
    payload.update(fields)
    return {"timestamp": at, "type": "session_meta", "payload": payload}


def event(at: str, etype: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": at, "type": "event_msg", "payload": {"type": etype, **payload}}


def item(at: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": at, "type": "response_item", "payload": payload}


def user_item(at: str, text: str) -> dict[str, Any]:
    return item(
        at, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    )


def assistant_item(at: str, text: str, phase: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }
    if phase:
        payload["phase"] = phase
    return item(at, payload)


def turn(
    turn_id: str,
    prompt: str,
    answer: str | None,
    minute: int,
    *,
    complete: bool = True,
    last_agent_message: Any = "same",
) -> list[dict[str, Any]]:
    """One explicit turn as Codex 0.125 writes it (context after task_started)."""
    lines = [
        event(ts(minute), "task_started", turn_id=turn_id, collaboration_mode_kind="default"),
        user_item(ts(minute), "<environment_context>\n  <cwd>/home/u/proj</cwd>\n"),
        {
            "timestamp": ts(minute),
            "type": "turn_context",
            "payload": {"turn_id": turn_id, "model": "gpt-5.5"},
        },
        user_item(ts(minute, 1), prompt),
        event(ts(minute, 1), "user_message", message=prompt, images=[], local_images=[]),
        item(ts(minute, 2), {"type": "reasoning", "summary": [], "encrypted_content": "x"}),
        event(ts(minute, 3), "agent_message", message="Looking at the code.", phase="commentary"),
        assistant_item(ts(minute, 3), "Looking at the code.", "commentary"),
        item(
            ts(minute, 4),
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": "{}",
                "call_id": f"c-{turn_id}",
            },
        ),
        item(
            ts(minute, 5),
            {"type": "function_call_output", "call_id": f"c-{turn_id}", "output": "ok"},
        ),
    ]
    if answer is not None:
        lines += [
            event(ts(minute, 6), "agent_message", message=answer, phase="final_answer"),
            assistant_item(ts(minute, 6), answer, "final_answer"),
        ]
    if complete:
        lam = answer if last_agent_message == "same" else last_agent_message
        lines.append(event(ts(minute, 7), "task_complete", turn_id=turn_id, last_agent_message=lam))
    return lines


def tid(n: int, ms: int = T0_MS + 60_000) -> str:
    """A v7 turn id minted at unix `ms` (default: one minute after THREAD was created)."""
    head = f"{ms:012x}"
    return f"{head[:8]}-{head[8:]}-7000-8000-{n:012x}"


def write(path: Path, lines: list[Any], raw_tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for line in lines:
            if isinstance(line, bytes):
                fh.write(line + b"\n")
            else:
                fh.write(json.dumps(line).encode() + b"\n")
        fh.write(raw_tail)
    return path


def rollout_path(home: Path, thread: str = THREAD, sub: str = "sessions") -> Path:
    return home / sub / "2026" / "03" / "01" / f"rollout-2026-03-01T11-00-00-{thread}.jsonl"


def only_task(result: ParseResult) -> ParsedTask:
    assert len(result.tasks) == 1, result
    return result.tasks[0]


def reasons(result: ParseResult) -> list[str]:
    return [i.reason for i in result.issues]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "codex_home"
    h.mkdir()
    return h


@pytest.fixture
def conn(home: Path) -> CodexConnector:
    return CodexConnector(home)


# =================================================================================================
# Real fixtures
# =================================================================================================


def test_real_tui_rollout_takes_prompt_from_user_message_not_agents_md(conn: CodexConnector):
    result = conn.parse(CODEMIE_TUI)
    assert result.issues == []
    task = only_task(result)
    assert task.source == "codex"
    assert task.native_id == "019e1625-789d-76c0-80ab-3724b5ddb799"
    assert task.started_at == datetime(2026, 5, 11, 8, 26, 55, 42000, tzinfo=UTC)
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.reason == "codex:interactive-cli"
    assert task.ownership.evidence == {"source": "cli", "originator": "codex-tui"}
    assert task.unfinished_turn is False
    [t] = task.turns
    assert t.ordinal == 0
    assert t.native_turn_id == "019e1625-d031-75e3-a85f-f143e43c0d84"
    # The AGENTS.md instructions are a role:user response_item: injected context, not a prompt.
    assert t.prompt == "show tools"
    assert "AGENTS.md" not in t.prompt
    assert t.outcome.startswith("Available tool groups in this session:")
    assert "exec_command" not in t.outcome and "Chunk ID" not in t.outcome
    assert t.started_at == datetime(2026, 5, 11, 8, 27, 17, 493000, tzinfo=UTC)
    assert t.completed_at == datetime(2026, 5, 11, 8, 27, 32, 911000, tzinfo=UTC)
    ctx = task.native_context
    assert ctx["cwd"] == "/Users/Sample_User/repos/codemie-ai/codemie-code"
    assert ctx["git"] == {
        "commit_hash": "c8c252acd853de59c54b5c31374fec6028ee812e",
        "branch": "feat/codex-agent-plugin",
        "repository_url": "git@github.com:codemie-ai/codemie-code.git",
    }
    assert ctx["originator"] == "codex-tui"
    assert ctx["cli_version"] == "0.125.0"
    assert ctx["source"] == "cli"
    assert ctx["model_provider"] == "openai"
    assert ctx["model"] == "gpt-5.5"
    assert ctx["archived"] is False
    assert task.title is None


def test_real_desktop_rollout_outcome_is_final_answer_not_commentary(conn: CodexConnector):
    task = only_task(conn.parse(LOCALPUSH))
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.reason == "codex:first-party-ide"
    assert task.ownership.evidence["originator"] == "Codex Desktop"
    [t] = task.turns
    # 0.104 writes context messages before task_started; the prompt is the user_message event.
    assert t.prompt == "[REDACTED_MESSAGE len=98 sha=c002ff99]"
    assert t.outcome == "[REDACTED_LAST_AGENT_MESSAGE len=647 sha=10502814]"
    assert t.native_turn_id == "019c8bfe-ed40-7a21-b57f-6447436c5881"
    assert task.native_context["model"] == "gpt-5.3-codex"
    assert task.native_context["cli_version"] == "0.104.0-alpha.1"


def test_real_exec_fixture_is_delegated_with_two_turns(conn: CodexConnector):
    task = only_task(conn.parse(CODEMIE_EXEC))
    assert task.ownership.ownership == "delegated"
    assert task.ownership.reason == "codex:exec"
    assert task.ownership.evidence == {"source": "exec", "originator": "codex_exec"}
    # No uuid in this file's name: the thread id comes from its session_meta.
    assert task.native_id == "a1b2c3d4-e5f6-7890-abcd-ef1234567890"
    assert [(t.ordinal, t.prompt, t.outcome) for t in task.turns] == [
        (
            0,
            "Hello, Codex! Please explain what you do.",
            "I am Codex, an AI coding assistant by OpenAI.",
        ),
        (
            1,
            "What languages can you work with?",
            "I can work with many programming languages including Python, JavaScript, "
            "TypeScript, Go, and Rust.",
        ),
    ]
    assert [t.native_turn_id for t in task.turns] == [
        "b2c3d4e5-f600-7891-bcde-f12345678901",
        "c3d4e5f6-a700-7012-cdef-123456789012",
    ]


def test_task_days_of_real_fixtures_match_parse(conn: CodexConnector):
    for path in (CODEMIE_TUI, CODEMIE_EXEC, LOCALPUSH):
        task = only_task(conn.parse(path))
        assert conn.task_days(path) == {task.started_at.date()}
    assert conn.task_days(LOCALPUSH) == {date(2026, 2, 23)}


# =================================================================================================
# Envelope generations (notes §1.1)
# =================================================================================================

OLD_THREAD = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"


def test_flat_may_2025_rollout_with_bare_response_items(home: Path, conn: CodexConnector):
    path = write(
        home / "sessions" / f"rollout-2025-05-07-{OLD_THREAD}.jsonl",
        [
            {"id": OLD_THREAD, "timestamp": "2025-05-07T17:24:21.123Z", "instructions": "be brief"},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<user_instructions>\nbe brief\n</user_instructions>",
                    }
                ],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "list the files"}],
            },
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "c1",
            },
            {"type": "function_call_output", "call_id": "c1", "output": '{"output":"a.py"}'},
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "content": [{"type": "output_text", "text": "There is one file: a.py"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "thanks"}],
            },
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_2",
                "content": [{"type": "output_text", "text": "You're welcome."}],
            },
        ],
    )
    result = conn.parse(path)
    assert result.issues == []
    task = only_task(result)
    assert task.native_id == OLD_THREAD
    assert task.started_at == datetime(2025, 5, 7, 17, 24, 21, 123000, tzinfo=UTC)
    assert task.ownership.ownership == "unknown"
    assert task.ownership.reason == "codex:no-source"
    assert [(t.ordinal, t.native_turn_id, t.prompt, t.outcome) for t in task.turns] == [
        (0, "rollout-3", "list the files", "There is one file: a.py"),
        (1, "rollout-8", "thanks", "You're welcome."),
    ]
    assert task.turns[0].native_message_ids == ["msg_1"]
    assert task.native_context["rollout_format"] == "bare_items"
    assert task.unfinished_turn is False
    assert conn.task_days(path) == {date(2025, 5, 7)}


def test_jul_sep_2025_rollout_with_git_and_state_records(home: Path, conn: CodexConnector):
    path = write(
        home
        / "sessions"
        / "2025"
        / "08"
        / "02"
        / f"rollout-2025-08-02T09-00-00-{OLD_THREAD}.jsonl",
        [
            {
                "id": OLD_THREAD,
                "timestamp": "2025-08-02T07:00:00.000Z",
                "instructions": None,
                "git": {
                    "commit_hash": "abc123",
                    "branch": "main",
                    "repository_url": "git@github.com:o/r.git",
                },
                "cwd": "/home/u/r",
                "originator": "codex_cli_rs",
                "cli_version": "0.20.0",
            },
            {"record_type": "state"},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<environment_context>\n<cwd>/home/u/r</cwd>\n"
                        "</environment_context>",
                    }
                ],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Create a README file"}],
            },
            {"record_type": "state"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "I'll create a README file for you."}],
            },
            {"type": "function_call", "name": "apply_patch", "arguments": "{}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": '{"success":true}'},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Created README.md."}],
            },
            {"record_type": "state"},
        ],
    )
    result = conn.parse(path)
    assert result.issues == []
    task = only_task(result)
    [t] = task.turns
    assert t.prompt == "Create a README file"
    assert t.outcome == "Created README.md."
    assert task.native_context["git"] == {
        "commit_hash": "abc123",
        "branch": "main",
        "repository_url": "git@github.com:o/r.git",
    }
    assert task.native_context["originator"] == "codex_cli_rs"
    # No `source` before Oct 2025: unknown, although Codex itself would default it to vscode.
    assert task.ownership.ownership == "unknown"
    assert task.ownership.reason == "codex:no-source"
    assert task.ownership.evidence == {"originator": "codex_cli_rs"}


def test_bare_items_last_turn_ending_in_tool_work_is_unfinished(home: Path, conn: CodexConnector):
    path = write(
        home / "sessions" / f"rollout-2025-05-07-{OLD_THREAD}.jsonl",
        [
            {"id": OLD_THREAD, "timestamp": "2025-05-07T17:24:21.123Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one"}]},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done one"}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "two"}]},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Let me check."}],
            },
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c2"},
        ],
    )
    task = only_task(conn.parse(path))
    assert [t.prompt for t in task.turns] == ["one"]
    assert task.unfinished_turn is True


def test_sep_2025_envelope_without_task_events_uses_implicit_turns(
    home: Path, conn: CodexConnector
):
    path = write(
        rollout_path(home),
        [
            meta(cli_version="0.40.0", source="cli", originator="codex_cli_rs"),
            user_item(ts(1), "<user_instructions>x</user_instructions>"),
            {
                "timestamp": ts(1),
                "type": "turn_context",
                "payload": {"cwd": "/home/u/proj", "model": "gpt-5"},
            },
            user_item(ts(1, 1), "first question"),
            event(ts(1, 1), "user_message", message="first question", images=[]),
            event(ts(1, 2), "agent_reasoning", text="thinking"),
            event(ts(1, 3), "agent_message", message="first answer"),
            assistant_item(ts(1, 3), "first answer"),
            event(ts(2), "user_message", message="interrupted question", images=[]),
            event(ts(2, 1), "agent_message", message="partial"),
            event(ts(2, 2), "turn_aborted", reason="interrupted"),
            event(ts(3), "user_message", message="second question", images=[]),
            event(ts(3, 2), "agent_message", message="second answer"),
            event(ts(3, 3), "token_count", info=None),
        ],
    )
    task = only_task(conn.parse(path))
    assert [(t.ordinal, t.prompt, t.outcome) for t in task.turns] == [
        (0, "first question", "first answer"),
        (1, "second question", "second answer"),
    ]
    assert task.turns[0].native_turn_id == "rollout-5"
    assert task.turns[1].native_turn_id == "rollout-12"
    # The last implicit turn has an answer and nothing after it: complete.
    assert task.unfinished_turn is False
    assert task.native_context["model"] == "gpt-5"


def test_context_user_message_events_of_late_2025_are_not_prompts(home: Path, conn: CodexConnector):
    # Sep–Oct 2025 builds emitted user_message events for injected context too, with `kind`.
    path = write(
        rollout_path(home),
        [
            meta(cli_version="0.42.0"),
            event(ts(1), "user_message", message="be terse", kind="user_instructions"),
            event(
                ts(1),
                "user_message",
                message="<environment_context>/x</environment_context>",
                kind="environment_context",
            ),
            event(ts(1, 1), "user_message", message="real question", kind="plain"),
            event(ts(1, 2), "agent_message", message="real answer"),
        ],
    )
    task = only_task(conn.parse(path))
    assert [(t.ordinal, t.prompt, t.outcome) for t in task.turns] == [
        (0, "real question", "real answer")
    ]


def test_implicit_last_turn_ending_in_commentary_is_unfinished(home: Path, conn: CodexConnector):
    path = write(
        rollout_path(home),
        [
            meta(),
            event(ts(1), "user_message", message="q1"),
            event(ts(1, 2), "agent_message", message="a1", phase="final_answer"),
            event(ts(2), "user_message", message="q2"),
            event(ts(2, 2), "agent_message", message="working on it", phase="commentary"),
        ],
    )
    task = only_task(conn.parse(path))
    assert [t.prompt for t in task.turns] == ["q1"]
    assert task.unfinished_turn is True


def test_user_message_prefix_is_stripped(home: Path, conn: CodexConnector):
    path = write(
        rollout_path(home),
        [
            meta(source="vscode", originator="codex_vscode"),
            *turn(tid(1), "## My request for Codex:\nrename foo to bar", "Renamed.", 1),
        ],
    )
    [t] = only_task(conn.parse(path)).turns
    assert t.prompt == "rename foo to bar"


def test_enveloped_rollout_without_user_message_events_falls_back_to_items(
    home: Path, conn: CodexConnector
):
    # Like hand-written samples that only carry response_items (yoavf/ai-sessions style).
    path = write(
        rollout_path(home),
        [
            meta(),
            user_item(ts(1), "<environment_context>\n<cwd>/x</cwd>\n</environment_context>"),
            user_item(ts(1, 1), "List files"),
            {"timestamp": ts(1, 2), "type": "turn_context", "payload": {"model": "gpt-4-turbo"}},
            item(
                ts(1, 3),
                {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"},
            ),
            item(ts(1, 4), {"type": "function_call_output", "call_id": "c", "output": "a\nb"}),
            assistant_item(ts(1, 5), "Two files: a and b."),
        ],
    )
    result = conn.parse(path)
    assert "prompts_from_response_items" in reasons(result)
    [t] = only_task(result).turns
    assert (t.prompt, t.outcome) == ("List files", "Two files: a and b.")


# =================================================================================================
# Explicit turns (notes §1.9)
# =================================================================================================


def test_unfinished_last_turn_is_not_returned(home: Path, conn: CodexConnector):
    path = write(
        rollout_path(home),
        [meta(), *turn(tid(1), "q1", "a1", 1), *turn(tid(2), "q2", None, 2, complete=False)],
    )
    task = only_task(conn.parse(path))
    assert [t.prompt for t in task.turns] == ["q1"]
    assert task.unfinished_turn is True


def test_aborted_turn_is_skipped_without_shifting_ordinals(home: Path, conn: CodexConnector):
    aborted = turn(tid(2), "q2", None, 2, complete=False)
    aborted.append(event(ts(2, 8), "turn_aborted", turn_id=tid(2), reason="interrupted"))
    path = write(
        rollout_path(home),
        [meta(), *turn(tid(1), "q1", "a1", 1), *aborted, *turn(tid(3), "q3", "a3", 3)],
    )
    task = only_task(conn.parse(path))
    assert [(t.ordinal, t.native_turn_id, t.prompt, t.outcome) for t in task.turns] == [
        (0, tid(1), "q1", "a1"),
        (1, tid(3), "q3", "a3"),
    ]
    assert task.unfinished_turn is False


def test_turn_superseded_by_a_new_task_started_is_not_complete(home: Path, conn: CodexConnector):
    # A crash mid-turn, then a resumed session starts a new turn in the same file.
    path = write(
        rollout_path(home),
        [
            meta(),
            *turn(tid(1), "q1", None, 1, complete=False),
            meta(at=ts(5)),  # resume repeats the thread's own session_meta
            *turn(tid(2), "q2", "a2", 6),
        ],
    )
    task = only_task(conn.parse(path))
    assert [(t.ordinal, t.prompt) for t in task.turns] == [(0, "q2")]
    assert task.unfinished_turn is False


def test_failed_turn_is_not_complete(home: Path, conn: CodexConnector):
    failed = turn(tid(1), "q1", None, 1, complete=False)
    failed.append(
        event(
            ts(1, 9),
            "task_complete",
            turn_id=tid(1),
            last_agent_message=None,
            error={"message": "quota"},
        )
    )
    path = write(rollout_path(home), [meta(), *failed, *turn(tid(2), "q2", "a2", 2)])
    assert [(t.ordinal, t.prompt) for t in only_task(conn.parse(path)).turns] == [(0, "q2")]


def test_final_answer_beats_commentary_when_last_agent_message_is_null(
    home: Path, conn: CodexConnector
):
    path = write(
        rollout_path(home),
        [meta(), *turn(tid(1), "q1", "the final answer", 1, last_agent_message=None)],
    )
    [t] = only_task(conn.parse(path)).turns
    assert t.outcome == "the final answer"


def test_phaseless_event_that_is_commentary_in_its_response_item_is_not_the_outcome(
    home: Path, conn: CodexConnector
):
    # 0.104 wrote `phase` only on the response_item, not on the agent_message event.
    path = write(
        rollout_path(home),
        [
            meta(),
            event(ts(1), "task_started", turn_id=tid(1)),
            event(ts(1, 1), "user_message", message="q"),
            event(ts(1, 2), "agent_message", message="Checking the files first."),
            assistant_item(ts(1, 2), "Checking the files first.", "commentary"),
            event(ts(1, 5), "agent_message", message="Here is the fix."),
            assistant_item(ts(1, 5), "Here is the fix.", "final_answer"),
            event(ts(1, 6), "agent_message", message="Checking the files first."),
            event(ts(1, 7), "task_complete", turn_id=tid(1), last_agent_message=None),
        ],
    )
    [t] = only_task(conn.parse(path)).turns
    assert t.outcome == "Here is the fix."


def test_turn_with_prompt_and_no_answer_text_is_complete_with_empty_outcome(
    home: Path, conn: CodexConnector
):
    path = write(
        rollout_path(home),
        [
            meta(),
            event(ts(1), "task_started", turn_id=tid(1)),
            event(ts(1, 1), "user_message", message="run the formatter"),
            item(
                ts(1, 2),
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": "{}",
                    "call_id": "c",
                },
            ),
            event(ts(1, 3), "task_complete", turn_id=tid(1), last_agent_message=None),
            # A turn without any prompt (e.g. a manual /compact) is not an Agent Turn.
            event(ts(2), "task_started", turn_id=tid(2)),
            {"timestamp": ts(2, 1), "type": "compacted", "payload": {"message": "summary"}},
            event(ts(2, 2), "context_compacted"),
            event(ts(2, 3), "task_complete", turn_id=tid(2), last_agent_message=None),
            *turn(tid(3), "q3", "a3", 3),
        ],
    )
    task = only_task(conn.parse(path))
    assert [(t.ordinal, t.prompt, t.outcome) for t in task.turns] == [
        (0, "run the formatter", ""),
        (1, "q3", "a3"),
    ]


def test_follow_up_messages_in_one_turn_are_joined(home: Path, conn: CodexConnector):
    path = write(
        rollout_path(home),
        [
            meta(),
            event(ts(1), "task_started", turn_id=tid(1)),
            event(ts(1, 1), "user_message", message="fix the test"),
            event(ts(1, 2), "user_message", message="", images=["data:image/png;base64,xx"]),
            event(ts(1, 3), "user_message", message="also the linter"),
            event(ts(1, 4), "task_complete", turn_id=tid(1), last_agent_message="Both fixed."),
        ],
    )
    [t] = only_task(conn.parse(path)).turns
    assert t.prompt == "fix the test\n\n[image]\n\nalso the linter"
    assert t.outcome == "Both fixed."


def test_paginated_history_uses_item_completed(home: Path, conn: CodexConnector):
    t1 = tid(1)
    path = write(
        rollout_path(home),
        [
            meta(history_mode="paginated"),
            event(ts(1), "task_started", turn_id=t1),
            {
                "timestamp": ts(1),
                "type": "turn_context",
                "payload": {"turn_id": t1, "model": "gpt-5.6"},
            },
            event(
                ts(1, 1),
                "item_completed",
                thread_id=THREAD,
                turn_id=t1,
                item={
                    "type": "UserMessage",
                    "id": "item-u1",
                    "content": [{"type": "text", "text": "summarise the PR", "text_elements": []}],
                },
            ),
            event(
                ts(1, 2),
                "item_completed",
                thread_id=THREAD,
                turn_id=t1,
                item={"type": "Reasoning", "id": "item-r1", "summary_text": ["..."]},
            ),
            event(
                ts(1, 3),
                "item_completed",
                thread_id=THREAD,
                turn_id=t1,
                item={
                    "type": "AgentMessage",
                    "id": "item-a1",
                    "content": [{"type": "Text", "text": "Reading the diff."}],
                    "phase": "commentary",
                },
            ),
            event(
                ts(1, 4),
                "item_completed",
                thread_id=THREAD,
                turn_id=t1,
                item={"type": "CommandExecution", "id": "item-c1", "command": "git diff"},
            ),
            event(
                ts(1, 5),
                "item_completed",
                thread_id=THREAD,
                turn_id=t1,
                item={
                    "type": "AgentMessage",
                    "id": "item-a2",
                    "content": [{"type": "Text", "text": "The PR adds retries."}],
                    "phase": "final_answer",
                },
            ),
            event(ts(1, 6), "task_complete", turn_id=t1, last_agent_message=None),
        ],
    )
    [t] = only_task(conn.parse(path)).turns
    assert t.prompt == "summarise the PR"
    assert t.outcome == "The PR adds retries."
    assert t.native_message_ids == ["item-u1", "item-a2"]


def test_paginated_items_do_not_duplicate_user_message_events(home: Path, conn: CodexConnector):
    t1 = tid(1)
    path = write(
        rollout_path(home),
        [
            meta(),
            event(ts(1), "task_started", turn_id=t1),
            event(
                ts(1, 1),
                "item_completed",
                turn_id=t1,
                item={
                    "type": "UserMessage",
                    "id": "u1",
                    "content": [{"type": "text", "text": "Run the graph"}],
                },
            ),
            event(ts(1, 1), "user_message", message="Run the graph"),
            event(ts(1, 2), "task_complete", turn_id=t1, last_agent_message="Done."),
        ],
    )
    [t] = only_task(conn.parse(path)).turns
    assert t.prompt == "Run the graph"


def test_thread_rolled_back_drops_the_last_turns(home: Path, conn: CodexConnector):
    path = write(
        rollout_path(home),
        [
            meta(),
            *turn(tid(1), "q1", "a1", 1),
            *turn(tid(2), "q2", "a2", 2),
            *turn(tid(3), "q3", "a3", 3),
            event(ts(4), "thread_rolled_back", num_turns=2),
            *turn(tid(5), "q5", "a5", 5),
        ],
    )
    task = only_task(conn.parse(path))
    assert [(t.ordinal, t.native_turn_id) for t in task.turns] == [(0, tid(1)), (1, tid(5))]


def test_rollback_counts_aborted_turns_like_codex(home: Path, conn: CodexConnector):
    aborted = turn(tid(2), "q2", None, 2, complete=False)
    aborted.append(event(ts(2, 9), "turn_aborted", turn_id=tid(2), reason="interrupted"))
    path = write(
        rollout_path(home),
        [
            meta(),
            *turn(tid(1), "q1", "a1", 1),
            *aborted,
            event(ts(3), "thread_rolled_back", num_turns=1),  # removes the aborted turn only
        ],
    )
    assert [t.prompt for t in only_task(conn.parse(path)).turns] == ["q1"]


# =================================================================================================
# Forks (notes §1.3)
# =================================================================================================

PARENT_MS = 0x019C7A101400  # 2026-02-20T08:00:00Z, before THREAD
PARENT = "019c7a10-1400-7000-8000-0000000000aa"


def test_fork_ignores_parent_meta_and_copied_turns(home: Path, conn: CodexConnector):
    parent_turn = tid(7, ms=PARENT_MS + 60_000)  # minted by the parent, before the fork
    copy_at = "2026-03-01T10:00:00.010Z"
    copied = [
        {**line, "timestamp": copy_at}  # a copy gets fresh line timestamps, all in one burst
        for line in [
            meta(PARENT, at="2026-02-20T08:00:00.000Z", source="cli"),
            *turn(parent_turn, "parent question", "parent answer", 1),
            event(ts(1, 8), "thread_name_updated", thread_id=PARENT, thread_name="Parent name"),
        ]
    ]
    path = write(
        rollout_path(home),
        [
            meta(forked_from_id=PARENT),
            *copied,
            # The fork's own first turn starts right away (no human pause): still its own,
            # because its v7 turn id is not older than the fork.
            *[
                {**line, "timestamp": copy_at}
                for line in turn(tid(1), "fork question", "fork answer", 1)
            ],
        ],
    )
    task = only_task(conn.parse(path))
    assert task.native_id == THREAD
    assert [(t.ordinal, t.prompt, t.outcome) for t in task.turns] == [
        (0, "fork question", "fork answer")
    ]
    assert task.title is None  # the parent's name event is not ours
    assert task.native_context["forked_from_id"] == PARENT
    assert task.started_at == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    # forked_from_id alone is not delegation
    assert task.ownership.ownership == "user_owned"


def test_fork_of_an_older_rollout_uses_the_copy_burst(home: Path, conn: CodexConnector):
    old_parent = "6a0f3c2e-1b7d-4c1e-9f00-000000000001"
    old_thread = "6a0f3c2e-1b7d-4c1e-9f00-000000000002"  # v4 ids: no time inside
    burst = "2025-11-03T09:00:00.{:03d}Z"
    lines = [
        meta(old_thread, at="2025-11-03T09:00:00.000Z", forked_from_id=old_parent),
        {**meta(old_parent, at="2025-11-01T08:00:00.000Z"), "timestamp": burst.format(1)},
        {**event("", "user_message", message="parent q1"), "timestamp": burst.format(2)},
        {**event("", "agent_message", message="parent a1"), "timestamp": burst.format(3)},
        {**event("", "user_message", message="parent q2"), "timestamp": burst.format(4)},
        {**event("", "agent_message", message="parent a2"), "timestamp": burst.format(5)},
        # the user edits the forked prompt, then sends it: seconds later
        event("2025-11-03T09:00:21.000Z", "user_message", message="fork q"),
        event("2025-11-03T09:00:25.000Z", "agent_message", message="fork a"),
    ]
    path = write(rollout_path(home, old_thread), lines)
    task = only_task(conn.parse(path))
    assert [(t.ordinal, t.prompt, t.outcome) for t in task.turns] == [(0, "fork q", "fork a")]


def test_fork_turn_with_non_v7_id_uses_started_at_seconds(home: Path, conn: CodexConnector):
    # Turn ids that carry no time: task_started.started_at (unix seconds) decides. The own turn
    # starts in the same second the fork was created (10:00:00.500), yet it is the fork's.
    fork_at = "2026-03-01T10:00:00.500Z"
    copy_at = "2026-03-01T10:00:00.510Z"
    parent_started = int(datetime(2026, 2, 20, 8, 1, tzinfo=UTC).timestamp())
    own_started = int(datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC).timestamp())
    path = write(
        rollout_path(home),
        [
            meta(at=fork_at, forked_from_id=PARENT),
            {**meta(PARENT, at="2026-02-20T08:00:00.000Z"), "timestamp": copy_at},
            event(copy_at, "task_started", turn_id="turn-a", started_at=parent_started),
            event(copy_at, "user_message", message="parent q"),
            event(copy_at, "task_complete", turn_id="turn-a", last_agent_message="parent a"),
            event(copy_at, "task_started", turn_id="turn-b", started_at=own_started),
            event(copy_at, "user_message", message="own q"),
            event(
                "2026-03-01T10:00:09.000Z",
                "task_complete",
                turn_id="turn-b",
                last_agent_message="own a",
            ),
        ],
    )
    task = only_task(conn.parse(path))
    assert [(t.native_turn_id, t.prompt, t.outcome) for t in task.turns] == [
        ("turn-b", "own q", "own a")
    ]


def test_subagent_history_start_ordinal_skips_inherited_lines(home: Path, conn: CodexConnector):
    def at(n: int, line: dict[str, Any]) -> dict[str, Any]:
        return {**line, "ordinal": n}

    path = write(
        rollout_path(home),
        [
            at(
                0,
                meta(
                    source={"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1}}},
                    thread_source="subagent",
                    parent_thread_id=PARENT,
                    subagent_history_start_ordinal=3,
                ),
            ),
            at(1, event(ts(0, 1), "user_message", message="parent context")),
            at(2, event(ts(0, 1), "agent_message", message="parent reply")),
            at(3, event(ts(1), "task_started", turn_id=tid(1))),
            at(4, event(ts(1, 1), "user_message", message="review module x")),
            at(5, event(ts(1, 2), "task_complete", turn_id=tid(1), last_agent_message="x is fine")),
        ],
    )
    task = only_task(conn.parse(path))
    assert [(t.prompt, t.outcome) for t in task.turns] == [("review module x", "x is fine")]
    assert task.ownership.ownership == "delegated"
    assert task.ownership.reason == "codex:subagent:thread_spawn"


# =================================================================================================
# Naming (notes §1.1, §1.6, §1.8)
# =================================================================================================


def make_state_db(home: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    db = sqlite3.connect(home / "state_5.sqlite")
    db.execute(f"CREATE TABLE threads ({', '.join(columns)})")
    for row in rows:
        keys = list(row)
        db.execute(
            f"INSERT INTO threads ({', '.join(keys)}) VALUES ({', '.join('?' for _ in keys)})",
            [row[k] for k in keys],
        )
    db.commit()
    db.close()


def write_index(home: Path, lines: list[Any]) -> None:
    with open(home / "session_index.jsonl", "wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else json.dumps(line).encode())
            fh.write(b"\n")


def named_rollout(home: Path) -> Path:
    return write(
        rollout_path(home),
        [
            meta(),
            *turn(tid(1), "first prompt of the thread", "ok", 1),
            event(ts(2), "thread_name_updated", thread_id=THREAD, thread_name="Old event name"),
            event(ts(3), "thread_name_updated", thread_id=THREAD, thread_name="Event name"),
        ],
    )


def test_name_from_latest_thread_name_updated_event(home: Path, conn: CodexConnector):
    title = only_task(conn.parse(named_rollout(home))).title
    assert title is not None
    assert (title.text, title.source) == ("Event name", "codex:thread_name_updated")
    assert title.observed_at == datetime(2026, 3, 1, 10, 3, tzinfo=UTC)


def test_no_native_name_gives_no_title(home: Path, conn: CodexConnector):
    path = write(rollout_path(home), [meta(), *turn(tid(1), "q", "a", 1)])
    assert only_task(conn.parse(path)).title is None


def test_session_index_last_valid_entry_wins(home: Path, conn: CodexConnector):
    path = named_rollout(home)
    write_index(
        home,
        [
            {"id": THREAD, "thread_name": "First name", "updated_at": "2026-03-01T11:00:00Z"},
            {"id": "019ca8d7-2d00-7000-8000-0000000000ff", "thread_name": "Other thread"},
            {"id": THREAD, "thread_name": "Renamed", "updated_at": "2026-03-02T09:30:00Z"},
            b'{"id": "' + THREAD.encode() + b'", "thread_name": 42}',  # malformed: skipped
            b"{not json",
        ],
    )
    title = only_task(conn.parse(path)).title
    assert title is not None
    assert (title.text, title.source) == ("Renamed", "codex:session_index")
    assert title.observed_at == datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
    # A later rename is picked up by the same connector instance (cache keyed on the file).
    with open(home / "session_index.jsonl", "ab") as fh:
        fh.write(
            json.dumps(
                {"id": THREAD, "thread_name": "Renamed again", "updated_at": "2026-03-03T00:00:00Z"}
            ).encode()
            + b"\n"
        )
    title = only_task(conn.parse(path)).title
    assert title is not None and title.text == "Renamed again"


def test_threads_name_beats_session_index(home: Path, conn: CodexConnector):
    path = named_rollout(home)
    write_index(
        home, [{"id": THREAD, "thread_name": "Index name", "updated_at": "2026-03-02T00:00:00Z"}]
    )
    make_state_db(
        home,
        [
            {
                "id": THREAD,
                "name": "DB name",
                "title": "first prompt of the thread",
                "updated_at": 1772400000,
                "updated_at_ms": 1772400000123,
            }
        ],
        [
            "id TEXT PRIMARY KEY",
            "name TEXT",
            "title TEXT",
            "updated_at INTEGER",
            "updated_at_ms INTEGER",
        ],
    )
    result = conn.parse(path)
    assert result.issues == []
    title = only_task(result).title
    assert title is not None
    assert (title.text, title.source) == ("DB name", "codex:threads.name")
    assert title.observed_at == datetime.fromtimestamp(1772400000.123, tz=UTC)


def test_legacy_threads_title_beats_event_but_not_when_it_is_the_first_prompt(
    home: Path, conn: CodexConnector
):
    path = named_rollout(home)
    # An older schema: no `name`, no `updated_at_ms`.
    make_state_db(
        home,
        [{"id": THREAD, "title": "Title via /rename", "updated_at": 1772400000}],
        ["id TEXT PRIMARY KEY", "title TEXT", "updated_at INTEGER"],
    )
    title = only_task(conn.parse(path)).title
    assert title is not None
    assert (title.text, title.source) == ("Title via /rename", "codex:threads.title")
    assert title.observed_at == datetime.fromtimestamp(1772400000, tz=UTC)

    (home / "state_5.sqlite").unlink()
    make_state_db(
        home,
        [{"id": THREAD, "title": "first prompt of the thread", "updated_at": 1772400000}],
        ["id TEXT PRIMARY KEY", "title TEXT", "updated_at INTEGER"],
    )
    title = only_task(conn.parse(path)).title
    assert title is not None and title.source == "codex:thread_name_updated"


def test_state_db_without_threads_table_or_corrupt_falls_back(home: Path, conn: CodexConnector):
    path = named_rollout(home)
    db = sqlite3.connect(home / "state_5.sqlite")
    db.execute("CREATE TABLE other (x)")
    db.commit()
    db.close()
    result = conn.parse(path)
    assert result.issues == []
    assert only_task(result).title.source == "codex:thread_name_updated"  # type: ignore[union-attr]

    (home / "state_5.sqlite").write_bytes(b"this is not a sqlite database" * 100)
    result = conn.parse(path)
    assert reasons(result) == ["state_db_unreadable"]
    assert only_task(result).title.source == "codex:thread_name_updated"  # type: ignore[union-attr]


# =================================================================================================
# Ownership (notes §1.4)
# =================================================================================================

OWNERSHIP_CASES = [
    # 1. spawned by an agent
    (
        {
            "source": {
                "subagent": {
                    "thread_spawn": {
                        "parent_thread_id": PARENT,
                        "depth": 1,
                        "agent_nickname": "Avicenna",
                    }
                }
            }
        },
        "delegated",
        "codex:subagent:thread_spawn",
    ),
    ({"source": {"subagent": "review"}}, "delegated", "codex:subagent:review"),
    ({"source": {"subagent": "compact"}}, "delegated", "codex:subagent:compact"),
    ({"source": {"subagent": {"other": "guardian"}}}, "delegated", "codex:subagent:other"),
    (
        {"source": {"internal": "memory_consolidation"}},
        "delegated",
        "codex:internal:memory_consolidation",
    ),
    (
        {"source": "vscode", "originator": "Codex Desktop", "thread_source": "subagent"},
        "delegated",
        "codex:thread_source:subagent",
    ),
    (
        {"source": "cli", "thread_source": "memory_consolidation"},
        "delegated",
        "codex:thread_source:memory_consolidation",
    ),
    ({"source": "cli", "agent_nickname": "Carson"}, "delegated", "codex:agent_identity"),
    ({"source": "cli", "agent_path": "/root/review"}, "delegated", "codex:agent_identity"),
    # 2. automated / non-interactive
    ({"source": "exec", "originator": "codex_exec"}, "delegated", "codex:exec"),
    ({"source": "cli", "originator": "codex_exec"}, "delegated", "codex:exec"),
    ({"source": "mcp", "originator": "codex_cli_rs"}, "delegated", "codex:mcp"),
    # 3. user-owned
    (
        {"source": "cli", "originator": "codex-tui", "thread_source": "user"},
        "user_owned",
        "codex:interactive-cli",
    ),
    ({"source": "vscode", "originator": "codex_vscode"}, "user_owned", "codex:first-party-ide"),
    ({"source": "vscode", "originator": "Codex Desktop"}, "user_owned", "codex:first-party-ide"),
    ({"source": "vscode", "originator": "codex_cli_rs"}, "user_owned", "codex:first-party-ide"),
    ({"source": {"custom": "atlas"}}, "user_owned", "codex:custom:atlas"),
    ({"source": {"custom": "chatgpt"}}, "user_owned", "codex:custom:chatgpt"),
    # 4. unknown
    ({"source": None, "originator": "codex_cli_rs"}, "unknown", "codex:no-source"),
    ({"source": "unknown"}, "unknown", "codex:unknown-source"),
    ({"source": "some-future-client"}, "unknown", "codex:unknown-source"),
    ({"source": "vscode", "originator": "my-orchestrator"}, "unknown", "codex:third-party-client"),
    ({"source": {"custom": "ci-bot"}}, "unknown", "codex:custom-unknown"),
]


@pytest.mark.parametrize(("fields", "ownership", "reason"), OWNERSHIP_CASES)
def test_ownership_matrix(home: Path, conn: CodexConnector, fields, ownership, reason):
    base = {"originator": None}
    payload_fields = {**base, **fields}
    line = meta(**payload_fields)
    line["payload"] = {k: v for k, v in line["payload"].items() if v is not None}
    path = write(rollout_path(home), [line, *turn(tid(1), "q", "a", 1)])
    verdict = only_task(conn.parse(path)).ownership
    assert (verdict.ownership, verdict.reason) == (ownership, reason)
    assert verdict.evidence == {k: v for k, v in payload_fields.items() if v is not None}


def test_delegation_wins_over_user_markers(home: Path, conn: CodexConnector):
    line = meta(source="cli", originator="codex-tui", thread_source="user", parent_thread_id=PARENT)
    path = write(rollout_path(home), [line, *turn(tid(1), "q", "a", 1)])
    verdict = only_task(conn.parse(path)).ownership
    assert verdict.ownership == "delegated"
    assert verdict.reason == "codex:parent_thread"
    assert verdict.evidence["parent_thread_id"] == PARENT
    assert verdict.evidence["source"] == "cli"


def test_account_identifiers_never_reach_task(home: Path, conn: CodexConnector):
    line = meta(
        creator_user_id="user-123", creator_account_id="acct-456", base_instructions={"text": "sys"}
    )
    path = write(rollout_path(home), [line, *turn(tid(1), "q", "a", 1)])
    dumped = only_task(conn.parse(path)).model_dump_json()
    assert "user-123" not in dumped and "acct-456" not in dumped


# =================================================================================================
# Discovery
# =================================================================================================


def test_discover_finds_live_archived_flat_and_compressed_rollouts(
    home: Path, conn: CodexConnector
):
    live = write(rollout_path(home), [meta()])
    archived = write(rollout_path(home, sub="archived_sessions"), [meta()])
    flat = write(
        home / "sessions" / f"rollout-2025-05-07-{OLD_THREAD}.jsonl",
        [{"id": OLD_THREAD, "timestamp": T0}],
    )
    zst = (
        home / "sessions" / "2026" / "02" / "01" / f"rollout-2026-02-01T00-00-00-{PARENT}.jsonl.zst"
    )
    zst.parent.mkdir(parents=True)
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 16)
    write(home / "session_index.jsonl", [])
    write(home / "sessions" / "notes.jsonl", [])
    write(home / "history.jsonl", [])
    assert conn.discover() == sorted([live, archived, flat, zst])

    result = conn.parse(zst)
    assert result.tasks == []
    assert reasons(result) == ["compressed_unsupported"]
    assert conn.task_days(zst) == set()

    assert only_task(conn.parse(archived)).native_context["archived"] is True
    assert only_task(conn.parse(live)).native_context["archived"] is False


def test_discover_without_session_dirs_is_empty(tmp_path: Path):
    assert CodexConnector(tmp_path / "missing").discover() == []


def test_fixture_copies_are_discovered_in_a_codex_home(home: Path, conn: CodexConnector):
    target = home / "sessions" / "2026" / "02" / "23" / LOCALPUSH.name
    target.parent.mkdir(parents=True)
    shutil.copy(LOCALPUSH, target)
    assert conn.discover() == [target]
    assert conn.task_days(target) == {date(2026, 2, 23)}


# =================================================================================================
# Bad input: every problem is a ParseIssue, the rest of the file is used
# =================================================================================================


def test_truncated_last_line_keeps_earlier_turns(home: Path, conn: CodexConnector):
    path = write(
        rollout_path(home),
        [meta(), *turn(tid(1), "q1", "a1", 1)],
        raw_tail=b'{"timestamp":"2026-03-01T10:02:00.000Z","type":"event_msg","payload":{"type":"task_sta',
    )
    result = conn.parse(path)
    assert reasons(result) == ["truncated_line"]
    task = only_task(result)
    assert [t.prompt for t in task.turns] == ["q1"]


def test_invalid_json_line_is_skipped(home: Path, conn: CodexConnector):
    lines: list[Any] = [meta(), *turn(tid(1), "q1", "a1", 1)]
    lines.insert(3, b"{this is not json}")
    path = write(rollout_path(home), lines)
    result = conn.parse(path)
    assert [(i.reason, i.line) for i in result.issues] == [("invalid_json", 4)]
    assert [t.outcome for t in only_task(result).turns] == ["a1"]


def test_unknown_record_types_are_ignored_and_reported_once(home: Path, conn: CodexConnector):
    lines: list[Any] = [meta(), *turn(tid(1), "q1", "a1", 1)]
    lines.insert(2, {"timestamp": ts(1), "type": "future_record", "payload": {"x": 1}})
    lines.insert(5, {"timestamp": ts(1), "type": "future_record", "payload": {"x": 2}})
    lines.insert(6, event(ts(1), "some_new_event", foo="bar"))  # unknown events: silent
    lines.insert(7, item(ts(1), {"type": "some_new_item", "foo": "bar"}))
    lines.insert(
        8, {"timestamp": ts(1), "type": "world_state", "payload": {"full": True, "state": {}}}
    )
    path = write(rollout_path(home), lines)
    result = conn.parse(path)
    assert [(i.reason, i.line) for i in result.issues] == [("unknown_record", 3)]
    assert "2 lines" in result.issues[0].detail
    assert [t.outcome for t in only_task(result).turns] == ["a1"]


def test_empty_file(home: Path, conn: CodexConnector):
    path = rollout_path(home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    result = conn.parse(path)
    assert result.tasks == []
    assert reasons(result) == ["empty_file"]
    assert conn.task_days(path) == {date(2026, 3, 1)}  # falls back to the v7 id's time


def test_binary_garbage(home: Path, conn: CodexConnector):
    path = rollout_path(home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\n\xde\xad\xbe\xef\n")
    result = conn.parse(path)
    assert result.tasks == []
    assert "binary" in reasons(result)
    assert "not_a_transcript" in reasons(result)


def test_binary_garbage_inside_a_rollout_is_one_skipped_line(home: Path, conn: CodexConnector):
    lines: list[Any] = [meta(), *turn(tid(1), "q1", "a1", 1)]
    lines.insert(2, b"\xff\xfe\x00garbage\xc3\x28")
    result = conn.parse(write(rollout_path(home), lines))
    assert reasons(result) == ["binary"]
    assert [t.prompt for t in only_task(result).turns] == ["q1"]


def test_json_that_is_not_a_rollout(home: Path, conn: CodexConnector):
    path = write(rollout_path(home), [{"hello": "world"}, {"foo": 1}])
    result = conn.parse(path)
    assert result.tasks == []
    assert "not_a_transcript" in reasons(result)


def test_rollout_without_session_meta_still_yields_its_turns(home: Path, conn: CodexConnector):
    path = write(rollout_path(home), [*turn(tid(1), "q1", "a1", 1)])
    result = conn.parse(path)
    assert reasons(result) == ["missing_session_meta"]
    task = only_task(result)
    assert task.native_id == THREAD
    assert task.ownership.ownership == "unknown"
    assert task.ownership.reason == "codex:no-session-meta"
    assert task.started_at == datetime(2026, 3, 1, 10, 1, tzinfo=UTC)
    assert conn.task_days(path) == {date(2026, 3, 1)}


def test_append_between_parses_adds_turns_with_stable_ordinals(home: Path, conn: CodexConnector):
    path = rollout_path(home)
    first_part = [
        meta(),
        *turn(tid(1), "q1", "a1", 1),
        *turn(tid(2), "q2", None, 2, complete=False),
    ]
    write(path, first_part, raw_tail=b'{"timestamp":"2026-03-01T10:02:06.000Z","type":"event_')
    before = only_task(conn.parse(path))
    assert [t.native_turn_id for t in before.turns] == [tid(1)]
    assert before.unfinished_turn is True

    rest = [
        event(ts(2, 6), "agent_message", message="a2", phase="final_answer"),
        event(ts(2, 7), "task_complete", turn_id=tid(2), last_agent_message="a2"),
        *turn(tid(3), "q3", "a3", 3),
    ]
    with open(path, "r+b") as fh:  # the writer finishes its half-written line, then appends
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(size - len(b'{"timestamp":"2026-03-01T10:02:06.000Z","type":"event_'))
        fh.truncate()
        for line in rest:
            fh.write(json.dumps(line).encode() + b"\n")
    after = only_task(conn.parse(path))
    assert [(t.ordinal, t.native_turn_id, t.prompt, t.outcome) for t in after.turns] == [
        (0, tid(1), "q1", "a1"),
        (1, tid(2), "q2", "a2"),
        (2, tid(3), "q3", "a3"),
    ]
    assert after.turns[0] == before.turns[0]
    assert after.unfinished_turn is False
    assert after.started_at == before.started_at


def test_unreadable_path_is_an_issue(tmp_path: Path):
    conn = CodexConnector(tmp_path)
    result = conn.parse(tmp_path / "sessions" / f"rollout-2026-03-01T11-00-00-{THREAD}.jsonl")
    assert result.tasks == []
    assert reasons(result) == ["unreadable"]
