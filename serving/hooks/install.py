"""`memory-pipeline hooks install|uninstall`: merge our hook entries into an agent's hook file.

Both agents read the same structure, event -> matcher groups -> handlers:
`{"hooks": {"SessionStart": [{"matcher": "...", "hooks": [{"type": "command", "command": "...",
"timeout": 10}]}], "UserPromptSubmit": [{"hooks": [...]}]}}`.

- Claude Code (https://code.claude.com/docs/en/hooks, "Configuration"; settings files in
  https://code.claude.com/docs/en/settings): `~/.claude/settings.json` (user, under
  CLAUDE_CONFIG_DIR), `.claude/settings.json` (project), `.claude/settings.local.json` (local).
  SessionStart's matcher is the start source (`startup|resume|clear|compact`); UserPromptSubmit
  takes no matcher. `timeout` is in seconds.
- Codex (https://developers.openai.com/codex/hooks.md, "Where Codex looks for hooks"):
  `~/.codex/hooks.json` (user, under CODEX_HOME) or `<repo>/.codex/hooks.json` (project), the
  same JSON; hooks are on by default (older versions need `[features] codex_hooks = true` in
  config.toml) and a new command hook runs only once trusted in Codex's `/hooks`.

Install keeps everything else in the file, backs the old file up beside it, adds nothing that is
already there (idempotent), and writes atomically. Uninstall removes exactly the handlers whose
command is ours (and a group or event list only if that leaves it empty).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

AGENTS = ("claude-code", "codex")
SCOPES = ("user", "project", "local")
# The agent's own kill timeout (seconds): a backstop far above our deadlines, which already
# make the command print nothing and exit.
HANDLER_TIMEOUT_S = 10
SESSION_MATCHERS = {"claude-code": "startup|resume|clear|compact", "codex": "startup|resume|clear"}


@dataclass(frozen=True)
class Change:
    path: Path
    before: dict[str, Any] | None  # None: the file did not exist
    after: dict[str, Any] | None  # None: nothing to change
    backup: Path | None = None

    @property
    def changed(self) -> bool:
        return self.after is not None


def hook_file(agent: str, scope: str, settings: Settings, cwd: Path) -> Path:
    if agent == "claude-code":
        if scope == "user":
            return settings.claude_home / "settings.json"
        return cwd / ".claude" / ("settings.local.json" if scope == "local" else "settings.json")
    if agent == "codex":
        if scope == "local":
            raise UserError("Codex has no local scope; use --scope user or --scope project")
        return (
            settings.codex_home / "hooks.json" if scope == "user" else cwd / ".codex" / "hooks.json"
        )
    raise UserError(f"unknown agent {agent!r}; use one of: {', '.join(AGENTS)}")


def hook_command(event_arg: str, executable: str | None = None) -> str:
    """The command line the agent runs: this venv's `memory-pipeline`, with MEMORY_HOME when it
    is set now (agents start hooks with their own environment)."""
    exe = executable or str(Path(sys.executable).parent / "memory-pipeline")
    prefix = ""
    if os.environ.get("MEMORY_HOME"):
        prefix = f"MEMORY_HOME={shlex.quote(os.environ['MEMORY_HOME'])} "
    return f"{prefix}{shlex.quote(exe)} hook {event_arg}"


def entries(agent: str, executable: str | None = None) -> dict[str, dict[str, Any]]:
    """Event -> the matcher group we add."""

    def handler(arg: str) -> dict[str, Any]:
        return {
            "type": "command",
            "command": hook_command(arg, executable),
            "timeout": HANDLER_TIMEOUT_S,
        }

    return {
        "SessionStart": {"matcher": SESSION_MATCHERS[agent], "hooks": [handler("session-start")]},
        "UserPromptSubmit": {"hooks": [handler("prompt")]},
    }


def _read(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise UserError(
            f"cannot read {path} as JSON ({exc}); fix or move it, then try again"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object; fix or move it, then try again")
    if not isinstance(data.get("hooks", {}), dict):
        raise UserError(f'{path}: "hooks" is not an object; fix it, then try again')
    return data


def _commands(group: dict[str, Any]) -> list[str]:
    return [h.get("command") for h in group.get("hooks", []) if isinstance(h, dict)]


def merged(data: dict[str, Any] | None, ours: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """`data` with our groups added where their commands are missing; None if nothing is."""
    out = json.loads(json.dumps(data or {}))
    hooks = out.setdefault("hooks", {})
    added = False
    for event, group in ours.items():
        groups = hooks.setdefault(event, [])
        present = {c for g in groups if isinstance(g, dict) for c in _commands(g)}
        if not set(_commands(group)) <= present:
            groups.append(group)
            added = True
    return out if added else None


def removed(data: dict[str, Any] | None, ours: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """`data` without our handlers; None if none is there."""
    if not data or not isinstance(data.get("hooks"), dict):
        return None
    out = json.loads(json.dumps(data))
    hooks = out["hooks"]
    gone = False
    for event, group in ours.items():
        mine = set(_commands(group))
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for g in groups:
            if not isinstance(g, dict) or not isinstance(g.get("hooks"), list):
                kept_groups.append(g)
                continue
            kept = [h for h in g["hooks"] if not (isinstance(h, dict) and h.get("command") in mine)]
            if len(kept) != len(g["hooks"]):
                gone = True
                if not kept:
                    continue  # the group held only ours
                g = {**g, "hooks": kept}
            kept_groups.append(g)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if gone and not hooks:
        del out["hooks"]
    return out if gone else None


def plan(path: Path, install: bool, ours: dict[str, dict[str, Any]]) -> Change:
    before = _read(path)
    after = merged(before, ours) if install else removed(before, ours)
    return Change(path, before, after)


def apply(change: Change) -> Change:
    """Write the change: the old file copied to `<name>.bak-<UTC time>` first, then the new
    content written to a temporary file and renamed over it (same mode as before)."""
    if not change.changed:
        return change
    path = change.path
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        n = 1
        while backup.exists():
            backup = path.with_name(f"{path.name}.bak-{stamp}-{n}")
            n += 1
        shutil.copy2(path, backup)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(change.after, indent=2) + "\n", encoding="utf-8")
    if path.exists():
        shutil.copymode(path, tmp)
    os.replace(tmp, path)
    return Change(path, change.before, change.after, backup)
