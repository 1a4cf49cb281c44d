"""`memory-pipeline run`: materialize every asset once, in graph order, in this process.

The runs land in the user's Dagster instance like any other, so the UI shows them afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import dagster as dg

from memory_pipeline.capture.changes import changed_since
from memory_pipeline.capture.sources import source_roots
from memory_pipeline.errors import UserError
from memory_pipeline.jobs import (
    INGEST_JOB,
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    partition_tags,
)
from memory_pipeline.settings import Settings

QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def materialize_all(
    instance: dg.DagsterInstance, settings: Settings, progress: Callable[[str], None]
) -> list[dg.ExecuteInProcessResult]:
    from memory_pipeline.definitions import defs

    results = []
    for job_name, tags in _plan(settings):
        job = defs.resolve_job_def(job_name)
        progress(f"running {job_name}{_describe(tags)}...")
        partition = tags.get(PARTITION_TAG)
        result = job.execute_in_process(
            instance=instance,
            partition_key=partition,
            tags=None if partition else tags,
            run_config=QUIET_LOGS,
            raise_on_error=False,
        )
        if not result.success:
            failure = result.get_run_failure_event()
            message = failure.message if failure else "a step failed"
            raise UserError(
                f"{job_name} failed ({message.strip()}); see run {result.run_id} in the Dagster "
                "UI (`memory-pipeline ui`) for its logs"
            )
        _report(result, progress)
        results.append(result)
    return results


def _plan(settings: Settings) -> list[tuple[str, dict[str, str]]]:
    """Jobs to run, in order, with the partition tags each needs."""
    plan: list[tuple[str, dict[str, str]]] = []
    connectors = source_roots(settings).connectors()
    days, _ = changed_since(connectors, since_ns=0)
    if days:
        plan.append((INGEST_JOB, partition_tags(days)))
    plan.append(("maintenance_job", {}))
    # Last: a backup of everything the run produced, proven by its restore check.
    plan.append(("backup_job", {PARTITION_TAG: datetime.now(UTC).date().isoformat()}))
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
