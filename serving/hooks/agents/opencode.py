"""OpenCode's hooks are plugins: a JS/TS module in a plugin directory, loaded at start
(anomalyco/opencode `packages/opencode/src/config` globs `{plugin,plugins}/*.{ts,js}` in
`$XDG_CONFIG_HOME/opencode/` (user) and `<project>/.opencode/` (project); the hook API is
`packages/plugin/src/index.ts`).

Our plugin is one file we own whole, `memory-pipeline.js`: install writes it, uninstall removes
it (only when it is ours: its first line says so), nothing else in the directory is touched. It
calls the same `memory-pipeline hook session-start|prompt` commands as Claude Code's and Codex's
hooks, with their JSON on stdin, so the deadlines and the relevance threshold are the same:

* `event` `session.created` (not for a child session: `parentID`): `hook session-start`;
* `chat.message` (the user's message, its text parts not `synthetic`): `hook prompt`;
* `experimental.chat.system.transform`: the context the two returned is added to the system
  prompt of that session's LLM calls (the session start's for the whole session, a prompt's
  until the next prompt).

Fail-open: a command that fails, prints nothing, prints no JSON or takes longer than
HANDLER_TIMEOUT_S (killed) adds nothing, and no error reaches OpenCode. The module's default
export is the plugin function carrying `id` and `server` too, so both OpenCode's loaders (every
export called, up to 1.3; `{id, server}` after) take it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

NAME = "opencode"
SCOPES = ("user", "project")
AFTER_INSTALL: str | None = "restart OpenCode: it loads plugins when it starts"
FILE_NAME = "memory-pipeline.js"
MARKER = "// memory-pipeline: OpenCode plugin written by `memory-pipeline hooks install opencode`"


def hook_file(scope: str, settings: Settings, cwd: Path) -> Path:
    if scope == "local":
        raise UserError("OpenCode has no local scope; use --scope user or --scope project")
    if scope == "user":
        base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        return Path(base) / "opencode" / "plugin" / FILE_NAME
    return cwd / ".opencode" / "plugin" / FILE_NAME


def entries(handler: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Not a JSON hook file: `plan` writes the plugin instead (install.plan_agent)."""
    return {}


def plugin(executable: str | None = None, timeout_s: float = 10) -> bytes:
    """The plugin's bytes: our command as an argv list (no shell), MEMORY_HOME if set now."""
    exe = executable or str(Path(sys.executable).parent / "memory-pipeline")
    env = {"MEMORY_HOME": os.environ["MEMORY_HOME"]} if os.environ.get("MEMORY_HOME") else {}
    return (
        PLUGIN.replace("__MARKER__", MARKER)
        .replace("__COMMAND__", json.dumps(exe))
        .replace("__ENV__", json.dumps(env))
        .replace("__TIMEOUT_MS__", str(int(timeout_s * 1000)))
        .encode("utf-8")
    )


def is_ours(raw: bytes) -> bool:
    return raw.startswith(MARKER.encode("utf-8"))


def plan_file(path: Path, install: bool, executable: str | None = None) -> Any:
    """Install: write the plugin (replacing an older one of ours; refusing a file of the same
    name that is not ours). Uninstall: remove it when it is ours, else leave everything."""
    from serving.hooks.install import Change

    try:
        raw = path.read_bytes() if path.exists() else None
    except OSError as exc:
        raise UserError(f"cannot read {path} ({exc}); fix or move it, then try again") from None
    ours = raw is not None and is_ours(raw)
    if raw is not None and not ours:
        if install:
            raise UserError(
                f"{path} exists and is not memory-pipeline's plugin; move it, then try again"
            )
        return Change(path, None, None)
    if install:
        new = plugin(executable)
        if raw == new:
            return Change(path, {}, None)
        return Change(path, {} if raw is not None else None, {}, raw=new, owned=True)
    if raw is None:
        return Change(path, None, None)
    return Change(path, {}, {}, remove=True, owned=True)


PLUGIN = r"""__MARKER__
// It asks `memory-pipeline hook session-start|prompt` for memory context and adds it to the
// system prompt. Fail-open: any failure or timeout adds nothing. Remove it with
// `memory-pipeline hooks uninstall opencode`.
import { spawn } from "node:child_process"

const COMMAND = __COMMAND__
const ENV = __ENV__
const TIMEOUT_MS = __TIMEOUT_MS__

function ask(event, payload) {
  return new Promise((resolve) => {
    let out = ""
    let done = false
    let timer = null
    const finish = (text) => {
      if (done) return
      done = true
      if (timer) clearTimeout(timer)
      resolve(text)
    }
    let child
    try {
      child = spawn(COMMAND, ["hook", event], {
        env: { ...process.env, ...ENV },
        stdio: ["pipe", "pipe", "ignore"],
        detached: process.platform !== "win32", // its own process group: killed whole
      })
    } catch {
      return finish("")
    }
    timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL")
      } catch {
        try {
          child.kill("SIGKILL")
        } catch {}
      }
      try {
        child.stdout.destroy()
      } catch {}
      finish("")
    }, TIMEOUT_MS)
    child.on("error", () => finish(""))
    child.stdout.on("data", (chunk) => {
      out += chunk
    })
    child.on("close", () => {
      try {
        const text = JSON.parse(out)?.hookSpecificOutput?.additionalContext
        finish(typeof text === "string" ? text : "")
      } catch {
        finish("")
      }
    })
    child.stdin.on("error", () => {})
    try {
      child.stdin.end(JSON.stringify(payload))
    } catch {
      finish("")
    }
  })
}

const started = new Map() // sessionID -> the session start's context
const prompted = new Map() // sessionID -> the last prompt's context

const MemoryPipeline = async ({ directory } = {}) => ({
  event: async ({ event } = {}) => {
    try {
      if (event?.type !== "session.created") return
      const info = event.properties?.info
      if (!info?.id || info.parentID) return
      const text = await ask("session-start", {
        hook_event_name: "SessionStart",
        source: "startup",
        session_id: info.id,
        cwd: info.directory || directory,
      })
      if (text) started.set(info.id, text)
    } catch {}
  },
  "chat.message": async (input, output) => {
    try {
      const prompt = (output?.parts ?? [])
        .filter((p) => p?.type === "text" && typeof p.text === "string")
        .filter((p) => !p.synthetic && !p.ignored)
        .map((p) => p.text)
        .join("\n\n")
      if (!input?.sessionID || !prompt.trim()) return
      prompted.delete(input.sessionID)
      const text = await ask("prompt", {
        hook_event_name: "UserPromptSubmit",
        prompt,
        session_id: input.sessionID,
        cwd: directory,
      })
      if (text) prompted.set(input.sessionID, text)
    } catch {}
  },
  "experimental.chat.system.transform": async (input, output) => {
    try {
      const id = input?.sessionID
      if (!id || !Array.isArray(output?.system)) return
      for (const text of [started.get(id), prompted.get(id)]) if (text) output.system.push(text)
    } catch {}
  },
})

MemoryPipeline.id = "memory-pipeline"
MemoryPipeline.server = MemoryPipeline
export default MemoryPipeline
"""
