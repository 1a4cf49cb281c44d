"""The sources of captured tasks: ONE registry that pipeline and serving both read.

Each entry says what a source is called (the `source` column of `tasks`, the `--source` filter
value, `MEMORY_EXCLUDE=source:NAME`), how people name it, where its agent writes (the roots and
their override variables, read by `Settings.from_env`), where its demo sessions are, and which
factory builds its connector. Adding a connector is one `SourceSpec` line in `SOURCES` plus its
package (see `memory_pipeline/capture/CONNECTORS.md`).

This module imports nothing of the pipeline or of serving: the connector factory is named by
its import path (`"package.module:function"`) and imported only by capture when it builds the
connectors (`memory_pipeline/capture/sources.py`), so serving never loads a parser.

A root is where the connector looks, not a file it reads: a connector may get several roots
(each default that applies, or several paths in one variable) and must ignore a root that does
not exist.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.models.inbox import INBOX_KINDS


@dataclass(frozen=True)
class Root:
    """One place a source's agent writes, and the variable that moves it.

    `defaults` are used when the variable is unset: `~` is the user's home and `{memory_home}`
    MEMORY_HOME; every default is passed (the connector skips those that do not exist), so a
    Linux and a macOS location can both be listed. `many`: the variable holds several paths
    separated by `os.pathsep` (`:`), e.g. repositories to look in. `below`: the root is that
    path below the variable's value, for an agent whose variable replaces the home directory
    (Gemini CLI's GEMINI_CLI_HOME: the root is `$GEMINI_CLI_HOME/.gemini`).
    """

    env: str | None
    defaults: tuple[str, ...]
    many: bool = False
    below: str = ""


@dataclass(frozen=True)
class SourceSpec:
    name: str  # the stored `source` value: lowercase, [a-z0-9_]
    display: str  # how the UI and the MCP schema name it: "Claude Code"
    title_prefix: str  # the offline rules' title prefix: "Codex" (semantic/offline_rules/titles)
    described: str  # what the semantic pass's prompt calls it: "Codex CLI"
    # "module:function" with `function(roots: list[Path], options: ConnectorOptions) -> Connector`
    factory: str
    roots: tuple[Root, ...]
    demo: tuple[str, ...]  # the demo corpus' roots, relative to memory_pipeline/demo/corpus/
    # The keyword `SourceRoots(...)` accepts for this source's root (older callers and tests).
    keyword: str
    # What is read, for the agent_transcripts asset's description: "Codex CLI rollouts (...)".
    reads: str = ""


SOURCES: tuple[SourceSpec, ...] = (
    SourceSpec(
        name="codex",
        display="Codex CLI",
        title_prefix="Codex",
        described="Codex CLI",
        factory="memory_pipeline.capture.codex.connector:build",
        roots=(Root("CODEX_HOME", ("~/.codex",)),),
        demo=("codex_home",),
        keyword="codex_home",
        reads="Codex CLI rollouts ($CODEX_HOME/sessions, archived_sessions)",
    ),
    SourceSpec(
        name="claude_code",
        display="Claude Code",
        title_prefix="Claude Code",
        described="Claude Code",
        factory="memory_pipeline.capture.claude_code.connector:build",
        roots=(Root("CLAUDE_CONFIG_DIR", ("~/.claude",)),),
        demo=("claude_home",),
        keyword="claude_home",
        reads="Claude Code transcripts ($CLAUDE_CONFIG_DIR/projects)",
    ),
    SourceSpec(
        name="chat_import",
        display="imported chats",
        title_prefix="Chat",
        described="imported chat",
        factory="memory_pipeline.capture.chat_import:build",
        roots=(Root("MEMORY_IMPORT_DIR", ("{memory_home}/imports",)),),
        demo=("imports",),
        keyword="import_dir",
        reads="chat exports dropped into MEMORY_IMPORT_DIR",
    ),
    SourceSpec(
        name="opencode",
        display="OpenCode",
        title_prefix="OpenCode",
        described="OpenCode",
        factory="memory_pipeline.capture.opencode.connector:build",
        # OpenCode keeps its data in $XDG_DATA_HOME/opencode (xdg-basedir: ~/.local/share on
        # Linux and macOS alike); OPENCODE_DB names its database elsewhere.
        roots=(
            Root("XDG_DATA_HOME", ("~/.local/share/opencode",), below="opencode"),
            Root("OPENCODE_DB", ()),
        ),
        demo=("opencode_home",),
        keyword="opencode_home",
        reads="OpenCode sessions ($XDG_DATA_HOME/opencode: opencode.db, storage/)",
    ),
    SourceSpec(
        name="aider",
        display="Aider",
        title_prefix="Aider",
        described="Aider",
        factory="memory_pipeline.capture.aider.connector:build",
        # Aider writes into each repository: the ones named, and those found under the roots.
        roots=(
            Root("MEMORY_AIDER_REPOS", (), many=True),
            Root("MEMORY_AIDER_ROOTS", (), many=True),
            Root("AIDER_CHAT_HISTORY_FILE", ()),
        ),
        demo=("aider",),
        keyword="aider_roots",
        reads="Aider chat histories (.aider.chat.history.md in MEMORY_AIDER_REPOS / _ROOTS)",
    ),
    SourceSpec(
        name="kiro_cli",
        display="Kiro CLI",
        title_prefix="Kiro",
        described="Kiro CLI",
        factory="memory_pipeline.capture.kiro_cli.connector:build",
        roots=(
            Root("KIRO_HOME", ("~/.kiro",)),
            Root(
                "MEMORY_KIRO_CLI_DATA",
                (
                    "~/.local/share/kiro-cli",
                    "~/Library/Application Support/kiro-cli",
                    "~/.local/share/amazon-q",
                    "~/Library/Application Support/amazon-q",
                    "~/.aws/amazonq",
                ),
                many=True,
            ),
        ),
        demo=("kiro_home",),
        keyword="kiro_home",
        reads="Kiro CLI sessions ($KIRO_HOME/sessions/cli) and data.sqlite3 conversations",
    ),
    SourceSpec(
        name="kiro_ide",
        display="Kiro IDE",
        title_prefix="Kiro",
        described="Kiro IDE",
        factory="memory_pipeline.capture.kiro_ide.connector:build",
        roots=(
            Root(
                "MEMORY_KIRO_IDE_DIR",
                (
                    "~/.config/Kiro/User/globalStorage/kiro.kiroagent",
                    "~/Library/Application Support/Kiro/User/globalStorage/kiro.kiroagent",
                ),
                many=True,
            ),
        ),
        demo=("kiro_ide/kiro.kiroagent",),
        keyword="kiro_ide_dir",
        reads="Kiro IDE chats (globalStorage kiro.kiroagent: workspace-sessions, .chat files)",
    ),
    SourceSpec(
        name="cursor",
        display="Cursor",
        title_prefix="Cursor",
        described="Cursor",
        factory="memory_pipeline.capture.cursor.connector:build",
        roots=(
            # The IDE's user directory (Cursor has no variable of its own, only --user-data-dir).
            Root(
                "MEMORY_CURSOR_USER_DIR",
                ("~/.config/Cursor/User", "~/Library/Application Support/Cursor/User"),
            ),
            Root("CURSOR_DATA_DIR", ("~/.cursor",)),  # cursor-agent: projects/, chats/
        ),
        demo=("cursor",),
        keyword="cursor_home",
        reads="Cursor's state.vscdb stores (globalStorage, workspaceStorage) and cursor-agent"
        " transcripts (~/.cursor/projects/*/agent-transcripts)",
    ),
    SourceSpec(
        name="gemini_cli",
        display="Gemini CLI",
        title_prefix="Gemini",
        described="Gemini CLI",
        factory="memory_pipeline.capture.gemini_cli.connector:build",
        # GEMINI_CLI_HOME replaces the home directory (utils/paths.ts homedir()): the root is
        # $GEMINI_CLI_HOME/.gemini; ~/.gemini on Linux and macOS alike.
        roots=(Root("GEMINI_CLI_HOME", ("~/.gemini",), below=".gemini"),),
        demo=("gemini_home/.gemini",),
        keyword="gemini_home",
        reads="Gemini CLI sessions (~/.gemini/tmp/<project>/chats: session-*.json, *.jsonl)",
    ),
)

# Sources of stored memories that are not captured tasks (the dream cycle's syntheses).
DERIVED_SOURCES = ("dream_cycle",)

SOURCE_NAMES: tuple[str, ...] = tuple(s.name for s in SOURCES)
# Every `memories.source_type`: a captured task's source, the dream cycle's, an inbox kind.
MEMORY_SOURCES: tuple[str, ...] = (*SOURCE_NAMES, *DERIVED_SOURCES, *INBOX_KINDS)
BY_NAME: dict[str, SourceSpec] = {s.name: s for s in SOURCES}


def spec(name: str) -> SourceSpec:
    """The registry entry of `name` (KeyError for a name that is not a source)."""
    return BY_NAME[name]


def display_name(name: str) -> str:
    """How people call a source ("Claude Code"); the name itself when it is not registered."""
    found = BY_NAME.get(name)
    return found.display if found else name


def names_help() -> str:
    """`codex (Codex CLI), claude_code (Claude Code), ...` for help texts and schemas."""
    return ", ".join(f"{s.name} ({s.display})" for s in SOURCES)


def expand(template: str, memory_home: Path) -> Path:
    """A default root: `~` is the home directory, `{memory_home}` MEMORY_HOME."""
    if template.startswith("{memory_home}"):
        return memory_home / template.removeprefix("{memory_home}").lstrip("/")
    return Path(template).expanduser()


def resolve_roots(
    source: SourceSpec, environ: Mapping[str, str] | None, memory_home: Path
) -> list[Path]:
    """The roots of `source`: each root's variable when set, else its defaults, in order."""
    env = os.environ if environ is None else environ
    found: list[Path] = []
    for root in source.roots:
        value = env.get(root.env) if root.env else None
        if value:
            parts = value.split(os.pathsep) if root.many else [value]
            found += [Path(p).expanduser() / root.below for p in parts if p]
        else:
            found += [expand(t, memory_home) for t in root.defaults]
    return found
