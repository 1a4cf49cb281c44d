"""`memory-pipeline run`: materialize every asset once, in graph order, in this process.

The runs land in the user's Dagster instance like any other, so the UI shows them afterwards.

No run of ours is left behind in progress: each run gets its id up front, and whatever ends the
job (success, a failure, Ctrl-C or SIGTERM turned into KeyboardInterrupt) the run is marked
finished and its pool slots are freed before we return. While the jobs run, a background thread
does what Dagster's run monitoring does when `memory-pipeline ui` runs: it fails runs whose
process died (`memory_pipeline/runs.py`), so a run waiting for the `llm` pool is never blocked by
a dead one.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime

import dagster as dg

from memory_pipeline.capture.changes import changed_since
from memory_pipeline.capture.report import OWNERSHIP_SKIP_LINE
from memory_pipeline.capture.sources import source_roots
from memory_pipeline.errors import UserError
from memory_pipeline.inbox.changes import has_files as inbox_has_files
from memory_pipeline.inbox.resource import inbox_paths
from memory_pipeline.inbox.store import INBOX_LINE
from memory_pipeline.jobs import (
    DREAM_JOB,
    INGEST_JOB,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    partition_tags,
)
from memory_pipeline.partitions import partition_days, pin_first_day
from memory_pipeline.progress import to_terminal
from memory_pipeline.runs import clear_interrupted_work, clear_stale_runs, end_run
from memory_pipeline.settings import Settings

# The terminal gets our progress lines and one line per failure; Dagster's console logger would
# print a failed step's stack trace (Ctrl-C included) first. Every event stays in the run's
# logs for the Dagster UI.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# Errors a step reports when the run was interrupted (Ctrl-C, SIGTERM), not when it failed.
INTERRUPTED = {"DagsterExecutionInterruptedError", "KeyboardInterrupt"}


def materialize_all(
    instance: dg.DagsterInstance,
    settings: Settings,
    progress: Callable[[str], None],
    app_url: str | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Run every job once. With `app_url`, days whose semantic pass is still pending (a run that
    died before its pass, a pass that failed) are ingested again even if no file changed."""
    # A new home's partitions start at its earliest transcript's day: kept before the
    # definitions (and with them the partitions) are built in this process.
    pin_first_day(settings, lambda: changed_since(source_roots(settings).connectors(), 0)[0])
    from memory_pipeline.definitions import defs

    if app_url:  # dream runs, backups, scratch databases left by a process that died
        clear_interrupted_work(settings, app_url, progress)
    pending = _pending_pass_days(app_url) if app_url else set()
    results = []
    deferred: str | None = None
    with _watch_stale_runs(instance, progress), to_terminal(progress):
        for job_name, tags in _plan(settings, pending):
            job = defs.resolve_job_def(job_name)
            progress(f"running {job_name}{_describe(tags)}...")
            partition = tags.get(PARTITION_TAG)
            run_id = str(uuid.uuid4())
            try:
                result = job.execute_in_process(
                    instance=instance,
                    partition_key=partition,
                    tags=None if partition else tags,
                    run_config=QUIET_LOGS,
                    raise_on_error=False,
                    run_id=run_id,
                )
            finally:
                # Finished or not (an exception, a second Ctrl-C), the run ends here.
                end_run(instance, run_id, "Interrupted: `memory-pipeline run` stopped.")
            if not result.success:
                line = _failure_line(job_name, result)
                # A failed dream cycle or briefing push (an SMTP server down, say) must not cost
                # the night's backup: carry on, and say what failed at the end. An interrupt stops.
                if job_name != DREAM_JOB or line.startswith("interrupted"):
                    raise UserError(line)
                progress(f"  {line}")
                deferred = deferred or line
                continue
            _report(result, progress)
            results.append(result)
    if deferred:
        raise UserError(deferred)
    return results


