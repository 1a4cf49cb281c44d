"""Cursor's hook file: `~/.cursor/hooks.json` (user) or `<project>/.cursor/hooks.json` (project).

Shape (Cursor docs "Hooks"; a real install: rohitg00/agentmemory `plugin/cursor/hooks.json`):
`{"version": 1, "hooks": {"sessionStart": [{"command": "..."}], "beforeSubmitPrompt": [...]}}`,
each event a flat list of handler objects (no matcher groups, unlike Claude Code and Codex).

Like Kiro CLI's agent files, the file is `FORMAT = "flat"` for install.py (merged as one group
per event, written back flat; a file install creates starts as `new_file()`). We add one
`sessionStart` handler: the only Cursor event whose output adds context
(`additional_context`, see payload.py). `beforeSubmitPrompt` can only allow or block a prompt,
so nothing is installed there: in Cursor, memory for a prompt comes from the MCP server.

Install keeps everything else, adds nothing already there; uninstall removes exactly the handlers
whose command is ours (the event list, and `hooks`, only when that leaves them empty).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

NAME = "cursor"
FORMAT = "flat"  # `hooks.<event>` is a list of handlers
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
    """Event -> our handler, as the one group install.py merges (written back flat): Cursor's
    handler is `{"command": ...}` only, and the command names the agent so the client answers
    in Cursor's output shape."""
    command = handler("session-start")["command"] + " --agent cursor"
    return {EVENT: {"hooks": [{"command": command}]}}


def new_file() -> dict[str, Any]:
    """What install creates: Cursor's hooks file with its schema version."""
    return {"version": VERSION}
