"""`memory-pipeline hooks install|uninstall`: merge our hook entries into an agent's hook file.

Claude Code, Codex and Gemini CLI read the same structure, event -> matcher groups -> handlers:
`{"hooks": {"SessionStart": [{"matcher": "...", "hooks": [{"type": "command", "command": "...",
"timeout": 10}]}], "UserPromptSubmit": [{"hooks": [...]}]}}`. Where each agent keeps the file
per scope, its event names and its matcher groups are its module in `serving/hooks/agents/`
(registered in `agents.AGENTS`); this module merges, plans and writes for all of them. Kiro
CLI's agent files list handlers directly under each trigger (`Layout.flat`); they are merged as
one group per trigger and written back flat.

Install keeps everything else in the file, backs the old file up beside it, adds nothing that is
already there (idempotent), and writes atomically. Uninstall removes exactly the handlers whose
command is ours (and a group or event list only if that leaves it empty). When the file is still
exactly what an install wrote (nothing else changed in between), uninstall gives back the bytes
install found, from its backup (formatting, key order, final newline and all), or removes the
file if install created it.

A file whose events we touch have the wrong shape (an event that is not a list of matcher groups,
a group that is not an object, its `hooks` not a list of handler objects, a `command` that is not a
string) is refused in one line that says where, and left untouched.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings
from serving.hooks import agents

AGENTS = agents.NAMES
SCOPES = ("user", "project", "local")  # every scope some agent has (each says its own)
# The agent's own kill timeout (seconds): a backstop far above our deadlines, which already
# make the command print nothing and exit.
HANDLER_TIMEOUT_S = 10


@dataclass(frozen=True)
class Change:
    path: Path
    before: dict[str, Any] | None  # None: the file did not exist
    after: dict[str, Any] | None  # None: nothing to change
    backup: Path | None = None
    # Uninstall of a file nothing else changed since install: the bytes install found (from
    # this backup), or `remove` when install created the file.
    original: bytes | None = None
    original_from: Path | None = None
    remove: bool = False
    # A file we own whole (OpenCode's plugin): `raw` is written, and no backup is kept of our
    # own file (a backup beside a plugin would be one more file in the agent's plugin folder).
    raw: bytes | None = None
    owned: bool = False

    @property
    def changed(self) -> bool:
        return self.after is not None

    @property
    def content(self) -> bytes | None:
        """The bytes the file will hold (None: it is removed, or nothing changes)."""
        if self.after is None or self.remove:
            return None
        if self.raw is not None:
            return self.raw
        return self.original if self.original is not None else dump(self.after)


def dump(data: dict[str, Any]) -> bytes:
    """How install and uninstall write a hook file."""
    return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def agent_module(agent: str) -> ModuleType:
    found = agents.BY_NAME.get(agent)
    if found is None:
        raise UserError(f"unknown agent {agent!r}; use one of: {', '.join(AGENTS)}")
    return found


def hook_file(agent: str, scope: str, settings: Settings, cwd: Path) -> Path:
    return agent_module(agent).hook_file(scope, settings, cwd)  # type: ignore[no-any-return]


def after_install(agent: str) -> str | None:
    """The line to print after installing (Codex: trust the hooks in /hooks), or None."""
    return agent_module(agent).AFTER_INSTALL  # type: ignore[no-any-return]


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

    return agent_module(agent).entries(handler)  # type: ignore[no-any-return]


def plan_agent(agent: str, path: Path, install: bool, executable: str | None = None) -> Change:
    """The change for `agent`: merged JSON hooks, or the whole file an agent module plans
    itself (`plan_file`, OpenCode's plugin)."""
    module = agent_module(agent)
    own = getattr(module, "plan_file", None)
    if own is not None:
        return own(path, install, executable)  # type: ignore[no-any-return]
    return plan(path, install, entries(agent, executable), layout(agent))


def _parse(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8") or "{}")
    except ValueError as exc:
        raise UserError(
            f"cannot read {path} as JSON ({exc}); fix or move it, then try again"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object; fix or move it, then try again")
    return data


def _read(
    path: Path, events: list[str], how: Layout | None = None
) -> tuple[dict[str, Any] | None, bytes | None]:
    """The hook file parsed and as bytes (None, None when it does not exist), its `hooks` and
    the `events` in it checked for the shape the agent reads."""
    if not path.exists():
        return None, None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {path} ({exc}); fix or move it, then try again") from None
    data = _parse(raw, path)
    problem = flat_shape_problem(data, events) if how and how.flat else shape_problem(data, events)
    if problem:
        where, found, expected = problem
        raise UserError(f"{path}: {where} is {found}, expected {expected}; fix it, then try again")
    return data, raw


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "null")


def shape_problem(data: dict[str, Any], events: list[str]) -> tuple[str, str, str] | None:
    """(where, what was found, what is expected) of the first entry of the wrong type on the
    way to our handlers: `hooks`, each of `events` and its groups, handlers and commands."""
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        return "hooks", _kind(hooks), 'an object of events ({"SessionStart": [...]})'
    for event in events:
        groups = hooks.get(event)
        if groups is None:
            continue
        where = f"hooks.{event}"
        if not isinstance(groups, list):
            return where, _kind(groups), 'a list of matcher groups ([{"hooks": [...]}])'
        for i, group in enumerate(groups):
            if not isinstance(group, dict):
                return f"{where}[{i}]", _kind(group), 'a matcher group ({"hooks": [...]})'
            handlers = group.get("hooks", [])
            if not isinstance(handlers, list):
                return f"{where}[{i}].hooks", _kind(handlers), "a list of handlers"
            for j, handler in enumerate(handlers):
                at = f"{where}[{i}].hooks[{j}]"
                if not isinstance(handler, dict):
                    expected = 'a handler ({"type": "command", "command": "..."})'
                    return at, _kind(handler), expected
                command = handler.get("command", "")
                if not isinstance(command, str):
                    return f"{at}.command", _kind(command), "a string"
    return None


def flat_shape_problem(data: dict[str, Any], events: list[str]) -> tuple[str, str, str] | None:
    """As `shape_problem`, for a file whose events are lists of handlers (Kiro CLI)."""
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        return "hooks", _kind(hooks), 'an object of triggers ({"agentSpawn": [...]})'
    for event in events:
        handlers = hooks.get(event)
        if handlers is None:
            continue
        if not isinstance(handlers, list):
            return f"hooks.{event}", _kind(handlers), 'a list of handlers ([{"command": "..."}])'
        for j, handler in enumerate(handlers):
            at = f"hooks.{event}[{j}]"
            if not isinstance(handler, dict):
                return at, _kind(handler), 'a handler ({"command": "..."})'
            if not isinstance(handler.get("command", ""), str):
                return f"{at}.command", _kind(handler.get("command")), "a string"
    return None


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


@dataclass(frozen=True)
class Layout:
    """How an agent's file holds hooks. `flat`: `hooks.<event>` is the list of handlers itself
    (Kiro CLI's agent files), not a list of matcher groups; it is merged as one group and written
    back flat. `new_file`: what a file install creates starts as (Kiro: an agent document, whose
    schema needs a name), else `{}`."""

    flat: bool = False
    new_file: dict[str, Any] | None = None


def layout(agent: str) -> Layout:
    module = agent_module(agent)
    new_file = getattr(module, "new_file", None)
    return Layout(
        flat=getattr(module, "FORMAT", "groups") == "flat",
        new_file=new_file() if callable(new_file) else None,
    )


def _grouped(data: dict[str, Any] | None, events: list[str], how: Layout) -> dict[str, Any] | None:
    """A flat file's events as one matcher group each (what merged/removed work on)."""
    if data is None or not how.flat or not isinstance(data.get("hooks"), dict):
        return data
    out = json.loads(json.dumps(data))
    for event in events:
        handlers = out["hooks"].get(event)
        if handlers is not None:
            out["hooks"][event] = [{"hooks": handlers}]
    return out


def _flattened(
    data: dict[str, Any] | None, events: list[str], how: Layout
) -> dict[str, Any] | None:
    if data is None or not how.flat or not isinstance(data.get("hooks"), dict):
        return data
    for event in events:
        groups = data["hooks"].get(event)
        if isinstance(groups, list):
            data["hooks"][event] = [h for g in groups if isinstance(g, dict) for h in g["hooks"]]
    return data


def plan(
    path: Path, install: bool, ours: dict[str, dict[str, Any]], how: Layout | None = None
) -> Change:
    how = how or Layout()
    events = list(ours)
    before, raw = _read(path, events, how)
    start = before if before is not None else how.new_file
    grouped = _grouped(before, events, how)
    if install:
        return Change(
            path, before, _flattened(merged(_grouped(start, events, how), ours), events, how)
        )
    after = _flattened(removed(grouped, ours), events, how)
    if after is None or raw is None:
        return Change(path, before, after)
    for backup in _backups(path):
        try:
            original = backup.read_bytes()
            installed = merged(_grouped(_parse(original, backup), events, how), ours)
        except (OSError, UserError):
            continue
        if installed is not None and dump(_flattened(installed, events, how) or {}) == raw:
            return Change(path, before, after, original=original, original_from=backup)
    created = _flattened(merged(_grouped(how.new_file, events, how), ours), events, how)
    if raw == dump(created or {}):
        return Change(path, before, after, remove=True)  # install created the file
    return Change(path, before, after)


def _backups(path: Path) -> list[Path]:
    """The backups `apply` made of `path`, newest first."""
    found = []
    for backup in path.parent.glob(f"{path.name}.bak-*"):
        stamp, _, n = backup.name.removeprefix(f"{path.name}.bak-").partition("-")
        found.append((stamp, int(n) if n.isdigit() else 0, backup))
    return [b for _, _, b in sorted(found, reverse=True)]


def apply(change: Change) -> Change:
    """Write the change: the old file copied to `<name>.bak-<UTC time>` first, then the new
    content written to a temporary file and renamed over it (same mode as before)."""
    if not change.changed:
        return change
    path = change.path
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists() and not change.owned:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        n = 1
        while backup.exists():
            backup = path.with_name(f"{path.name}.bak-{stamp}-{n}")
            n += 1
        shutil.copy2(path, backup)
    content = change.content
    if content is None:  # uninstall of a file install created
        path.unlink()
    else:
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_bytes(content)
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    return replace(change, backup=backup)
