"""What one capture run did, reported as Dagster metadata and by `memory-pipeline run`."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memory_pipeline.capture.redact import Redactions

MAX_SKIP_ROWS = 50
# Metadata key of the run's one-line ownership skip report (printed by `memory-pipeline run`).
OWNERSHIP_SKIP_LINE = "skipped_for_ownership_line"


class CaptureReport(BaseModel):
    model_config = {"arbitrary_types_allowed": True}

    files_seen: int = 0
    files_parsed: int = 0
    tasks_seen: int = 0
    tasks_captured: int = 0  # new captured tasks
    tasks_with_new_turns: int = 0
    turns_appended: int = 0
    drift_ignored: int = 0
    renames: int = 0
    unfinished_turns_waiting: int = 0
    skipped_tasks: dict[str, int] = Field(default_factory=dict)  # reason -> count
    # The first few skipped tasks of the run with their reason, for the run's skip table.
    skipped_examples: list[tuple[str, str, str]] = Field(default_factory=list)
    # Tasks skipped for ownership, by "<ownership>:<reason>" (e.g. "unknown:claude_code:...").
    ownership_skips: dict[str, int] = Field(default_factory=dict)
    file_issues: dict[str, int] = Field(default_factory=dict)  # reason -> count
    redactions: Redactions = Field(default_factory=Redactions)
    # NUL and lone surrogates replaced by U+FFFD in what this run stored (PostgreSQL cannot
    # store them); like redactions, counted once, when a task or turn is written.
    unstorable_chars_replaced: int = 0
    unanswered_turns: int = 0  # chat-import prompts stored unanswered after the quiet period
    answers_to_unanswered: int = 0  # turns appended that answer a stored unanswered turn
    # Per source (every connector of the run, even one that found nothing): the counts of
    # BY_SOURCE_COUNTS for that connector's files.
    by_source: dict[str, dict[str, int]] = Field(default_factory=dict)

    def source_counts(self) -> dict[str, int]:
        """The counters `by_source` keeps, as they are now (capture takes the difference)."""
        return {
            "files_seen": self.files_seen,
            "files_parsed": self.files_parsed,
            "tasks_seen": self.tasks_seen,
            "tasks_captured": self.tasks_captured,
            "turns_appended": self.turns_appended,
            "tasks_skipped": sum(self.skipped_tasks.values()),
            "file_issues": sum(self.file_issues.values()),
        }

    def count_source(self, source: str, before: dict[str, int]) -> None:
        """Add to `by_source[source]` what was counted since `before` (`source_counts()`)."""
        now = self.source_counts()
        row = self.by_source.setdefault(source, dict.fromkeys(now, 0))
        for key, value in now.items():
            row[key] = row.get(key, 0) + value - before.get(key, 0)

    def count_skip(
        self, source: str, native_id: str, reason: str, ownership: str | None = None
    ) -> None:
        """One skipped task; `ownership` ("unknown", "delegated") when skipped for ownership."""
        self.skipped_tasks[reason] = self.skipped_tasks.get(reason, 0) + 1
        if ownership is not None:
            key = f"{ownership}:{reason}"
            self.ownership_skips[key] = self.ownership_skips.get(key, 0) + 1
        if len(self.skipped_examples) < MAX_SKIP_ROWS:
            self.skipped_examples.append((source, native_id, reason))

    def skip_table(self) -> str:
        """Markdown table of skipped tasks (the full list, with evidence, is capture_skips)."""
        if not self.skipped_examples:
            return "No task was skipped."
        rows = [f"| {s} | `{n}` | {r} |" for s, n, r in self.skipped_examples]
        more = sum(self.skipped_tasks.values()) - len(rows)
        tail = [f"\n{more} more in the capture_skips table."] if more > 0 else []
        return "\n".join(["| source | native id | reason |", "|---|---|---|", *rows, *tail])

    def ownership_skip_line(self) -> str:
        """One line for the user: how many tasks were skipped for ownership, why, and the
        commands that list them and confirm one ("" when none was)."""
        if not self.ownership_skips:
            return ""
        total = sum(self.ownership_skips.values())
        parts = []
        for ownership in ("unknown", "delegated"):
            reasons = {
                k.split(":", 1)[1]: n
                for k, n in sorted(self.ownership_skips.items())
                if k.startswith(f"{ownership}:")
            }
            if reasons:
                listed = ", ".join(f"{r} {n}" for r, n in reasons.items())
                parts.append(f"{sum(reasons.values())} {ownership} ({listed})")
        line = (
            f"skipped {total} task{'s' if total != 1 else ''} for ownership: {'; '.join(parts)}"
            " - `memory-pipeline capture skips` lists them"
        )
        if any(k.startswith("unknown:") for k in self.ownership_skips):
            line += "; `memory-pipeline capture confirm SOURCE:ID` captures one as yours"
        return line

    def count_file_issue(self, reason: str) -> None:
        self.file_issues[reason] = self.file_issues.get(reason, 0) + 1

    def merge(self, other: CaptureReport) -> None:
        """Add what `other` counted. Capture counts each file (and each task) in a report of
        its own and merges it only once that work is committed, so a file rolled back after a
        failure leaves no counts behind."""
        for name in (
            "files_seen",
            "files_parsed",
            "tasks_seen",
            "tasks_captured",
            "tasks_with_new_turns",
            "turns_appended",
            "drift_ignored",
            "renames",
            "unfinished_turns_waiting",
            "unstorable_chars_replaced",
            "unanswered_turns",
            "answers_to_unanswered",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for reason, n in other.skipped_tasks.items():
            self.skipped_tasks[reason] = self.skipped_tasks.get(reason, 0) + n
        for key, n in other.ownership_skips.items():
            self.ownership_skips[key] = self.ownership_skips.get(key, 0) + n
        room = MAX_SKIP_ROWS - len(self.skipped_examples)
        self.skipped_examples.extend(other.skipped_examples[: max(room, 0)])
        for reason, n in other.file_issues.items():
            self.file_issues[reason] = self.file_issues.get(reason, 0) + n
        self.redactions.add(other.redactions)
        for source, counts in other.by_source.items():
            row = self.by_source.setdefault(source, {})
            for key, value in counts.items():
                row[key] = row.get(key, 0) + value

    def metadata(self) -> dict[str, int | dict[str, int]]:
        return {
            "files_seen": self.files_seen,
            "files_parsed": self.files_parsed,
            "tasks_seen": self.tasks_seen,
            "tasks_captured": self.tasks_captured,
            "tasks_with_new_turns": self.tasks_with_new_turns,
            "turns_appended": self.turns_appended,
            "drift_ignored": self.drift_ignored,
            "renames": self.renames,
            "unfinished_turns_waiting": self.unfinished_turns_waiting,
            "tasks_skipped": sum(self.skipped_tasks.values()),
            "skipped_by_reason": dict(sorted(self.skipped_tasks.items())),
            "skipped_for_ownership": sum(self.ownership_skips.values()),
            "file_issues_by_reason": dict(sorted(self.file_issues.items())),
            "redactions": self.redactions.total,
            "redactions_by_kind": dict(sorted(self.redactions.by_kind.items())),
            "unstorable_chars_replaced": self.unstorable_chars_replaced,
            "unanswered_turns": self.unanswered_turns,
            "answers_to_unanswered": self.answers_to_unanswered,
            "by_source": {s: dict(c) for s, c in sorted(self.by_source.items())},
        }
