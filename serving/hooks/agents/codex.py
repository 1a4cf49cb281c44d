"""Codex's hooks (https://developers.openai.com/codex/hooks.md, "Where Codex looks for hooks"):
`~/.codex/hooks.json` (user, under CODEX_HOME) or `<repo>/.codex/hooks.json` (project), the
same JSON as Claude Code's; hooks are on by default (older versions need `[features]
codex_hooks = true` in config.toml) and a new command hook runs only once trusted in Codex's
`/hooks`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

NAME = "codex"
SCOPES = ("user", "project")
SESSION_MATCHER = "startup|resume|clear"
AFTER_INSTALL: str | None = (
    "open /hooks in Codex and trust the two new hooks: Codex skips them until you do"
)


def hook_file(scope: str, settings: Settings, cwd: Path) -> Path:
    if scope == "local":
        raise UserError("Codex has no local scope; use --scope user or --scope project")
    if scope == "user":
        return settings.source_home("codex") / "hooks.json"
    return cwd / ".codex" / "hooks.json"


def entries(handler: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        "SessionStart": {"matcher": SESSION_MATCHER, "hooks": [handler("session-start")]},
        "UserPromptSubmit": {"hooks": [handler("prompt")]},
    }
