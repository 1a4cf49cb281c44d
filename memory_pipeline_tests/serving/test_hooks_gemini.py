"""`hooks install|uninstall gemini`: Gemini CLI's settings.json (matcher groups, timeouts in
milliseconds, GEMINI_CLI_HOME), merged into what is there, idempotent and exactly undone; its
payloads map to our events, the answer names Gemini's event, and the hook fails open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline_tests.support.hook_runs import cli, runs_without_memory
from serving.hooks import payload
from serving.hooks.agents import gemini

# What Gemini CLI writes on a hook's stdin (hooks/types.ts HookInput, docs/hooks/reference.md).
BASE = {
    "session_id": "3f9c1a2b-5d4e-4f60-8a71-92b3c4d5e6f7",
    "transcript_path": "/home/u/.gemini/tmp/ledger/chats/session-2026-10-12T08-05-3f9c1a2b.jsonl",
    "cwd": "/home/u/ledger",
    "timestamp": "2026-10-12T08:05:02.114Z",
}
START = {**BASE, "hook_event_name": "SessionStart", "source": "startup"}
PROMPT = {**BASE, "hook_event_name": "BeforeAgent", "prompt": "why -0.00?"}
# A user's settings, with a hook of their own on an event we also use.
USER_SETTINGS = {
    "theme": "GitHub",
    "mcpServers": {"fs": {"command": "npx", "args": ["fs-mcp"]}},
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "git status"}]}
        ],
        "BeforeTool": [
            {"matcher": "write_file", "hooks": [{"type": "command", "command": "a.sh"}]}
        ],
    },
}


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "mem"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def settings_file(homes: Path) -> Path:
    return homes / "ghome" / ".gemini" / "settings.json"


def test_install_writes_gemini_hooks_under_gemini_cli_home(homes: Path) -> None:
    cli("hooks", "install", "gemini")
    data = json.loads(settings_file(homes).read_text())
    (start,) = data["hooks"]["SessionStart"]
    (prompt,) = data["hooks"]["BeforeAgent"]
    assert start["matcher"] == "*" and "matcher" not in prompt
    (handler,) = start["hooks"]
    assert handler["type"] == "command" and handler["timeout"] == 10_000  # milliseconds
    assert handler["command"].split()[-2:] == ["hook", "session-start"]
    assert prompt["hooks"][0]["command"].split()[-2:] == ["hook", "prompt"]
    assert prompt["hooks"][0]["name"] == "memory-pipeline-prompt"
    before = settings_file(homes).read_bytes()
    assert "nothing to install" in cli("hooks", "install", "gemini")
    assert settings_file(homes).read_bytes() == before
    cli("hooks", "uninstall", "gemini")
    assert not settings_file(homes).exists()


def test_install_merges_and_uninstall_restores_the_users_bytes(homes: Path) -> None:
    path = settings_file(homes)
    path.parent.mkdir(parents=True)
    original = json.dumps(USER_SETTINGS, indent=2).encode()
    path.write_bytes(original)
    cli("hooks", "install", "gemini")
    data = json.loads(path.read_text())
    assert data["theme"] == "GitHub" and data["mcpServers"] == USER_SETTINGS["mcpServers"]
    assert data["hooks"]["BeforeTool"] == USER_SETTINGS["hooks"]["BeforeTool"]
    assert data["hooks"]["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    assert len(data["hooks"]["SessionStart"]) == 2
    cli("hooks", "uninstall", "gemini")
    assert path.read_bytes() == original


def test_uninstall_after_the_user_changed_settings_keeps_their_change(homes: Path) -> None:
    path = settings_file(homes)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(USER_SETTINGS))
    cli("hooks", "install", "gemini")
    data = json.loads(path.read_text())
    data["theme"] = "Dracula"
    path.write_text(json.dumps(data))
    cli("hooks", "uninstall", "gemini")
    after = json.loads(path.read_text())
    assert after["theme"] == "Dracula" and after["hooks"] == USER_SETTINGS["hooks"]


def test_an_event_of_the_wrong_shape_is_refused_untouched(homes: Path) -> None:
    path = settings_file(homes)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"hooks": {"BeforeAgent": {"hooks": []}}}))
    before = path.read_bytes()
    result = CliRunner().invoke(app, ["hooks", "install", "gemini"])
    assert result.exit_code != 0 and "hooks.BeforeAgent" in str(result.exception)
    assert path.read_bytes() == before


def test_project_scope_and_no_local_scope(homes: Path) -> None:
    cli("hooks", "install", "gemini", "--scope", "project")
    assert "BeforeAgent" in json.loads((homes / ".gemini" / "settings.json").read_text())["hooks"]
    result = CliRunner().invoke(app, ["hooks", "install", "gemini", "--scope", "local"])
    assert result.exit_code != 0 and "no local scope" in str(result.exception)


def test_gemini_payloads_map_to_our_events_and_the_answer_names_gemini_events() -> None:
    start = payload.parse(json.dumps(START), payload.SESSION_START)
    prompt = payload.parse(json.dumps(PROMPT), payload.USER_PROMPT_SUBMIT)
    assert (start.event, start.source, start.cwd) == ("SessionStart", "startup", "/home/u/ledger")
    assert start.session_id == BASE["session_id"]
    assert (prompt.event, prompt.prompt, prompt.form) == (
        "UserPromptSubmit",
        "why -0.00?",
        "gemini",
    )
    # a BeforeAgent hook installed as the prompt command still answers as BeforeAgent
    assert json.loads(payload.output(prompt.event, "memory: Decimal", prompt.form)) == {
        "hookSpecificOutput": {
            "hookEventName": "BeforeAgent",
            "additionalContext": "memory: Decimal",
        }
    }
    assert json.loads(payload.output(start.event, "m", start.form))["hookSpecificOutput"] == {
        "hookEventName": "SessionStart",
        "additionalContext": "m",
    }


def test_the_hook_fails_open_for_gemini(tmp_path: Path) -> None:
    """No memory database at all: Gemini gets nothing on stdout or stderr (it would read stderr
    as a message when stdout is empty), exit 0 (2 would block the prompt)."""
    for result in runs_without_memory(tmp_path, [("session-start", START), ("prompt", PROMPT)]):
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_entries_are_gemini_hooks() -> None:
    groups = gemini.entries(
        lambda arg: {"type": "command", "command": f"mp hook {arg}", "timeout": 10}
    )
    assert groups == {
        "SessionStart": {
            "matcher": "*",
            "hooks": [
                {"type": "command", "command": "mp hook session-start",
                 "name": "memory-pipeline-session-start", "timeout": 10000}
            ],
        },
        "BeforeAgent": {
            "hooks": [
                {"type": "command", "command": "mp hook prompt",
                 "name": "memory-pipeline-prompt", "timeout": 10000}
            ]
        },
    }  # fmt: skip
