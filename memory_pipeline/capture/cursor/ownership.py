"""Who a Cursor conversation belongs to, from native evidence only (FORMAT.md §5).

Delegation evidence wins over conflicting user markers:

Delegated:
* `cursor:subagent`: the composerId starts with `task-` (a Task subagent's own composer), or
  another composer lists it in `subComposerIds`; an agent transcript under `subagents/`;
* `cursor:best-of-n-worker`: `isBestOfNSubcomposer: true` (one worker of a best-of-N run);
* `cursor:background-agent`: `unifiedMode: "background"`, or a bubble with `capabilityType`
  21 (BACKGROUND_COMPOSER).

User-owned:
* `cursor:typed-prompt`: the first user bubble carries the editor state (`richText`, the
  Lexical JSON of the composer's input box): it was typed or pasted into Cursor;
* `cursor:cli-prompt-history`: an agent transcript whose first prompt is in the CLI's
  `prompt_history.json` (prompts typed in the interactive `cursor-agent`).

Unknown (skipped, recorded):
* `cursor:no-editor-state`: a composer whose first prompt has no editor state;
* `cursor:cli-unconfirmed`: an agent transcript without that history match (a headless
  `cursor-agent -p` run types nothing into the history).
"""

from __future__ import annotations

from typing import Any

from memory_pipeline.capture.cursor.bubbles import Turns, has_editor_state
from memory_pipeline.capture.models import OwnershipVerdict

SUBAGENT_PREFIX = "task-"


def _scalar(value: Any) -> Any:
    return (
        value
        if isinstance(value, (str, bool, int)) or value is None
        else f"<{type(value).__name__}>"
    )


def composer_ownership(
    composer_id: str,
    composer: dict[str, Any],
    turns: Turns,
    parent: str | None,
) -> OwnershipVerdict:
    evidence: dict[str, Any] = {
        k: _scalar(composer[k]) for k in ("unifiedMode", "forceMode", "isAgentic") if k in composer
    }
    if composer_id.startswith(SUBAGENT_PREFIX) or parent is not None:
        evidence["composerId"] = composer_id[:80]
        if parent is not None:
            evidence["parentComposerId"] = parent
        return OwnershipVerdict(ownership="delegated", reason="cursor:subagent", evidence=evidence)
    if composer.get("isBestOfNSubcomposer") is True:
        evidence["isBestOfNSubcomposer"] = True
        return OwnershipVerdict(
            ownership="delegated", reason="cursor:best-of-n-worker", evidence=evidence
        )
    if composer.get("unifiedMode") == "background" or "background" in turns.kinds:
        if "background" in turns.kinds:
            evidence["capabilityType"] = 21
        return OwnershipVerdict(
            ownership="delegated", reason="cursor:background-agent", evidence=evidence
        )
    first = turns.first_user
    if first is not None and has_editor_state(first.data):
        evidence["richText"] = True
        return OwnershipVerdict(
            ownership="user_owned", reason="cursor:typed-prompt", evidence=evidence
        )
    evidence["richText"] = False
    return OwnershipVerdict(ownership="unknown", reason="cursor:no-editor-state", evidence=evidence)


def transcript_ownership(
    subagent: bool, first_prompt: str | None, typed: set[str]
) -> OwnershipVerdict:
    if subagent:
        return OwnershipVerdict(
            ownership="delegated", reason="cursor:subagent", evidence={"layout": "subagents/"}
        )
    if first_prompt is not None and first_prompt.strip() in typed:
        return OwnershipVerdict(
            ownership="user_owned",
            reason="cursor:cli-prompt-history",
            evidence={"prompt_history": "first prompt"},
        )
    return OwnershipVerdict(
        ownership="unknown",
        reason="cursor:cli-unconfirmed",
        evidence={"prompt_history": "no match" if typed else "absent"},
    )
