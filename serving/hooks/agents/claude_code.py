"""Claude Code's hooks (https://code.claude.com/docs/en/hooks, "Configuration"; settings files in
https://code.claude.com/docs/en/settings): `~/.claude/settings.json` (user, under
CLAUDE_CONFIG_DIR), `.claude/settings.json` (project), `.claude/settings.local.json` (local).
SessionStart's matcher is the start source (`startup|resume|clear|compact`); UserPromptSubmit
takes no matcher. `timeout` is in seconds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.settings import Settings

NAME = "claude-code"
SCOPES = ("user", "project", "local")
SESSION_MATCHER = "startup|resume|clear|compact"
AFTER_INSTALL: str | None = None


def hook_file(scope: str, settings: Settings, cwd: Path) -> Path:
    if scope == "user":
        return settings.source_home("claude_code") / "settings.json"
    return cwd / ".claude" / ("settings.local.json" if scope == "local" else "settings.json")


def entries(handler: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        "SessionStart": {"matcher": SESSION_MATCHER, "hooks": [handler("session-start")]},
        "UserPromptSubmit": {"hooks": [handler("prompt")]},
    }
