"""Who a session or side thread belongs to (§2.1, §2.3, §2.4): native evidence only.

* Sessions: the §2.4 proposed rule; delegation evidence wins over conflicting user markers.
  `history.jsonl` (prompts typed interactively) confirms a session whose records lack the
  evidence; its problems are never the session file's.
* Side threads are returned as their own task, always ownership `delegated` with a reason code
  (`aside_question` included, see `classify_side_thread`), never merged into the session. Turns
  are returned for Task/Agent and workflow subagents only; compaction, warmup, prompt-suggestion
  and aside threads return no turns because they replay parent context or are harness overhead.
"""

from __future__ import annotations

import json
import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.capture.claude_code.records import Rec, str_or_none
from memory_pipeline.capture.claude_code.turns import TurnBuild
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl
from memory_pipeline.capture.models import OwnershipVerdict

# §2.4 ownership evidence.
SDK_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})
INTERACTIVE_ENTRYPOINTS = frozenset({"cli", "claude-vscode", "claude-desktop"})
HUMAN_PROMPT_SOURCES = frozenset({"typed", "queued", "suggestion_accepted"})

# §2.1 side-thread file ids: `a` + kind + `-` + hex for forked harness threads.
_FORK_KIND_RE = re.compile(r"^a?(compact|prompt_suggestion|side_question)[-_]")
_PLAIN_AGENT_ID_RE = re.compile(r"^a?[0-9a-f]{6,}$")
_META_MAX_BYTES = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------------------------


@dataclass
class History:
    """`<claude_home>/history.jsonl`: prompts typed interactively (§2.1, §2.4)."""

    session_ids: set[str] = field(default_factory=set)
    prompts: set[tuple[str, str]] = field(default_factory=set)  # (project, display), no sessionId


def read_history(path: Path) -> History:
    """Whatever can be read of `history.jsonl`; a bad line there (even one the reader raises on)
    costs that line, never the session being parsed."""
    history = History()
    try:
        for _, obj in iter_jsonl(path, JsonlRead(path)):
            session = str_or_none(obj.get("sessionId"))
            display, project = obj.get("display"), obj.get("project")
            if session is not None:
                history.session_ids.add(session)
            elif isinstance(display, str) and isinstance(project, str):
                history.prompts.add((project, display.strip()))
    except Exception:  # what was read before the failure is still evidence
        pass
    return history


def session_ownership(
    own: list[Rec], build: TurnBuild, history: History, session_id: str | None
) -> OwnershipVerdict:
    """§2.4 proposed rule. Delegation evidence wins over conflicting user markers."""
    entrypoints = sorted({rec.entrypoint for rec in own if rec.entrypoint})
    evidence: dict[str, Any] = {}
    if entrypoints:
        evidence["entrypoint"] = entrypoints[0] if len(entrypoints) == 1 else entrypoints
    sdk_entry = [e for e in entrypoints if e in SDK_ENTRYPOINTS]
    if sdk_entry:
        return OwnershipVerdict(
            ownership="delegated", reason="claude_code:sdk-entrypoint", evidence=evidence
        )
    for prompt in build.prompts:
        if prompt.prompt_source == "sdk" or prompt.turn_origin == "sdk":
            evidence.update(_prompt_evidence(prompt))
            return OwnershipVerdict(
                ownership="delegated", reason="claude_code:sdk-prompt", evidence=evidence
            )
    first = build.first_prompt
    if first is not None:
        evidence.update(_prompt_evidence(first))
    interactive = bool(entrypoints) and all(e in INTERACTIVE_ENTRYPOINTS for e in entrypoints)
    if (
        interactive
        and first is not None
        and (first.prompt_source in HUMAN_PROMPT_SOURCES or first.origin_kind == "human")
    ):
        return OwnershipVerdict(
            ownership="user_owned", reason="claude_code:typed-prompt", evidence=evidence
        )
    if interactive or not entrypoints:
        match = _history_match(history, session_id, first)
        if match is not None:
            evidence["history_match"] = match
            return OwnershipVerdict(
                ownership="user_owned", reason="claude_code:history-match", evidence=evidence
            )
    if not entrypoints:
        reason = "claude_code:no-entrypoint"
    elif interactive:
        reason = "claude_code:unconfirmed-prompt"
    else:
        reason = "claude_code:unrecognized-entrypoint"
    return OwnershipVerdict(ownership="unknown", reason=reason, evidence=evidence)


