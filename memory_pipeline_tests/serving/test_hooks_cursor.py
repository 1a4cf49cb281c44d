"""Cursor's session-start hook: its payload as Cursor sends it, its output as Cursor reads it,
and failing open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline_tests.serving.test_hooks import (  # noqa: F401 (pytest fixtures)
    _log,
    corpus,
    embedder,
    hook_home,
    run_hook,
    running,
)
from memory_pipeline_tests.serving.test_hooks_install import run_main
from memory_pipeline_tests.support.hook_runs import stop_started_server
from serving.hooks import payload

# A sessionStart stdin as Cursor 3.17/3.18 writes it (fusengine/harness
# test/fixtures/cursor/sessionStart/, sanitized there), with a workspace open.
CURSOR_SESSION_START = {
    "conversation_id": "5b3f0a4e-2c1d-4e5f-8a9b-0c1d2e3f4a5b",
    "generation_id": "",
    "model": "unknown",
    "model_id": "default",
    "is_background_agent": False,
    "composer_mode": "agent",
    "session_id": "5b3f0a4e-2c1d-4e5f-8a9b-0c1d2e3f4a5b",
    "hook_event_name": "sessionStart",
    "cursor_version": "3.18.9",
    "workspace_roots": ["/home/u/kestrel"],
    "user_email": None,
    "transcript_path": None,
}


def test_cursors_session_start_payload_parses():
    event = payload.parse(json.dumps(CURSOR_SESSION_START), payload.SESSION_START)
    assert event.event == payload.SESSION_START
    assert event.cwd == "/home/u/kestrel"  # the first workspace root
    assert event.session_id == CURSOR_SESSION_START["session_id"]
    empty = payload.parse(
        json.dumps({**CURSOR_SESSION_START, "workspace_roots": [], "session_id": None}),
        payload.SESSION_START,
    )
    assert empty.cwd is None and empty.session_id == CURSOR_SESSION_START["conversation_id"]


def test_cursor_output_is_additional_context():
    assert json.loads(payload.output(payload.SESSION_START, "m", "cursor")) == {
        "additional_context": "m"
    }


def test_the_cursor_hook_prints_cursors_shape(hook_home: Path, corpus, running):  # noqa: F811
    running()
    result = run_hook(
        hook_home,
        "session-start",
        json.dumps(CURSOR_SESSION_START),
        "--agent",
        "cursor",
        "--deadline",
        "20",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) == {"additional_context"} and out["additional_context"].strip()


def test_the_cursor_hook_fails_open(hook_home: Path):  # noqa: F811
    """No server (and none in time), a bad payload: nothing printed, exit 0, one log line."""
    for body, expected in (
        ("{not json", "stdin is not JSON"),
        (json.dumps(CURSOR_SESSION_START), "not running"),
    ):
        before = len(_log(hook_home))
        result = run_hook(
            hook_home, "session-start", body, "--agent", "cursor", "--deadline", "0.3"
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
        lines = _log(hook_home)[before:]
        assert len(lines) == 1 and expected in lines[0], lines
    stop_started_server(hook_home)


# --- hooks install|uninstall cursor -------------------------------------------------------------

EXISTING = {
    "version": 1,
    "hooks": {
        "beforeShellExecution": [{"command": "./hooks/audit.sh"}],
        "sessionStart": [{"command": "node ~/.cursor/hooks/rules.mjs"}],
    },
}


@pytest.fixture
def cursor_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CURSOR_DATA_DIR", str(tmp_path / "dot-cursor"))
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "mem"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "dot-cursor"


def cli(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_install_merges_is_idempotent_and_uninstall_gives_back_the_bytes(cursor_home: Path):
    path = cursor_home / "hooks.json"
    path.parent.mkdir()
    original = json.dumps(EXISTING, indent=4).encode()  # not how we write: must come back as is
    path.write_bytes(original)
    cli("hooks", "install", "cursor")
    data = json.loads(path.read_text())
    assert data["version"] == 1
    assert data["hooks"]["beforeShellExecution"] == EXISTING["hooks"]["beforeShellExecution"]
    theirs, ours = data["hooks"]["sessionStart"]
    assert theirs == EXISTING["hooks"]["sessionStart"][0]
    assert set(ours) == {"command"}
    assert ours["command"].endswith("memory-pipeline hook session-start --agent cursor")
    assert "beforeSubmitPrompt" not in data["hooks"]  # it cannot add context: nothing there
    assert len(list(cursor_home.glob("hooks.json.bak-*"))) == 1
    after_first = path.read_bytes()
    assert "nothing to install" in cli("hooks", "install", "cursor").output
    assert path.read_bytes() == after_first
    cli("hooks", "uninstall", "cursor")
    assert path.read_bytes() == original


def test_install_creates_the_file_and_uninstall_removes_it(cursor_home: Path):
    path = cursor_home / "hooks.json"
    cli("hooks", "install", "cursor")
    assert json.loads(path.read_text())["hooks"]["sessionStart"][0]["command"].endswith(
        "--agent cursor"
    )
    cli("hooks", "uninstall", "cursor")
    assert not path.exists()


def test_uninstall_keeps_what_was_added_after_install(cursor_home: Path):
    path = cursor_home / "hooks.json"
    cli("hooks", "install", "cursor")
    data = json.loads(path.read_text())
    data["hooks"]["stop"] = [{"command": "./notify.sh"}]
    path.write_text(json.dumps(data))
    cli("hooks", "uninstall", "cursor")
    assert json.loads(path.read_text()) == {
        "version": 1,
        "hooks": {"stop": [{"command": "./notify.sh"}]},
    }


def test_project_scope_and_a_wrong_shape(
    cursor_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
):
    cli("hooks", "install", "cursor", "--scope", "project")
    assert (tmp_path / ".cursor" / "hooks.json").exists()
    path = cursor_home / "hooks.json"
    path.parent.mkdir(exist_ok=True)
    text = '{"version": 1, "hooks": {"sessionStart": {"command": "x"}}}'
    path.write_text(text)
    code, err = run_main(["hooks", "install", "cursor"], monkeypatch, capsys)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "hooks.sessionStart is an object, expected a list of handlers" in line
    assert path.read_text() == text
