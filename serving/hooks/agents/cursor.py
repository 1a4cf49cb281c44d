"""Cursor's hook file: `~/.cursor/hooks.json` (user) or `<project>/.cursor/hooks.json` (project).

Shape (Cursor docs "Hooks"; a real install: rohitg00/agentmemory `plugin/cursor/hooks.json`):
`{"version": 1, "hooks": {"sessionStart": [{"command": "..."}], "beforeSubmitPrompt": [...]}}`,
each event a flat list of handler objects (no matcher groups, unlike Claude Code and Codex).

This module is an agent of `serving/hooks/agents/` with its own file format: install.py uses its
`shape_problem`, `merged` and `removed` instead of the matcher-group ones. We add one
`sessionStart` handler: the only Cursor event whose output adds context
(`additional_context`, see payload.py). `beforeSubmitPrompt` can only allow or block a prompt,
so nothing is installed there: in Cursor, memory for a prompt comes from the MCP server.

Install keeps everything else, adds nothing already there; uninstall removes exactly the handlers
whose command is ours (the event list, and `hooks`, only when that leaves them empty).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

NAME = "cursor"
SCOPES = ("user", "project")
AFTER_INSTALL: str | None = (
    "Cursor adds memory at session start only (its prompt hook cannot add context); for"
    " memory on every prompt add the MCP server to ~/.cursor/mcp.json (README: Cursor)"
)
EVENT = "sessionStart"
VERSION = 1


def hook_file(scope: str, settings: Settings, cwd: Path) -> Path:
    """`~/.cursor/hooks.json` (CURSOR_DATA_DIR: the last root of the cursor source), or the
    project's `.cursor/hooks.json`."""
    if scope == "local":
        raise UserError("Cursor has no local scope; use --scope user or --scope project")
    if scope == "user":
        return settings.source_homes["cursor"][-1] / "hooks.json"
    return cwd / ".cursor" / "hooks.json"


def entries(handler: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Event -> the handler we add: Cursor's handler is `{"command": ...}` only, and the
    command names the agent so the client answers in Cursor's output shape."""
    return {EVENT: {"command": handler("session-start")["command"] + " --agent cursor"}}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "null")


def shape_problem(data: dict[str, Any], events: list[str]) -> tuple[str, str, str] | None:
    """(where, what was found, what is expected) of the first entry of the wrong type."""
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        return "hooks", _kind(hooks), 'an object of events ({"sessionStart": [...]})'
    for event in events:
        handlers = hooks.get(event)
        if handlers is None:
            continue
        if not isinstance(handlers, list):
            return f"hooks.{event}", _kind(handlers), 'a list of handlers ([{"command": "..."}])'
        for i, handler in enumerate(handlers):
            if not isinstance(handler, dict):
                return f"hooks.{event}[{i}]", _kind(handler), 'a handler ({"command": "..."})'
            if not isinstance(handler.get("command", ""), str):
                return f"hooks.{event}[{i}].command", _kind(handler["command"]), "a string"
    return None


def merged(data: dict[str, Any] | None, ours: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """`data` with our handlers added where their command is missing; None if nothing is."""
    out = json.loads(json.dumps(data or {}))
    out.setdefault("version", VERSION)
    hooks = out.setdefault("hooks", {})
    added = False
    for event, handler in ours.items():
        handlers = hooks.setdefault(event, [])
        present = {h.get("command") for h in handlers if isinstance(h, dict)}
        if handler["command"] not in present:
            handlers.append(handler)
            added = True
    return out if added else None


def removed(data: dict[str, Any] | None, ours: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """`data` without our handlers; None if none is there."""
    if not data or not isinstance(data.get("hooks"), dict):
        return None
    out = json.loads(json.dumps(data))
    hooks = out["hooks"]
    gone = False
    for event, handler in ours.items():
        handlers = hooks.get(event)
        if not isinstance(handlers, list):
            continue
        kept = [
            h
            for h in handlers
            if not (isinstance(h, dict) and h.get("command") == handler["command"])
        ]
        if len(kept) != len(handlers):
            gone = True
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if gone and not hooks:
        del out["hooks"]
    return out if gone else None
