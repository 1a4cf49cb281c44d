"""`memory-pipeline hooks install|uninstall` on temporary settings files: merged into what is
there, idempotent, the old file backed up, a dry run writes nothing, and uninstall removes
exactly what install added."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app, main

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
    assert not path.exists()  # the file was created by install


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
    assert not path.exists()  # install created it


def test_a_broken_settings_file_is_refused_untouched(homes: Path) -> None:
    path = homes / "claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{ not json")
    result = CliRunner().invoke(app, ["hooks", "install", "claude-code"])
    assert result.exit_code != 0
    assert path.read_text() == "{ not json"
    assert list(path.parent.glob("*.bak-*")) == []


# --- issue 31: wrong types, and uninstall giving back the very bytes install found -----------
def run_main(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """The installed `memory-pipeline` entry point, as a user runs it: exit code and stderr."""
    monkeypatch.setattr(sys, "argv", ["memory-pipeline", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    return int(exit_.value.code or 0), capsys.readouterr().err


WRONG_TYPES = [
    ({"hooks": {"UserPromptSubmit": "oops"}}, "hooks.UserPromptSubmit", "a string"),
    ({"hooks": {"SessionStart": {"hooks": []}}}, "hooks.SessionStart", "an object"),
    ({"hooks": {"UserPromptSubmit": ["oops"]}}, "hooks.UserPromptSubmit[0]", "a string"),
    ({"hooks": {"UserPromptSubmit": [[{"hooks": []}]]}}, "hooks.UserPromptSubmit[0]", "a list"),
    ({"hooks": {"SessionStart": [{"hooks": "x.sh"}]}}, "hooks.SessionStart[0].hooks", "a string"),
    (
        {"hooks": {"SessionStart": [{"hooks": {"a": 1}}]}},
        "hooks.SessionStart[0].hooks",
        "an object",
    ),
    (
        {"hooks": {"UserPromptSubmit": [{"hooks": [7]}]}},
        "hooks.UserPromptSubmit[0].hooks[0]",
        "a number",
    ),
    (
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": ["a"]}]}]}},
        "hooks.UserPromptSubmit[0].hooks[0].command",
        "a list",
    ),
    ({"hooks": ["SessionStart"]}, "hooks", "a list"),
]


@pytest.mark.parametrize(("settings", "where", "found"), WRONG_TYPES)
@pytest.mark.parametrize("verb", ["install", "uninstall"])
def test_a_hook_entry_of_the_wrong_type_is_one_line_saying_what_and_where(
    homes: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
    settings: dict,
    where: str,
    found: str,
    verb: str,
) -> None:  # type: ignore[no-untyped-def]
    path = homes / "claude" / "settings.json"
    path.parent.mkdir()
    text = json.dumps(settings, indent=2)
    path.write_text(text)
    code, err = run_main(["hooks", verb, "claude-code"], monkeypatch, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert str(path) in lines[0] and f"{where} is {found}" in lines[0], lines[0]
    assert "expected" in lines[0] and "fix it" in lines[0], lines[0]
    assert path.read_text() == text
    assert list(path.parent.glob("*.bak-*")) == []


ODD_FILES = {
    "indent 1, no final newline": json.dumps(EXISTING, indent=1).encode(),
    "compact, final newline": json.dumps(EXISTING, separators=(",", ":")).encode() + b"\n",
    "tabs, CRLF, keys out of order": json.dumps(
        {"hooks": EXISTING["hooks"], "z": [1, 2.50, 1e3], "model": "opus"}, indent="\t"
    )
    .replace("\n", "\r\n")
    .encode(),
    "unicode raw and escaped": (
        '{"model": "opüs", "note": "caf\\u00e9 \\ud83d\\ude00", "n": 1.0}'.encode()
    ),
    "spaces everywhere": b'  {  "hooks" : { } ,\n\n  "model":"opus"   }  \n\n',
    "empty file": b"",
    "empty object": b"{}",
    "duplicate keys": b'{"model": "a", "model": "b"}\n',
}


@pytest.mark.parametrize("original", list(ODD_FILES.values()), ids=list(ODD_FILES))
def test_uninstall_gives_back_the_original_bytes(homes: Path, original: bytes) -> None:
    path = homes / "claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(original)
    cli("hooks", "install", "claude-code")
    assert len(ours(json.loads(path.read_text()))) == 2
    cli("hooks", "uninstall", "claude-code")
    assert path.read_bytes() == original


def test_uninstall_removes_a_file_install_created(homes: Path) -> None:
    path = homes / "claude" / "settings.json"
    cli("hooks", "install", "claude-code")
    assert path.exists()
    result = cli("hooks", "uninstall", "claude-code")
    assert not path.exists() and "install had created it" in result.output


def test_a_file_changed_after_install_keeps_the_change_on_uninstall(homes: Path) -> None:
    path = homes / "claude" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(EXISTING, indent=1).encode()
    path.write_bytes(original)
    cli("hooks", "install", "claude-code")
    data = json.loads(path.read_text())
    data["model"] = "sonnet"  # the user (or the agent) changed something in between
    path.write_text(json.dumps(data, indent=2))
    cli("hooks", "uninstall", "claude-code")
    left = json.loads(path.read_text())
    assert left == {**EXISTING, "model": "sonnet"} and ours(left) == []