def _prompt_evidence(prompt: Rec) -> dict[str, Any]:
    fields = {
        "promptSource": prompt.prompt_source,
        "origin.kind": prompt.origin_kind,
        "turnOrigin": prompt.turn_origin,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _history_match(history: History, session_id: str | None, first: Rec | None) -> str | None:
    if session_id is not None and session_id in history.session_ids:
        return "sessionId"
    if first is not None and first.cwd and (first.cwd, first.text) in history.prompts:
        return "project+display"
    return None


# ---------------------------------------------------------------------------------------------
# Side threads (§2.1, §2.3, §2.4)
# ---------------------------------------------------------------------------------------------


@dataclass
class SideThread:
    agent_id: str
    layout: str  # "flat" (≤ 2.0.x, beside the main file) or "subagents"
    project_key: str | None
    session_dir: str | None  # new layout: the <sessionId> directory name
    workflow_run: str | None
    meta: dict[str, Any]


def is_side_thread(path: Path) -> bool:
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def side_thread(path: Path, read: JsonlRead) -> SideThread:
    agent_id = path.stem[len("agent-") :]
    parts = path.parts
    if "subagents" in parts:
        at = len(parts) - 1 - parts[::-1].index("subagents")
        session_dir = parts[at - 1] if at >= 1 else None
        project_key = parts[at - 2] if at >= 2 else None
        run = next((p for p in parts[at + 1 : -1] if p.startswith("wf_")), None)
        layout = "subagents"
    else:
        session_dir, project_key, run, layout = None, path.parent.name, None, "flat"
    return SideThread(agent_id, layout, project_key, session_dir, run, _read_meta(path, read))


def _read_meta(path: Path, read: JsonlRead) -> dict[str, Any]:
    """`agent-<id>.meta.json` beside the transcript (§2.1); {} when absent or unreadable."""
    meta_path = path.with_name(path.stem + ".meta.json")
    try:
        if not stat.S_ISREG(meta_path.stat().st_mode):  # a FIFO would block: never opened
            read.issue("not_a_regular_file", f"{meta_path.name} is not a regular file")
            return {}
        if meta_path.stat().st_size > _META_MAX_BYTES:
            read.issue("line_too_long", f"{meta_path.name} is larger than {_META_MAX_BYTES}")
            return {}
        data = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        read.issue("unreadable", f"{meta_path.name}: {type(exc).__name__}")
        return {}
    except json.JSONDecodeError as exc:
        read.issue("invalid_json", f"{meta_path.name}: {exc.msg}")
        return {}
    except (RecursionError, ValueError) as exc:  # nested too deep, or a 4,301-digit number
        read.issue("invalid_json", f"{meta_path.name}: {type(exc).__name__}")
        return {}
    return data if isinstance(data, dict) else {}


_META_EVIDENCE = ("agentType", "description", "toolUseId", "spawnDepth", "parentAgentId")
# Forked harness threads: they replay the parent's context (§2.1).
_FORK_REASONS = {
    "compact": "claude_code:compaction",
    "prompt_suggestion": "claude_code:prompt-suggestion",
    "side_question": "claude_code:aside-question",
}


def classify_side_thread(
    side: SideThread, first_prompt: str | None, sidechain: bool
) -> OwnershipVerdict:
    """Reason code for a side thread (§2.4 table, first row).

    `aside_question` (/btw): the question is the user's, but the file is a harness fork that
    replays the parent session's context, and the answer is an ephemeral overlay that never joins
    the conversation. The session file is the user's capture unit, so the fork is classified
    `delegated` with reason `claude_code:aside-question` and yields no turns: the store keeps only
    user-owned tasks, and a `user_owned` fork would become a second, empty task of the session.
    """
    meta = side.meta
    evidence: dict[str, Any] = {"agentId": side.agent_id, "isSidechain": sidechain}
    evidence.update({k: _evidence_value(meta[k]) for k in _META_EVIDENCE if k in meta})
    fork = _FORK_KIND_RE.match(side.agent_id)
    if fork is not None:
        return _delegated(_FORK_REASONS[fork.group(1)], evidence)
    if side.workflow_run is not None or meta.get("agentType") == "workflow-subagent":
        if side.workflow_run is not None:
            evidence["workflow_run"] = side.workflow_run
        return _delegated("claude_code:workflow-subagent", evidence)
    if "toolUseId" not in meta and first_prompt == "Warmup":
        evidence["first_prompt"] = "Warmup"
        return _delegated("claude_code:warmup", evidence)
    if "toolUseId" in meta or "agentType" in meta or _PLAIN_AGENT_ID_RE.match(side.agent_id):
        return _delegated("claude_code:subagent", evidence)
    return _delegated("claude_code:sidechain", evidence)


def _evidence_value(value: Any) -> Any:
    """Evidence is stored as JSON: scalars verbatim, anything else (nested values, NaN or
    infinite numbers, which PostgreSQL's jsonb refuses) by its type name."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return f"<{type(value).__name__}>"


def _delegated(reason: str, evidence: dict[str, Any]) -> OwnershipVerdict:
    return OwnershipVerdict(ownership="delegated", reason=reason, evidence=evidence)


# Side threads whose turns are delegated work worth returning (the store does not keep them).
SIDE_REASONS_WITH_TURNS = frozenset({"claude_code:subagent", "claude_code:workflow-subagent"})
