"""Each agent's hook configuration, one small module each, registered in `AGENTS`.

A module here says, for `memory-pipeline hooks install|uninstall <NAME>`:

    NAME = "claude-code"                  # the CLI's agent argument
    SCOPES = ("user", "project", "local") # the scopes the agent has
    def hook_file(scope: str, settings: Settings, cwd: Path) -> Path
                                          # where the agent reads hooks for that scope
    def entries(handler: Handler) -> dict[str, dict]
                                          # event name -> the matcher group we add; `handler(arg)`
                                          # is our command handler for `memory-pipeline hook <arg>`
                                          # (arg: "session-start" or "prompt")
    AFTER_INSTALL: str | None             # one line printed after an install (or None)

The file format is the one `serving/hooks/install.py` merges: `{"hooks": {event: [{"matcher":
..., "hooks": [handler, ...]}]}}`, which Claude Code, Codex and Gemini CLI share. A new agent is
one module and one line in `AGENTS` (an agent whose events list handlers directly, Kiro CLI's
and Cursor's `{"hooks": {event: [handler]}}`, says `FORMAT = "flat"` and may give `new_file()`,
what a file install creates starts as; OpenCode's plugin is a whole file the module plans itself,
`plan_file`); the hook client (`serving/hooks/client.py`) and its
deadlines and relevance threshold are the same for every agent.
"""

from __future__ import annotations

from types import ModuleType

from serving.hooks.agents import claude_code, codex, cursor, gemini, kiro, opencode

AGENTS: tuple[ModuleType, ...] = (claude_code, codex, opencode, kiro, cursor, gemini)

BY_NAME: dict[str, ModuleType] = {a.NAME: a for a in AGENTS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
