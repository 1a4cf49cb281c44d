"""Who owns a Gemini CLI session, from native evidence only. Delegation evidence wins.

* delegated, `gemini_cli:subagent`: the session's `kind` is `"subagent"`, or its file lies in a
  parent session's directory (`chats/<parentSessionId>/<id>.jsonl`): a subagent the main agent
  ran (`agents/local-executor.ts` `chat.initialize(undefined, 'subagent')`);
* user_owned, `gemini_cli:typed-prompt`: the project's `logs.json` holds prompts of this
  session (the interactive UI logs every typed prompt there, `core/logger.ts`);
* delegated, `gemini_cli:non-interactive`: `logs.json` is there and readable but holds no
  prompt of this session: its prompts came from `gemini -p`, a pipe or a script
  (`nonInteractiveCli.ts` never writes the log);
* unknown (skipped), `gemini_cli:no-prompt`: no prompt in the session yet (a session Gemini
  has just started: the UI logs a prompt before the session records it, so a session with a
  prompt and no log entry is not interactive, but one without any prompt says nothing);
* unknown (skipped), `gemini_cli:no-prompt-log`: no readable `logs.json` beside the session
  (deleted, damaged, a copy of the session file alone, or a project only ever driven by
  `gemini -p`: the non-interactive CLI creates the log only for a slash command,
  `nonInteractiveCliCommands.ts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_pipeline.capture.models import OwnershipVerdict


def ownership(
    kind: Any, parent: str | None, log_read: bool, typed: list[str], logs: Path, prompts: int
) -> OwnershipVerdict:
    evidence: dict[str, Any] = {}
    if kind is not None:
        evidence["kind"] = kind if isinstance(kind, str) else str(kind)[:40]
    if parent:
        evidence["parent_session_id"] = parent
    if kind == "subagent" or parent:
        return OwnershipVerdict(
            ownership="delegated", reason="gemini_cli:subagent", evidence=evidence
        )
    if typed:
        evidence["typed_prompts"] = len(typed)
        evidence["typed_prompt"] = typed[0][:200]
        return OwnershipVerdict(
            ownership="user_owned", reason="gemini_cli:typed-prompt", evidence=evidence
        )
    evidence["logs"] = str(logs)
    if not prompts:  # nothing asked yet: an interactive session logs its prompt before sending it
        return OwnershipVerdict(
            ownership="unknown", reason="gemini_cli:no-prompt", evidence=evidence
        )
    if log_read:
        return OwnershipVerdict(
            ownership="delegated", reason="gemini_cli:non-interactive", evidence=evidence
        )
    return OwnershipVerdict(
        ownership="unknown", reason="gemini_cli:no-prompt-log", evidence=evidence
    )