def _failure_line(job_name: str, result: dg.ExecuteInProcessResult) -> str:
    """One line: what failed (or that the run was interrupted) and where to look."""
    where = f"see run {result.run_id} in the Dagster UI (`memory-pipeline ui`) for its logs"
    steps = result.get_step_failure_events()
    errors = [e.step_failure_data.error for e in steps if e.step_failure_data.error]
    run_failure = result.get_run_failure_event()
    run_error = run_failure.job_failure_data.error if run_failure else None
    if run_error and not steps:  # it stopped between steps, e.g. waiting for a pool slot
        errors = [run_error]
    if errors and all(e.cls_name in INTERRUPTED for e in errors):
        return (
            f"interrupted: run {result.run_id} ({job_name}) was stopped and marked failed; "
            "`memory-pipeline run` picks its work up again"
        )
    # A failed check says why in its description (e.g. why a backup does not restore); the
    # step's own error only names the check.
    checks = [
        f"{e.check_name}: {e.description.strip().splitlines()[0]}"
        for e in result.get_asset_check_evaluations()
        if not e.passed and e.description and e.description.strip()
    ]
    if checks:
        return f"{job_name} failed ({'; '.join(checks)}); {where}"
    if steps and errors:
        error = errors[0]
        while error.cls_name == "DagsterExecutionStepExecutionError" and error.cause:
            error = error.cause  # Dagster's wrapper says only which op; its cause says why
        first = error.message.strip().splitlines()
        detail = f"{steps[0].step_key}: {first[0] if first else error.cls_name}"
    else:
        detail = (run_failure.message if run_failure else "a step failed").strip().splitlines()[0]
    return f"{job_name} failed ({detail}); {where}"


@contextmanager
def _watch_stale_runs(
    instance: dg.DagsterInstance, progress: Callable[[str], None]
) -> Iterator[None]:
    """Clear stale runs now, then every run-monitoring poll interval until the block ends."""
    clear_stale_runs(instance, progress)
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(instance.run_monitoring_poll_interval_seconds):
            try:
                clear_stale_runs(instance, progress)
            except Exception:  # a database hiccup must not end the run; the next poll retries
                continue

    thread = threading.Thread(target=watch, name="stale-run-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def _pending_pass_days(app_url: str) -> set[date]:
    from memory_pipeline.db import connect
    from memory_pipeline.semantic.store import days_with_pending_passes

    with connect(app_url, autocommit=True) as conn:
        return partition_days(days_with_pending_passes(conn))


def _plan(
    settings: Settings, pending_days: set[date] | frozenset[date] = frozenset()
) -> list[tuple[str, dict[str, str]]]:
    """Jobs to run, in order, with the partition tags each needs: the days of every transcript,
    plus `pending_days` (days whose semantic pass is pending)."""
    plan: list[tuple[str, dict[str, str]]] = []
    connectors = source_roots(settings).connectors()
    days = partition_days(changed_since(connectors, since_ns=0)[0])
    # With no task day at all (only unreadable files, say), today's partition still runs: its
    # capture looks at every file and records the ones nothing could be read from.
    today = datetime.now(UTC).date()
    if inbox_has_files(inbox_paths(settings)[0]):  # the inbox is read by today's partition
        days = days | {today}
    plan.append((INGEST_JOB, partition_tags(days | set(pending_days) or {today})))
    plan.append(("maintenance_job", {}))
    # The dream cycle thinks over everything ingested and maintained above (today's partition).
    plan.append((DREAM_JOB, {PARTITION_TAG: today.isoformat()}))
    # Last: a backup of everything the run produced, proven by its restore check.
    plan.append(("backup_job", {PARTITION_TAG: today.isoformat()}))
    return plan


def _describe(tags: dict[str, str]) -> str:
    if RANGE_START_TAG in tags:
        return f" for {tags[RANGE_START_TAG]} .. {tags[RANGE_END_TAG]}"
    if PARTITION_TAG in tags:
        return f" for {tags[PARTITION_TAG]}"
    return ""


def _report(result: dg.ExecuteInProcessResult, progress: Callable[[str], None]) -> None:
    seen: set[str] = set()
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        key = mat.asset_key.to_user_string()
        if key in seen:  # a day-range run records one materialization per day, same metadata
            continue
        seen.add(key)
        shown = ", ".join(
            f"{k}={v.value}" for k, v in mat.metadata.items() if isinstance(v.value, int | float)
        )
        progress(f"  {key}: {shown}")
        inbox_line = mat.metadata.get(INBOX_LINE)
        if inbox_line is not None and inbox_line.value:
            progress(f"  {inbox_line.value}")
        skip_line = mat.metadata.get(OWNERSHIP_SKIP_LINE)
        if skip_line is not None and str(skip_line.value).startswith("skipped"):
            progress(f"  {skip_line.value}")  # loud: a skipped history must not go unnoticed
