"""Feedback: what the panel and the user rejected lately, injected into the next Thinker.

The Ollama Thinker reads it in its prompt; the offline Thinker cannot read prose, but the
fingerprints of user rejections keep it (through the precheck) from proposing them again.
Either way the run records exactly what was injected (`dream_cycle_runs.feedback` and
`explorer_feedback_injected`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from memory_pipeline import tuning


@dataclass
class Feedback:
    items: list[str] = field(default_factory=list)
    user_rejected: set[str] = field(default_factory=set)  # fingerprints the user rejected
    rejected_for_good: set[str] = field(default_factory=set)  # deferred twice

    def text(self) -> str:
        if not self.items:
            return ""
        return "\n".join(f"- {item}" for item in self.items)

    def as_json(self) -> dict[str, object]:
        return {
            "items": self.items,
            "user_rejected": sorted(self.user_rejected),
            "rejected_for_good": sorted(self.rejected_for_good),
        }


def gather(conn: psycopg.Connection) -> Feedback:
    """User rejections of the last DREAM_FEEDBACK_DAYS days first (they weigh most), then the
    panel's rejections of the last DREAM_FEEDBACK_RUNS runs, at most DREAM_FEEDBACK_MAX_ITEMS."""
    fb = Feedback()
    users = conn.execute(
        "SELECT fingerprint, candidate_json -> 'draft' ->> 'title', user_rejection_reason"
        " FROM dream_cycle_candidates WHERE user_rejected_at IS NOT NULL"
        " AND user_rejected_at > now() - make_interval(days => %s)"
        " ORDER BY user_rejected_at DESC",
        [tuning.DREAM_FEEDBACK_DAYS],
    ).fetchall()
    for fp, title, reason in users:
        if fp:
            fb.user_rejected.add(fp)
        fb.items.append(f'The user rejected "{title}": {reason or "no reason given"}')
    reasons = ", ".join(
        f"CASE WHEN c.evaluator_{letter}_verdict = 'reject'"
        f" THEN '{name}: ' || c.evaluator_{letter}_reasoning END"
        for letter, name in (
            ("a", "Skeptic"),
            ("b", "User Advocate"),
            ("c", "Epistemologist"),
            ("d", "Methodologist"),
        )
    )
    panel = conn.execute(
        f"SELECT c.candidate_json -> 'draft' ->> 'title', concat_ws('; ', {reasons})"
        " FROM dream_cycle_candidates c WHERE c.final_verdict = 'REJECTED' AND c.run_id IN ("
        "  SELECT id FROM dream_cycle_runs WHERE status = 'completed'"
        "  ORDER BY started_at DESC LIMIT %s)"
        " ORDER BY c.created_at DESC",
        [tuning.DREAM_FEEDBACK_RUNS],
    ).fetchall()
    for title, reasons in panel:
        fb.items.append(f'The panel rejected "{title}": {reasons or "no accepts"}')
    fb.items = fb.items[: tuning.DREAM_FEEDBACK_MAX_ITEMS]
    fb.rejected_for_good = {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT fingerprint FROM dream_cycle_candidates"
            " WHERE deferred_twice_rejected AND fingerprint IS NOT NULL"
        ).fetchall()
    }
    return fb
