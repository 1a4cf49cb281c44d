"""`hooks install|uninstall kiro`: Kiro CLI's agent file (flat trigger lists), created as a
complete agent or merged into one, idempotent and exactly undone; the hook command reads Kiro's
payload, answers in plain text, and fails open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline_tests.support.hook_runs import cli, runs_without_memory
from serving.hooks import payload
from serving.hooks.agents import kiro

# What Kiro CLI writes on the hook's stdin (chat/cli/hooks.rs `run_hook`).
SPAWN = {"hook_event_name": "agentSpawn", "cwd": "/home/u/kestrel"}
PROMPT = {"hook_event_name": "userPromptSubmit", "cwd": "/home/u/kestrel", "prompt": "why LRU?"}
USER_AGENT = {
    "name": "memory-pipeline",
    "description": "mine",
    "tools": ["fs_read", "execute_bash"],
    "hooks": {
        "agentSpawn": [{"command": "git status --short", "timeout_ms": 5000}],
        "preToolUse": [{"matcher": "execute_bash", "command": "audit.sh"}],
    },
}


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIRO_HOME", str(tmp_path / "kiro"))
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "mem"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def agent_file(homes: Path) -> Path:
    return homes / "kiro" / "agents" / "memory-pipeline.json"


def test_install_creates_a_complete_agent_and_uninstall_removes_it(homes: Path) -> None:
    out = cli("hooks", "install", "kiro")
    assert "chat.defaultAgent memory-pipeline" in out
    data = json.loads(agent_file(homes).read_text())
    assert data["name"] == "memory-pipeline" and data["tools"] == ["*"]
    # Kiro's agent schema refuses unknown fields: only the default agent's own ones are written
    assert set(data) <= {
        "$schema", "name", "description", "prompt", "mcpServers", "tools", "toolAliases",
        "allowedTools", "resources", "hooks", "toolsSettings", "useLegacyMcpJson", "model",
    }  # fmt: skip
    assert [h["command"].split()[-2:] for h in data["hooks"]["agentSpawn"]] == [
        ["hook", "session-start"]
    ]
    assert [h["command"].split()[-2:] for h in data["hooks"]["userPromptSubmit"]] == [
        ["hook", "prompt"]
    ]
    assert data["hooks"]["agentSpawn"][0]["timeout_ms"] == 10_000
    before = agent_file(homes).read_bytes()
    assert "nothing to install" in cli("hooks", "install", "kiro")
    assert agent_file(homes).read_bytes() == before
    cli("hooks", "uninstall", "kiro")
    assert not agent_file(homes).exists()


def test_install_merges_into_an_existing_agent_and_uninstall_restores_its_bytes(
    homes: Path,
) -> None:
    path = agent_file(homes)
    path.parent.mkdir(parents=True)
    original = json.dumps(USER_AGENT, indent=4).encode()
    path.write_bytes(original)
    cli("hooks", "install", "kiro")
    data = json.loads(path.read_text())
    assert data["description"] == "mine" and data["tools"] == USER_AGENT["tools"]
    assert data["hooks"]["preToolUse"] == USER_AGENT["hooks"]["preToolUse"]
    spawn = data["hooks"]["agentSpawn"]
    assert spawn[0] == USER_AGENT["hooks"]["agentSpawn"][0] and len(spawn) == 2
    cli("hooks", "uninstall", "kiro")
    assert path.read_bytes() == original


def test_uninstall_after_the_user_changed_the_agent_keeps_their_change(homes: Path) -> None:
    path = agent_file(homes)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(USER_AGENT))
    cli("hooks", "install", "kiro")
    data = json.loads(path.read_text())
    data["model"] = "claude-opus-4.6"
    path.write_text(json.dumps(data))
    cli("hooks", "uninstall", "kiro")
    after = json.loads(path.read_text())
    assert after["model"] == "claude-opus-4.6"
    assert after["hooks"] == USER_AGENT["hooks"]


def test_a_trigger_of_the_wrong_shape_is_refused_untouched(homes: Path) -> None:
    path = agent_file(homes)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"name": "memory-pipeline", "hooks": {"agentSpawn": "oops"}}))
    before = path.read_bytes()
    result = CliRunner().invoke(app, ["hooks", "install", "kiro"])
    assert result.exit_code != 0
    assert "hooks.agentSpawn is a string, expected a list of handlers" in str(result.exception)
    assert path.read_bytes() == before


def test_project_scope_and_no_local_scope(homes: Path) -> None:
    cli("hooks", "install", "kiro", "--scope", "project")
    assert (homes / ".kiro" / "agents" / "memory-pipeline.json").exists()
    result = CliRunner().invoke(app, ["hooks", "install", "kiro", "--scope", "local"])
    assert result.exit_code != 0 and "no local scope" in str(result.exception)


def test_kiro_payloads_map_to_our_events_and_answer_in_plain_text() -> None:
    spawn = payload.parse(json.dumps(SPAWN), payload.SESSION_START)
    prompt = payload.parse(json.dumps(PROMPT), payload.USER_PROMPT_SUBMIT)
    assert (spawn.event, spawn.form, spawn.cwd) == ("SessionStart", "plain", "/home/u/kestrel")
    assert (prompt.event, prompt.prompt, prompt.form) == ("UserPromptSubmit", "why LRU?", "plain")
    assert payload.output(prompt.event, "memory: LRU", prompt.form) == "memory: LRU\n"
    claude = payload.parse(json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "x"}), "")
    assert claude.form == "json" and json.loads(payload.output(claude.event, "t", claude.form))


def test_the_hook_fails_open_for_kiro(tmp_path: Path) -> None:
    """No memory database at all: Kiro gets nothing on stdout, exit 0, within the deadline."""
    for result in runs_without_memory(tmp_path, [("session-start", SPAWN), ("prompt", PROMPT)]):
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_entries_are_kiro_hooks() -> None:
    groups = kiro.entries(
        lambda arg: {"type": "command", "command": f"mp hook {arg}", "timeout": 10}
    )
    assert groups == {
        "agentSpawn": {"hooks": [{"command": "mp hook session-start", "timeout_ms": 10000}]},
        "userPromptSubmit": {"hooks": [{"command": "mp hook prompt", "timeout_ms": 10000}]},
    }
