"""`memory-pipeline hooks install|uninstall` on temporary settings files: merged into what is
there, idempotent, the old file backed up, a dry run writes nothing, and uninstall removes
exactly what install added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date.sh"}]}],
    },
}


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "mem home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def ours(data: dict) -> list[str]:  # type: ignore[type-arg]
    return [
        h["command"]
        for groups in data.get("hooks", {}).values()
        for g in groups
        for h in g["hooks"]
        if " hook " in h["command"]
    ]


def test_install_merges_backs_up_is_idempotent_and_uninstall_restores(homes: Path) -> None:
    path = homes / "claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(EXISTING, indent=1))

    cli("hooks", "install", "claude-code")
    data = json.loads(path.read_text())
    assert data["model"] == "opus" and data["permissions"] == EXISTING["permissions"]
    assert data["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    assert data["hooks"]["UserPromptSubmit"][0] == EXISTING["hooks"]["UserPromptSubmit"][0]
    start = data["hooks"]["SessionStart"][0]
    assert start["matcher"] == "startup|resume|clear|compact"
    assert start["hooks"][0]["type"] == "command" and start["hooks"][0]["timeout"] == 10
    assert start["hooks"][0]["command"].endswith("memory-pipeline hook session-start")
    assert start["hooks"][0]["command"].startswith(f"MEMORY_HOME='{homes / 'mem home'}' ")
    prompt = data["hooks"]["UserPromptSubmit"][1]
    assert "matcher" not in prompt and prompt["hooks"][0]["command"].endswith("hook prompt")
    backups = list(path.parent.glob("settings.json.bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == EXISTING

    installed = path.read_text()
    result = cli("hooks", "install", "claude-code")
    assert "already installed" in result.output
    assert path.read_text() == installed
    assert len(list(path.parent.glob("settings.json.bak-*"))) == 1

    cli("hooks", "uninstall", "claude-code")
    assert json.loads(path.read_text()) == EXISTING
    result = cli("hooks", "uninstall", "claude-code")
    assert "not installed" in result.output


def test_dry_run_writes_nothing(homes: Path) -> None:
    result = cli("hooks", "install", "claude-code", "--scope", "project", "--dry-run")
    assert not (homes / ".claude").exists()
    shown = json.loads(result.stdout)
    assert len(ours(shown)) == 2

    path = homes / ".claude" / "settings.json"
    cli("hooks", "install", "claude-code", "--scope", "project")
    before = path.read_text()
    cli("hooks", "uninstall", "claude-code", "--scope", "project", "--dry-run")
    assert path.read_text() == before
    cli("hooks", "uninstall", "claude-code", "--scope", "project")
    assert json.loads(path.read_text()) == {}  # the file was created by install


def test_uninstall_keeps_a_user_handler_added_to_our_group(homes: Path) -> None:
    cli("hooks", "install", "claude-code", "--scope", "local")
    path = homes / ".claude" / "settings.local.json"
    data = json.loads(path.read_text())
    data["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": "mine.sh"})
    path.write_text(json.dumps(data))
    cli("hooks", "uninstall", "claude-code", "--scope", "local")
    left = json.loads(path.read_text())
    assert ours(left) == []
    assert left["hooks"]["SessionStart"][0]["hooks"] == [{"type": "command", "command": "mine.sh"}]
    assert "UserPromptSubmit" not in left["hooks"]


def test_codex_hooks_json(homes: Path) -> None:
    result = cli("hooks", "install", "codex")
    path = homes / "codex" / "hooks.json"
    data = json.loads(path.read_text())
    assert data["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear"
    assert len(ours(data)) == 2
    assert "/hooks" in result.output  # Codex runs a new hook only once trusted there
    cli("hooks", "uninstall", "codex")
    assert json.loads(path.read_text()) == {}


def test_a_broken_settings_file_is_refused_untouched(homes: Path) -> None:
    path = homes / "claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{ not json")
    result = CliRunner().invoke(app, ["hooks", "install", "claude-code"])
    assert result.exit_code != 0
    assert path.read_text() == "{ not json"
    assert list(path.parent.glob("*.bak-*")) == []
