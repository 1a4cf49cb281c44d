"""Runs whose process is gone: found, failed, their pool slots freed (memory_pipeline/runs.py).

A real Dagster instance on PostgreSQL with the repo's dagster.yaml; the runs are recorded the way
a run worker records them (a start event, the engine event naming its pid, a claimed `llm` slot).
A dead process is a real one that has exited.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import psutil
import pytest
from dagster._core.events import DagsterEvent, DagsterEventType, EngineEventData
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.launcher import WorkerStatus
from dagster._core.test_utils import create_run_for_test
from dagster._daemon.monitoring.run_monitoring import execute_run_monitoring_iteration

from memory_pipeline import dagster_patches
from memory_pipeline.runs import LocalRunLauncher, Worker, clear_stale_runs

POOL = "llm"
STEP = "semantic_memories"


@pytest.fixture
def instance(dagster_home: Path):  # type: ignore[no-untyped-def]
    with dg.DagsterInstance.get() as inst:
        inst.event_log_storage.set_concurrency_slots(POOL, 1)
        yield inst


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def started_run(
    instance: dg.DagsterInstance, pid: int, claim: bool = True, job: str = "ingest_job"
) -> dg.DagsterRun:
    """A run as a run worker leaves it: STARTED, its pid reported, the `llm` slot claimed."""
    run = create_run_for_test(instance, job_name=job, status=dg.DagsterRunStatus.NOT_STARTED)
    instance.report_engine_event(
        f"Started process for run (pid: {pid}).", run, EngineEventData.in_process(pid)
    )
    instance.report_dagster_event(
        DagsterEvent(event_type_value=DagsterEventType.RUN_START.value, job_name=job),
        run_id=run.run_id,
    )
    if claim:
        status = instance.event_log_storage.claim_concurrency_slot(POOL, run.run_id, STEP)
        assert status.is_claimed
    return instance.get_run_by_id(run.run_id)  # type: ignore[return-value]


def status(instance: dg.DagsterInstance, run: dg.DagsterRun) -> dg.DagsterRunStatus:
    return instance.get_run_by_id(run.run_id).status  # type: ignore[union-attr]


def slot_holders(instance: dg.DagsterInstance) -> set[str]:
    return instance.event_log_storage.get_concurrency_info(POOL).active_run_ids


def test_a_run_whose_process_is_gone_is_failed_and_its_slot_freed(instance) -> None:  # type: ignore[no-untyped-def]
    dead = started_run(instance, dead_pid())
    alive = started_run(instance, os.getpid(), claim=False)
    messages: list[str] = []

    cleared = clear_stale_runs(instance, messages.append)

    assert [c.run_id for c in cleared] == [dead.run_id]
    assert status(instance, dead) == dg.DagsterRunStatus.FAILURE
    assert status(instance, alive) == dg.DagsterRunStatus.STARTED
    assert slot_holders(instance) == set()
    # The freed slot can be claimed by the next run's semantic pass.
    assert instance.event_log_storage.claim_concurrency_slot(POOL, alive.run_id, STEP).is_claimed
    (line,) = messages
    assert line.startswith(f"run {dead.run_id[:8]} (ingest_job) was left STARTED and its process")
    assert "marked failed" in line and "\n" not in line
    # Idempotent: nothing is left to clear, and the live run keeps its slot.
    assert clear_stale_runs(instance) == []
    assert slot_holders(instance) == {alive.run_id}


def test_a_reused_pid_does_not_keep_a_dead_run_alive() -> None:
    me = psutil.Process()
    assert Worker(os.getpid(), reported_at=me.create_time() + 5).alive()
    # The run said "pid N" before this process with pid N was started: another process.
    assert not Worker(os.getpid(), reported_at=me.create_time() - 60).alive()


def test_a_canceling_run_whose_process_is_gone_is_canceled(instance) -> None:  # type: ignore[no-untyped-def]
    run = started_run(instance, dead_pid())
    instance.report_run_canceling(run)
    clear_stale_runs(instance)
    assert status(instance, run) == dg.DagsterRunStatus.CANCELED
    assert slot_holders(instance) == set()


def test_a_finished_run_still_holding_a_slot_releases_it(instance) -> None:  # type: ignore[no-untyped-def]
    """Terminating a run in the UI ends the run but left its pool slot claimed."""
    run = started_run(instance, os.getpid())
    instance.report_run_canceled(run, "terminated from the UI")
    assert slot_holders(instance) == {run.run_id}
    clear_stale_runs(instance)
    assert slot_holders(instance) == set()


def test_a_run_without_a_process_is_given_its_start_timeout(instance) -> None:  # type: ignore[no-untyped-def]
    run = create_run_for_test(instance, job_name="ingest_job", status=dg.DagsterRunStatus.STARTING)
    assert clear_stale_runs(instance) == []  # just launched: its worker is starting
    assert status(instance, run) == dg.DagsterRunStatus.STARTING


def test_run_monitoring_fails_a_run_whose_worker_died(instance) -> None:  # type: ignore[no-untyped-def]
    """The daemon's own run monitoring, as dagster.yaml configures it, with our launcher."""
    assert isinstance(instance.run_launcher, LocalRunLauncher)
    assert instance.run_monitoring_enabled
    assert instance.run_monitoring_max_resume_run_attempts == 0
    dead = started_run(instance, dead_pid())
    alive = started_run(instance, os.getpid(), claim=False)
    assert instance.run_launcher.check_run_worker_health(dead).status == WorkerStatus.FAILED
    assert instance.run_launcher.check_run_worker_health(alive).status == WorkerStatus.RUNNING

    # Resuming is off, so the monitoring loop never uses the workspace it is handed.
    context = SimpleNamespace(instance=instance, create_request_context=lambda: None)
    list(execute_run_monitoring_iteration(context, logging.getLogger("test")))  # type: ignore[arg-type]

    assert status(instance, dead) == dg.DagsterRunStatus.FAILURE
    assert status(instance, alive) == dg.DagsterRunStatus.STARTED


def test_a_step_waiting_for_a_pool_slot_sleeps_until_its_next_check(instance) -> None:  # type: ignore[no-untyped-def]
    """Dagster 1.13's wait is never positive (a busy loop); ours is the time to the next claim."""
    holder = started_run(instance, os.getpid())
    waiter = create_run_for_test(instance, job_name="ingest_job")
    with InstanceConcurrencyContext(instance, waiter) as ctx:
        assert not ctx.claim(POOL, STEP)  # the slot is taken: the step waits
        wait = ctx.interval_to_next_pending_claim_check()
        assert 0.5 < wait <= 15
        instance.event_log_storage.free_concurrency_slots_for_run(holder.run_id)
        time.sleep(wait)
        assert ctx.interval_to_next_pending_claim_check() == 0
        assert ctx.claim(POOL, STEP)


def test_the_code_location_installs_the_pool_wait_fix() -> None:
    import memory_pipeline.definitions  # noqa: F401

    fixed = dagster_patches._interval_to_next_pending_claim_check
    assert InstanceConcurrencyContext.interval_to_next_pending_claim_check is fixed
