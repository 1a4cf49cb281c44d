"""Runs that cannot wedge: finding runs whose process is gone, failing them, freeing their slots.

Dagster marks a run finished only when its own process says so. A run whose process was killed
(SIGKILL, the OOM killer, a reboot, `memory-pipeline ui` stopped mid-run after its grace period)
stays STARTED forever: it keeps the `llm` pool's only slot, so every later run blocks at the
semantic pass; it counts against the two-run limit of the queue; and the sensors leave its days
alone because a run "is still working on them".

Every run records the pid of its process in an engine event: "Started process for run (pid: N)"
for a run worker launched by the code server, "Executing steps in process (pid: N)" for a run
executed in-process by `memory-pipeline run`. A run is stale when it is in progress and that
process no longer exists (or the pid now belongs to a process that started later). Runs are
judged on this machine: every process of a memory-pipeline instance runs on it.

Two places use this:
- `memory-pipeline run` and `memory-pipeline ui` clear stale runs before they start anything
  (`clear_stale_runs`), with one line per run saying what was done.
- While `ui` runs, Dagster's run monitoring (`dagster.yaml`: `run_monitoring`) asks the run
  launcher whether each in-progress run's worker is alive; `LocalRunLauncher` answers with the
  same check, so the daemon fails a dead run within a poll interval and frees its pool slots
  `free_slots_after_run_end_seconds` later.

Our own records of work in progress get the same treatment at the same moments
(`clear_interrupted_work`): a dream run left `running` in `dream_cycle_runs` (its cycle's
session lock is free), a backup's temp directory, and a verification's scratch database or a
restore's staging database left by a process that died. Each stage owns its check
(dream/store.py, backup/); this is the one place `run` and `ui` call them from.

A failed run's work is picked up again: the semantic pass of its tasks is still pending in our
database, so `memory-pipeline run`, the semantic pass sensor and the hourly catch-up request it,
and the daemon retries a failed run once (`run_retries` in `dagster.yaml`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg
import psutil
from dagster._core.events import DagsterEventType, JobFailureData, RunFailureReason
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus

from memory_pipeline.settings import Settings

# Statuses in which a run claims to be working, or about to. QUEUED runs are not here: they wait
# for the daemon and hold nothing.
UNFINISHED = (
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)
# A process may be created a little before the event that names it is written.
_CLOCK_SLACK_S = 1.0


@dataclass(frozen=True)
class Worker:
    """The process a run said it executes in, and when it said so."""

    pid: int
    reported_at: float  # epoch seconds of the engine event

    def alive(self) -> bool:
        """True while that very process exists (a reused pid belongs to a younger process)."""
        try:
            proc = psutil.Process(self.pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                return False
            return proc.create_time() <= self.reported_at + _CLOCK_SLACK_S
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return True  # it exists; we may not look closer


@dataclass(frozen=True)
class StaleRun:
    run_id: str
    job_name: str
    status: dg.DagsterRunStatus
    reason: str  # why it is stale, e.g. "its process 1234 is gone"

    def describe(self) -> str:
        left = f"run {self.run_id[:8]} ({self.job_name}) was left {self.status.value}"
        return f"{left} and {self.reason}"


def run_worker(instance: dg.DagsterInstance, run_id: str) -> Worker | None:
    """The run's own process (not a step subprocess), from its latest engine event naming one."""
    worker = None
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        if event is None or entry.step_key is not None:
            continue
        data = event.engine_event_data
        pid = data.metadata.get("pid") if data and data.metadata else None
        if pid is not None and str(pid.value).isdigit():
            worker = Worker(pid=int(pid.value), reported_at=entry.timestamp)
    return worker


def stale_reason(
    instance: dg.DagsterInstance, record: dg.RunRecord, now: float | None = None
) -> str | None:
    """Why this unfinished run will never finish by itself, or None if it may still."""
    run = record.dagster_run
    if run.status not in UNFINISHED:
        return None
    worker = run_worker(instance, run.run_id)
    if worker is not None:
        return None if worker.alive() else f"its process {worker.pid} is gone"
    # No process reported yet: launched runs report theirs within seconds of starting. Only one
    # that has waited longer than Dagster's own start timeout is given up on.
    waited = (now or time.time()) - record.update_timestamp.timestamp()
    limit = (
        instance.run_monitoring_cancel_timeout_seconds
        if run.status == dg.DagsterRunStatus.CANCELING
        else instance.run_monitoring_start_timeout_seconds
    )
    if waited > limit:
        return f"no process reported in {int(waited)} s"
    return None


