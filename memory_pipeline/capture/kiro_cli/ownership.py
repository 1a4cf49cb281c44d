"""Who owns a Kiro CLI conversation, from native evidence only. Delegation evidence wins.

* delegated, `kiro_cli:subagent`: the v2 sidecar's `parent_session_id` is set (a session
  another session spawned);
* user_owned, `kiro_cli:typed-prompt`: a prompt of the conversation is in the REPL history
  (`.cli_bash_history`);
* unknown (skipped), `kiro_cli:no-typed-prompt`: neither.

Neither store marks `--no-interactive` runs, ACP (`kiro-cli acp`) clients, scripts or the
`delegate` tool's background `chat --non-interactive` children: they write the same records an
interactive chat does. What tells them apart is that their prompts arrive on the command line
or over a pipe and never pass through the REPL, which alone writes the history file
(`typed.py`). `session_created_reason` is kept as evidence but not trusted: a reader of the v2
store reports it as `"subagent"` on every session, the interactive ones included.
"""

from __future__ import annotations

from typing import Any

from memory_pipeline.capture.codex.fields import bounded, string
from memory_pipeline.capture.kiro_cli.typed import TypedPrompts
from memory_pipeline.capture.models import OwnershipVerdict

SIDECAR_EVIDENCE = ("parent_session_id", "session_created_reason")


def ownership(
    prompts: list[str], typed: TypedPrompts, sidecar: dict[str, Any] | None = None
) -> OwnershipVerdict:
    evidence: dict[str, Any] = {}
    if sidecar is not None:
        evidence = {k: bounded(sidecar[k]) for k in SIDECAR_EVIDENCE if sidecar.get(k) is not None}
        state = sidecar.get("session_state")
        if isinstance(state, dict) and string(state.get("agent_name")):
            evidence["agent_name"] = state["agent_name"]
        if string(sidecar.get("parent_session_id")):
            return OwnershipVerdict(
                ownership="delegated", reason="kiro_cli:subagent", evidence=evidence
            )
    found = typed.typed(prompts)
    if found is not None:
        evidence["typed_prompt"] = found[:200]
        return OwnershipVerdict(
            ownership="user_owned", reason="kiro_cli:typed-prompt", evidence=evidence
        )
    evidence["history_files"] = [str(p) for p in typed.state_paths()]
    return OwnershipVerdict(
        ownership="unknown", reason="kiro_cli:no-typed-prompt", evidence=evidence
    )
