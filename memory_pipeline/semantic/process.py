"""Run the Task Semantic Pass over every eligible task revision of a window of days.

One backend call per task revision, one transaction per pass. A failure of any kind (backend
error, invalid output, database error) rolls that task's pass back entirely and is reported; the
other tasks go on, and the failed one is retried in full by the next run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import psycopg
from pydantic import BaseModel, Field

from memory_pipeline.semantic.models import SemanticBackend, validate_result
from memory_pipeline.semantic.store import claim, load_context, pending_revisions, store_pass

log = logging.getLogger(__name__)


class PassFailure(BaseModel):
    task_id: str
    native_id: str
    error: str


class SemanticReport(BaseModel):
    backend: str
    tasks_processed: int = 0
    tasks_waiting_for_quiet: int = 0
    tasks_done_elsewhere: int = 0
    turns_processed: int = 0
    memories_by_type: dict[str, int] = Field(default_factory=dict)
    failures: list[PassFailure] = Field(default_factory=list)

    def metadata(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "tasks_processed": self.tasks_processed,
            "tasks_waiting_for_quiet": self.tasks_waiting_for_quiet,
            "tasks_done_by_a_concurrent_run": self.tasks_done_elsewhere,
            "turns_processed": self.turns_processed,
            "segments": self.memories_by_type.get("segment", 0),
            "memories_by_type": dict(sorted(self.memories_by_type.items())),
            "failures": len(self.failures),
            "failed_tasks": [f.model_dump() for f in self.failures],
        }


def process_window(
    conn: psycopg.Connection,  # autocommit: each pass is its own transaction
    backend: SemanticBackend,
    start: date,
    end: date,
    quiet_minutes: float,
    now: datetime | None = None,
    progress: Callable[[str], None] | None = None,
) -> SemanticReport:
    now = now or datetime.now(UTC)
    report = SemanticReport(backend=backend.name)
    tasks, waiting = pending_revisions(conn, start, end, now - timedelta(minutes=quiet_minutes))
    report.tasks_waiting_for_quiet = waiting
    for task in tasks:
        started = time.monotonic()
        try:
            # The model call runs outside any transaction: a slow answer holds no snapshot.
            ctx = load_context(conn, task)
            result = validate_result(ctx.pass_input, backend.run(ctx.pass_input))
            if ctx.pass_input.between_people and result.corrections:
                # People talking to each other: no agent did work a reply could correct (an
                # answer, news or a joke is not a correction episode), whatever the backend says.
                result = result.model_copy(update={"corrections": []})
            duration_ms = int((time.monotonic() - started) * 1000)
            with conn.transaction():
                if not claim(conn, task):
                    report.tasks_done_elsewhere += 1  # a concurrent run stored this revision
                    continue
                counts = store_pass(conn, ctx, result, backend.name, duration_ms)
        except Exception as exc:  # any failure: nothing stored for this task, retried next run
            log.warning("semantic pass failed for %s %s: %s", task.source, task.native_id, exc)
            report.failures.append(
                PassFailure(task_id=str(task.id), native_id=task.native_id, error=_short(exc))
            )
            continue
        report.tasks_processed += 1
        report.turns_processed += len(ctx.pass_input.new_turns)
        for kind, n in counts.items():
            report.memories_by_type[kind] = report.memories_by_type.get(kind, 0) + n
        if progress and report.tasks_processed % 10 == 0:
            progress(f"semantic pass: {report.tasks_processed}/{len(tasks)} tasks")
    return report


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."