def find_stale_runs(instance: dg.DagsterInstance) -> list[StaleRun]:
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=list(UNFINISHED)))
    stale = []
    for record in records:
        reason = stale_reason(instance, record)
        if reason:
            run = record.dagster_run
            stale.append(StaleRun(run.run_id, run.job_name, run.status, reason))
    return stale


def end_run(instance: dg.DagsterInstance, run_id: str, message: str) -> bool:
    """Mark an unfinished run failed (canceled, if it was canceling) and free its pool slots.

    Returns False when the run had finished meanwhile (its slots are freed all the same).
    """
    run = instance.get_run_by_id(run_id)
    ended = False
    if run is not None and not run.is_finished:
        if run.status == dg.DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, message)
        else:
            instance.report_run_failed(
                run,
                message,
                JobFailureData(error=None, failure_reason=RunFailureReason.UNEXPECTED_TERMINATION),
            )
        ended = True
    free_slots(instance, run_id)
    return ended


def free_slots(instance: dg.DagsterInstance, run_id: str) -> None:
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        storage.free_concurrency_slots_for_run(run_id)


def free_slots_of_finished_runs(instance: dg.DagsterInstance) -> list[str]:
    """Free pool slots still held by finished runs (e.g. a run terminated from the UI)."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    holders = storage.get_concurrency_run_ids()
    if not holders:
        return []
    finished = instance.get_runs(
        filters=dg.RunsFilter(
            run_ids=list(holders),
            statuses=[
                dg.DagsterRunStatus.SUCCESS,
                dg.DagsterRunStatus.FAILURE,
                dg.DagsterRunStatus.CANCELED,
            ],
        )
    )
    for run in finished:
        storage.free_concurrency_slots_for_run(run.run_id)
    return [run.run_id for run in finished]


def clear_stale_runs(
    instance: dg.DagsterInstance, progress: Callable[[str], None] | None = None
) -> list[StaleRun]:
    """Fail every stale run and free the pool slots of every finished one; say what was done."""
    cleared = []
    for stale in find_stale_runs(instance):
        message = (
            f"Marked failed by memory-pipeline: {stale.reason}. Its work is picked up again by "
            "the next run."
        )
        if end_run(instance, stale.run_id, message):
            cleared.append(stale)
            if progress:
                progress(
                    f"{stale.describe()}: marked failed and its pool slots freed; its work is "
                    "picked up again"
                )
    freed = free_slots_of_finished_runs(instance)
    if freed and progress:
        progress(f"freed the pool slots still held by {len(freed)} finished run(s)")
    return cleared


def clear_interrupted_work(
    settings: Settings, app_url: str, progress: Callable[[str], None] | None = None
) -> list[str]:
    """Mark failed (or remove) what our own records say is in progress while the process doing
    it is gone; one line per item to `progress`, and the same lines returned."""
    from memory_pipeline.backup.layout import interrupted_line, remove_interrupted_backups
    from memory_pipeline.backup.scratch import drop_abandoned, dropped_line
    from memory_pipeline.db import connect
    from memory_pipeline.dream.store import fail_interrupted_runs

    lines: list[str] = []
    with connect(app_url, autocommit=True) as conn:
        lines += [
            f"dream run {dead[:8]} was left running by a process that ended: marked failed"
            for dead in fail_interrupted_runs(conn)
        ]
        lines += [dropped_line(name) for name in drop_abandoned(conn)]
    lines += [interrupted_line(n) for n in remove_interrupted_backups(settings.backup_dir)]
    for line in lines:
        if progress:
            progress(line)
    return lines


class LocalRunLauncher(DefaultRunLauncher):
    """Dagster's default launcher (runs in a process of the code server), plus the worker health
    check Dagster's run monitoring needs to notice a run whose process died.

    Configured in `dagster.yaml` (`run_launcher`). Health is the pid check above: RUNNING while
    the run's process lives (or has not reported yet: the start timeout covers that), FAILED when
    it is gone. Resuming a run is not supported (`max_resume_run_attempts: 0`).
    """

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        worker = run_worker(self._instance, run.run_id)
        if worker is None:
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no run process reported yet")
        if worker.alive():
            return CheckRunHealthResult(WorkerStatus.RUNNING, f"process {worker.pid} is running")
        return CheckRunHealthResult(WorkerStatus.FAILED, f"run process {worker.pid} is gone")
