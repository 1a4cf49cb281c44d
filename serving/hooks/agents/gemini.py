"""Gemini CLI's hooks: the `hooks` of its settings files (google-gemini/gemini-cli @ 5411f113,
`docs/hooks/reference.md`, `packages/core/src/hooks/types.ts`, `hookPlanner.ts`,
`hookRunner.ts`): `~/.gemini/settings.json` (user; `$GEMINI_CLI_HOME/.gemini` when
GEMINI_CLI_HOME is set) or `<project>/.gemini/settings.json` (project; Gemini fingerprints project
hooks and asks before it runs a new one). No local scope.

The shape is Claude Code's, event -> matcher groups -> handlers: `{"hooks": {"SessionStart":
[{"matcher": "*", "hooks": [{"type": "command", "command": "...", "name": "...", "timeout":
10000}]}], "BeforeAgent": [...]}}`, but `timeout` is in milliseconds (default 60000) and a
lifecycle matcher is an exact source name (`startup`, `resume`, `clear`) or `*` for all.
`SessionStart` and `BeforeAgent` (after a prompt is submitted, before planning; its payload has
`prompt`) add `hookSpecificOutput.additionalContext` to the model's context: the first turn in
the interactive UI, prepended to the prompt in `gemini -p`, appended to the prompt for
`BeforeAgent`. Gemini reads stdout as JSON when it parses; exit code 2 would block the prompt,
which our hook command never returns (it always exits 0, printing nothing on a failure).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

NAME = "gemini"
SCOPES = ("user", "project")
SESSION_MATCHER = "*"  # lifecycle matchers are exact strings; `*` matches every start source
HOOK_NAME = "memory-pipeline"
AFTER_INSTALL: str | None = None


def hook_file(scope: str, settings: Settings, cwd: Path) -> Path:
    """`settings.json` in Gemini CLI's directory (the gemini_cli source's root), or the
    project's `.gemini/settings.json`."""
    if scope == "local":
        raise UserError("Gemini CLI has no local scope; use --scope user or --scope project")
    if scope == "user":
        return settings.source_home("gemini_cli") / "settings.json"
    return cwd / ".gemini" / "settings.json"


def _gemini(handler: dict[str, Any], which: str) -> dict[str, Any]:
    """A Claude-style handler (timeout in seconds) as Gemini's (milliseconds, with a name)."""
    return {
        "type": "command",
        "command": handler["command"],
        "name": f"{HOOK_NAME}-{which}",
        "timeout": int(handler["timeout"]) * 1000,
    }


def entries(handler: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        "SessionStart": {
            "matcher": SESSION_MATCHER,
            "hooks": [_gemini(handler("session-start"), "session-start")],
        },
        "BeforeAgent": {"hooks": [_gemini(handler("prompt"), "prompt")]},
    }
