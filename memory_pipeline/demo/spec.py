"""The vocabulary the demo conversations are written in.

A conversation (`Session`) is a list of `Turn`s: what the user typed, what the agent did in between
(`steps`: commentary, shell commands, file reads, edits, delegations) and the final answer. The same
spec is rendered by `build_corpus.py` into Codex rollouts or Claude Code transcripts, depending on
`Session.tool`. Chat imports (`ImportChat`) are plain message lists.

Times are local wall-clock times of the user (Europe/Berlin); the renderer converts them to UTC.
A turn's `at` is `"HH:MM"` (same day as the previous turn) or `"YYYY-MM-DD HH:MM"` (a new day).

`gold` tags a turn with the ids of the retrieval queries (see `conversations/queries.py`) that must
find it; `plants` records what the turn demonstrates (decision, insight, correction, secret...) so
the README's statistics can be recomputed with
`python -m memory_pipeline.demo.build_corpus --stats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Plant = Literal[
    "decision",
    "insight",
    "correction",
    "secret",
    "topic_switch",
    "contradiction",
    "cross_project",
]


@dataclass(frozen=True)
class Project:
    key: str
    name: str
    cwd: str
    repository_url: str
    agents_md: str | None = None  # injected by Codex as the AGENTS.md context message


# ----------------------------------------------------------------------------------------------
# Steps: what the agent does between the prompt and the final answer.


@dataclass(frozen=True)
class Say:
    """Interim narration (Codex `phase: commentary`, Claude text block before a tool call)."""

    text: str


@dataclass(frozen=True)
class Shell:
    cmd: str
    output: str | None  # None: the command never returned (interrupted or still running)
    exit_code: int = 0
    description: str = ""  # Claude's Bash `description`


@dataclass(frozen=True)
class Read:
    path: str  # relative to the project, or absolute
    content: str


@dataclass(frozen=True)
class Search:
    pattern: str
    path: str
    output: str


@dataclass(frozen=True)
class Edit:
    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Write:
    path: str
    content: str


@dataclass(frozen=True)
class Delegate:
    """The agent hands a sub-task to a subagent (Codex spawn_agent, Claude Agent tool)."""

    key: str
    prompt: str
    steps: tuple[Step, ...]
    answer: str
    description: str = ""  # Claude Agent `description`
    agent_type: str = "Explore"  # Claude `subagent_type` / Codex `agent_role`
    nickname: str = ""  # Codex agent nickname
    agent_path: str = ""  # Codex agent path, e.g. "/root/audit_apt_key"


Step = Say | Shell | Read | Search | Edit | Write | Delegate


# ----------------------------------------------------------------------------------------------
# Turns and sessions.


@dataclass(frozen=True)
class Turn:
    at: str
    prompt: str
    answer: str = ""
    steps: tuple[Step, ...] = ()
    gold: tuple[str, ...] = ()
    plants: tuple[Plant, ...] = ()
    # Codex only: the user interrupted the turn (turn_aborted), or the file ends mid-turn.
    aborted: bool = False
    unfinished: bool = False

    @property
    def complete(self) -> bool:
        return not (self.aborted or self.unfinished)


@dataclass(frozen=True)
class Name:
    """A Codex thread name written to session_index.jsonl (`/rename`); the latest one wins."""

    at: str  # "YYYY-MM-DD HH:MM" local
    name: str


@dataclass(frozen=True)
class Session:
    key: str  # stable spec key; every generated id derives from it
    tool: str  # "codex", "claude", or the agent of a demo/agents/ module that renders it
    project: Project
    date: str  # "YYYY-MM-DD" local date of the first turn
    turns: tuple[Turn, ...]
    branch: str = "main"
    # Codex: "interactive" (TUI), "exec" (codex exec). Claude: "interactive" (cli), "sdk" (-p).
    mode: Literal["interactive", "exec", "sdk"] = "interactive"
    names: tuple[Name, ...] = ()  # Codex session_index entries
    ai_title: str | None = None  # Claude ai-title sidecar
    summary: str = ""  # one line for the README

    @property
    def delegated(self) -> bool:
        return self.mode != "interactive"


# ----------------------------------------------------------------------------------------------
# Chat imports (the generic JSONL format of memory_pipeline.capture.chat_import).


@dataclass(frozen=True)
class Msg:
    speaker: str  # "user" / "assistant" for AI chats, a person's name otherwise
    text: str
    at: str  # "HH:MM" or "YYYY-MM-DD HH:MM" local
    title: str | None = None


@dataclass(frozen=True)
class ChatTurn:
    """Consecutive prompt-side messages followed by consecutive outcome-side messages."""

    prompt: tuple[Msg, ...]
    outcome: tuple[Msg, ...]
    gold: tuple[str, ...] = ()
    plants: tuple[Plant, ...] = ()


@dataclass(frozen=True)
class ImportChat:
    key: str
    task_id: str
    file: str  # path under imports/
    date: str
    turns: tuple[ChatTurn, ...]
    kind: Literal["assistant", "humans"] = "assistant"
    # "utc-naive": timestamps written without offset in UTC; "offset": with the local offset.
    timestamps: Literal["utc-naive", "utc-z", "offset"] = "utc-z"
    summary: str = ""
    project: str = ""


@dataclass(frozen=True)
class Query:
    query: str
    kind: Literal["decision", "insight", "correction", "fact", "procedure"]


def steps(*items: Step) -> tuple[Step, ...]:
    return tuple(items)


__all__ = [
    "ChatTurn",
    "Delegate",
    "Edit",
    "ImportChat",
    "Msg",
    "Name",
    "Project",
    "Query",
    "Read",
    "Say",
    "Search",
    "Session",
    "Shell",
    "Step",
    "Turn",
    "Write",
    "steps",
]
