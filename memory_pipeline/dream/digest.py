"""The Markdown digest of a run: what changed, so the user can review and undo it.

Written to MEMORY_HOME/dream/<day>-<run id>.md, stored in dream_cycle_runs.digest and attached
to the asset's materialization as Markdown metadata.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from memory_pipeline.dream.memories import load
from memory_pipeline.dream.models import EVALUATORS, Candidate
from memory_pipeline.dream.panel import NAMES
from memory_pipeline.dream.precheck import PrecheckReport


def digest_path(memory_home: Path, day: object, run_id: str) -> Path:
    return memory_home / "dream" / f"{day}-{run_id[:8]}.md"


def _votes(c: Candidate) -> str:
    return ", ".join(f"{NAMES[k]} {c.verdicts[k].verdict}" for k in EVALUATORS if k in c.verdicts)


def render(
    conn: psycopg.Connection,
    *,
    run_id: str,
    run_type: str,
    backend: str,
    day: object,
    slices: int,
    strategy_counts: dict[str, int],
    precheck: PrecheckReport,
    candidates: list[Candidate],
    feedback_items: int,
    hold: bool,
    calls: int,
    tokens: int,
) -> str:
    accepted = [c for c in candidates if c.final == "ACCEPTED"]
    rejected = [c for c in candidates if c.final == "REJECTED"]
    deferred = [c for c in candidates if c.final == "DEFERRED"]
    lines = [
        f"# Dream cycle {day} ({run_type})",
        "",
        f"Run `{run_id}` · backend {backend} · {calls} model calls, {tokens} tokens · "
        f"{feedback_items} feedback item(s) injected",
        "",
        f"Explorer: {slices} slice(s) considered ("
        + ", ".join(f"{k} {v}" for k, v in strategy_counts.items() if v)
        + ").",
        "Precheck removed: "
        + (", ".join(f"{k} {v}" for k, v in sorted(precheck.removed.items())) or "nothing")
        + f"; {precheck.corroborations} new corroboration(s) of existing memories.",
        f"Candidates: {len(candidates)} · accepted {len(accepted)} · deferred {len(deferred)}"
        f" · rejected {len(rejected)}",
        "",
    ]
    new = [c for c in accepted if c.draft.operation != "SUPERSEDE"]
    sup = [c for c in accepted if c.draft.operation == "SUPERSEDE"]
    verb = "Held for approval (`memory-pipeline dream approve`)" if hold else "New memories"
    lines.append(f"## {verb}")
    lines.append("")
    for c in new or []:
        mid = f" `{c.created_memory_id}`" if c.created_memory_id else ""
        lines += [
            f"- **{c.draft.title}**{mid} ({c.draft.type}, {c.draft.operation}, "
            f"{c.draft.schema_operation}; {_votes(c)})",
            f"  {c.draft.content}",
            f"  Rests on: {', '.join(f'`{i}`' for i in c.draft.rests_on)}",
        ]
    if not new:
        lines.append("- none")
    lines += ["", "## Superseded memories", ""]
    views = load(
        conn,
        [c.draft.target_memory_id or "" for c in sup] + [c.draft.successor_id or "" for c in sup],
    )
    for c in sup:
        old = views.get(c.draft.target_memory_id or "")
        succ = views.get(c.draft.successor_id or "")
        lines += [
            f"- Before: `{c.draft.target_memory_id}` {old.title if old else ''}"
            + (f" — {old.content}" if old else ""),
            f"  After: `{c.draft.successor_id}` {succ.title if succ else ''}"
            + (f" — {succ.content}" if succ else ""),
            "  Undo: `memory-pipeline dream reject "
            f'{c.created_memory_id or c.draft.target_memory_id} --reason "..."`',
        ]
    if not sup:
        lines.append("- none")
    lines += ["", "## Deferred", ""]
    for c in deferred:
        lines.append(f"- {c.draft.title} (deferral {c.defer_count}; {_votes(c)})")
    if not deferred:
        lines.append("- none")
    lines += ["", "## Rejected", ""]
    for c in rejected:
        reasons = "; ".join(
            f"{NAMES[k]}: {c.verdicts[k].reasoning}"
            for k in EVALUATORS
            if k in c.verdicts and c.verdicts[k].verdict != "accept"
        )
        good = " (deferred twice: rejected for good)" if c.deferred_twice_rejected else ""
        lines.append(f"- {c.draft.title}{good}: {reasons}")
    if not rejected:
        lines.append("- none")
    return "\n".join(lines) + "\n"
