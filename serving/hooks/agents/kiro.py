"""Kiro CLI's hooks: the `hooks` of an agent configuration (aws/amazon-q-developer-cli
`crates/chat-cli/src/cli/agent/hook.rs` and `agent/mod.rs`, which Kiro CLI keeps).

An agent file is `<KIRO_HOME>/agents/<name>.json` (user: every directory) or
`<repo>/.kiro/agents/<name>.json` (project). Its `hooks` maps a trigger to a flat list of
handlers, not matcher groups: `{"hooks": {"agentSpawn": [{"command": "...", "timeout_ms":
10000}], "userPromptSubmit": [...]}}`. Kiro runs each command with `bash -c`, writes
`{"hook_event_name": "agentSpawn"|"userPromptSubmit", "cwd": ..., "prompt": ...}` on its stdin
and adds what it prints (plain text, at most `max_output_size` bytes, 10 KiB by default) to the
model's context; a failing or slow hook only costs its own output.

The built-in default agent has no file, so install writes (or merges into) an agent of its own,
`memory-pipeline`, that is the default agent plus our two hooks; Kiro uses it once it is the
default (`kiro-cli settings chat.defaultAgent memory-pipeline`) or chosen (`--agent`). The
agent schema refuses unknown fields (`deny_unknown_fields`), so a created file holds only the
default agent's own fields. Kiro IDE's agent hooks (`.kiro/hooks/*.kiro.hook`) run an agent or a
shell command on IDE events; none adds a command's output to a chat's context, so the IDE gets
memory through MCP only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.settings import Settings

NAME = "kiro"
SCOPES = ("user", "project")
FORMAT = "flat"  # `hooks.<event>` is a list of handlers (install.py merges both formats)
AGENT = "memory-pipeline"
# `default_schema()` of agent/mod.rs: what Kiro writes into an agent file it creates.
SCHEMA = (
    "https://raw.githubusercontent.com/aws/amazon-q-developer-cli/refs/heads/main/schemas/"
    "agent-v1.json"
)
AFTER_INSTALL: str | None = (
    f"make it Kiro CLI's default agent: kiro-cli settings chat.defaultAgent {AGENT}"
    f" (or start chats with --agent {AGENT})"
)


def hook_file(scope: str, settings: Settings, cwd: Path) -> Path:
    from memory_pipeline.errors import UserError

    if scope == "local":
        raise UserError("Kiro has no local scope; use --scope user or --scope project")
    if scope == "user":
        return settings.source_home("kiro_cli") / "agents" / f"{AGENT}.json"
    return cwd / ".kiro" / "agents" / f"{AGENT}.json"


def _kiro(handler: dict[str, Any]) -> dict[str, Any]:
    """A Claude-style handler as Kiro's `Hook` (`command`, `timeout_ms`)."""
    return {"command": handler["command"], "timeout_ms": int(handler["timeout"]) * 1000}


def entries(handler: Callable[[str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Trigger -> our hooks, as the one group install.py merges (written back flat)."""
    return {
        "agentSpawn": {"hooks": [_kiro(handler("session-start"))]},
        "userPromptSubmit": {"hooks": [_kiro(handler("prompt"))]},
    }


def new_file() -> dict[str, Any]:
    """The agent file install creates: Kiro's default agent (`Agent::default()`), named ours."""
    return {
        "$schema": SCHEMA,
        "name": AGENT,
        "description": (
            "The default agent, with memory-pipeline's memory at session start and every prompt"
        ),
        "prompt": None,
        "mcpServers": {},
        "tools": ["*"],
        "toolAliases": {},
        "allowedTools": [],
        "resources": ["file://AGENTS.md", "file://README.md", "file://.kiro/steering/**/*.md"],
        "toolsSettings": {},
        "useLegacyMcpJson": True,
        "model": None,
    }
