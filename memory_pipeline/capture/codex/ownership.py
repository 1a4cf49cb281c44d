"""Who owns a Codex thread, from native evidence only (notes §1.4, "Proposed rule (Codex)").

The verdict rests on the thread's first own session_meta. Delegation evidence always wins.
Fields compared against a vocabulary (`source`, `originator`, `thread_source`) count only with
the type Codex writes (the normaliser records any other type); identity fields whose mere
presence means delegation count whatever their value. Evidence is kept verbatim but bounded in
depth, so storing it can never fail.
"""

from __future__ import annotations

from typing import Any, Literal

from memory_pipeline.capture.codex.fields import bounded, string
from memory_pipeline.capture.models import OwnershipVerdict

FIRST_PARTY_ORIGINATORS = frozenset({"codex_cli_rs", "codex-tui", "codex_vscode"})
USER_CUSTOM_SOURCES = frozenset({"atlas", "chatgpt"})
DELEGATED_THREAD_SOURCES = frozenset({"subagent", "memory_consolidation"})
AGENT_IDENTITY_FIELDS = ("agent_nickname", "agent_role", "agent_type", "agent_path")
EVIDENCE_FIELDS = (
    "source",
    "originator",
    "thread_source",
    "parent_thread_id",
    *AGENT_IDENTITY_FIELDS,
)


def ownership(meta: dict[str, Any] | None) -> OwnershipVerdict:
    """Classify from the thread's first own session_meta. Delegation evidence always wins."""
    if meta is None:
        return OwnershipVerdict(ownership="unknown", reason="codex:no-session-meta")
    evidence = {k: bounded(meta[k]) for k in EVIDENCE_FIELDS if meta.get(k) is not None}
    source = meta.get("source")
    source_obj = source if isinstance(source, dict) else {}
    source_str = string(source)
    originator = string(meta.get("originator"))
    thread_source = string(meta.get("thread_source"))

    def verdict(ownership: Literal["user_owned", "delegated", "unknown"], reason: str):
        return OwnershipVerdict(ownership=ownership, reason=reason, evidence=evidence)

    # 1. spawned by an agent
    if "subagent" in source_obj:
        return verdict("delegated", f"codex:subagent{_subagent_kind(source_obj['subagent'])}")
    if "internal" in source_obj:
        kind = string(source_obj["internal"])
        reason = f"codex:internal:{kind[:80]}" if kind is not None else "codex:internal"
        return verdict("delegated", reason)
    if thread_source in DELEGATED_THREAD_SOURCES:
        return verdict("delegated", f"codex:thread_source:{thread_source}")
    if meta.get("parent_thread_id") is not None:
        return verdict("delegated", "codex:parent_thread")
    if any(meta.get(k) is not None for k in AGENT_IDENTITY_FIELDS):
        return verdict("delegated", "codex:agent_identity")
    # 2. automated / non-interactive
    if source_str == "exec" or originator == "codex_exec":
        return verdict("delegated", "codex:exec")
    if source_str == "mcp":
        return verdict("delegated", "codex:mcp")
    # 3. interactive first-party clients
    if source_str == "cli":
        return verdict("user_owned", "codex:interactive-cli")
    if source_str == "vscode":
        if originator is not None and (
            originator in FIRST_PARTY_ORIGINATORS or originator.startswith("Codex ")
        ):
            return verdict("user_owned", "codex:first-party-ide")
        return verdict("unknown", "codex:third-party-client")
    if "custom" in source_obj:
        custom = string(source_obj["custom"])
        if custom in USER_CUSTOM_SOURCES:
            return verdict("user_owned", f"codex:custom:{custom}")
        return verdict("unknown", "codex:custom-unknown")
    # 4. unknown: missing source (pre-Oct-2025 rollouts; Codex would default it to vscode, we
    # do not), "unknown", unrecognised strings or shapes
    if source is None:
        return verdict("unknown", "codex:no-source")
    return verdict("unknown", "codex:unknown-source")


def _subagent_kind(value: Any) -> str:
    """`review`, `compact`, `memory_consolidation`, `{"other":…}`, `{"thread_spawn":{…}}`."""
    if isinstance(value, str) and value:
        return f":{value[:80]}"
    if isinstance(value, dict) and len(value) == 1:
        (kind,) = value.keys()
        return f":{str(kind)[:80]}"
    return ""
