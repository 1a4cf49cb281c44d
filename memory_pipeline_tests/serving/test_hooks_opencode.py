"""`memory-pipeline hooks install|uninstall opencode`: our plugin file written whole and removed
exactly, a foreign file never touched; and the plugin itself, run under Node (OpenCode runs
plugins in Bun; Node runs the same ESM), fails open: a missing, hanging, crashing or garbling
command adds nothing and raises nothing, while a working one adds its context."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app
from serving.hooks.agents import opencode

NODE = shutil.which("node")


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "mem home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output + (str(result.exception) if code else "")  # a UserError's one line


def test_install_writes_our_plugin_and_uninstall_removes_exactly_it(homes: Path) -> None:
    plugin_dir = homes / "config" / "opencode" / "plugin"
    plugin_dir.mkdir(parents=True)
    (plugin_dir / "other.ts").write_text("export const Other = async () => ({})\n")
    out = cli("hooks", "install", "opencode")
    path = plugin_dir / "memory-pipeline.js"
    text = path.read_text()
    assert text.startswith(opencode.MARKER)
    for needle in (
        '"session.created"',
        '"chat.message"',
        '"experimental.chat.system.transform"',
        '["hook", event]',
        "memory-pipeline",
        str(homes / "mem home"),  # MEMORY_HOME, as for Claude Code's and Codex's hooks
        "export default MemoryPipeline",
    ):
        assert needle in text, needle
    assert "restart OpenCode" in out
    assert "nothing to install" in cli("hooks", "install", "opencode")  # idempotent
    cli("hooks", "uninstall", "opencode")
    assert sorted(p.name for p in plugin_dir.iterdir()) == ["other.ts"]  # no backup left behind
    assert "nothing to uninstall" in cli("hooks", "uninstall", "opencode")

    project = homes / ".opencode" / "plugin" / "memory-pipeline.js"
    cli("hooks", "install", "opencode", "--scope", "project")
    assert project.read_bytes().startswith(opencode.MARKER.encode())
    cli("hooks", "uninstall", "opencode", "--scope", "project")
    assert not project.exists()
    assert "no local scope" in cli("hooks", "install", "opencode", "--scope", "local", code=1)


def test_a_file_that_is_not_ours_is_never_touched_and_an_old_one_of_ours_is_replaced(
    homes: Path,
) -> None:
    path = homes / "config" / "opencode" / "plugin" / "memory-pipeline.js"
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({})\n")
    assert "is not memory-pipeline's plugin" in cli("hooks", "install", "opencode", code=1)
    assert "nothing to uninstall" in cli("hooks", "uninstall", "opencode")
    assert path.read_text() == "export const Mine = async () => ({})\n"
    path.write_bytes(opencode.plugin("/old/venv/bin/memory-pipeline"))
    cli("hooks", "install", "opencode")
    assert "/old/venv" not in path.read_text() and path.read_text().startswith(opencode.MARKER)


HARNESS = """
import plugin from %s
const hooks = await plugin({ directory: "/home/mara/src/logslice" })
const started = Date.now()
await hooks.event({ event: { type: "session.created", properties: { info: { id: "ses_1" } } } })
await hooks.event({ event: { type: "session.created",
  properties: { info: { id: "ses_child", parentID: "ses_1" } } } })
await hooks["chat.message"]({ sessionID: "ses_1" },
  { message: {}, parts: [{ type: "text", text: "why does --since drop lines?" },
                         { type: "text", text: "injected", synthetic: true }] })
const out = { system: ["base"] }
await hooks["experimental.chat.system.transform"]({ sessionID: "ses_1" }, out)
const child = { system: [] }
await hooks["experimental.chat.system.transform"]({ sessionID: "ses_child" }, child)
console.log(JSON.stringify({ system: out.system, child: child.system, ms: Date.now() - started }))
"""


def run_plugin(tmp_path: Path, command: str, timeout_s: float = 10) -> dict:  # type: ignore[type-arg]
    module = tmp_path / "memory-pipeline.mjs"  # .mjs: Node 20 reads a .js file as CommonJS
    module.write_bytes(opencode.plugin(command, timeout_s=timeout_s))
    harness = tmp_path / "harness.mjs"
    harness.write_text(HARNESS % json.dumps(module.as_uri()))
    done = subprocess.run(
        [NODE, str(harness)],
        capture_output=True,
        timeout=60,
        check=False,  # type: ignore[list-item]
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(NODE is None, reason="needs node to run the plugin")
def test_the_plugin_fails_open_and_injects_what_the_hook_prints(tmp_path: Path) -> None:
    # The hook command's own answer: the documented additionalContext JSON, per event.
    log = tmp_path / "calls.log"
    good = script(
        tmp_path,
        "good",
        f"cat >> {log}; echo >> {log}\n"
        + "echo '"
        + json.dumps(
            {"hookSpecificOutput": {"hookEventName": "X", "additionalContext": "CTX-"}}
        ).replace("CTX-", "CTX-'$2'")
        + "'\n",
    )
    result = run_plugin(tmp_path, good)
    assert result["system"] == ["base", "CTX-session-start", "CTX-prompt"]
    assert result["child"] == []  # no memory asked for a subagent's child session
    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [c["hook_event_name"] for c in calls] == ["SessionStart", "UserPromptSubmit"]
    assert calls[1]["prompt"] == "why does --since drop lines?"  # synthetic text left out
    assert calls[1]["session_id"] == "ses_1" and calls[1]["cwd"] == "/home/mara/src/logslice"

    failing = {
        "missing": str(tmp_path / "no-such-command"),
        "crashing": script(tmp_path, "crash", "echo boom >&2; exit 3\n"),
        "garbage": script(tmp_path, "garbage", 'echo "{not json"\n'),
        "silent": script(tmp_path, "silent", "exit 0\n"),
    }
    for case, command in failing.items():
        result = run_plugin(tmp_path, command)
        assert (result["system"], result["child"]) == (["base"], []), case
    started = time.monotonic()
    result = run_plugin(tmp_path, script(tmp_path, "hang", "sleep 30\n"), timeout_s=0.3)
    assert result["system"] == ["base"]
    assert time.monotonic() - started < 10  # killed at the deadline, not waited for
