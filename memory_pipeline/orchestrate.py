"""`memory-pipeline run`: materialize every asset once, in graph order, in this process.

The runs land in the user's Dagster instance like any other, so the UI shows them afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

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
        result = job.execute_in_process(
            instance=instance, tags=tags, run_config=QUIET_LOGS, raise_on_error=False
        )
        if not result.success:
            failure = result.get_run_failure_event()
            message = failure.message if failure else "see the run in the Dagster UI"
            raise dg.DagsterError(f"{job_name} failed (run {result.run_id}): {message}")
        _report(result, progress)
        results.append(result)
    return results


def _plan(settings: Settings) -> list[tuple[str, dict[str, str]]]:
    """Jobs to run, in order, with the partition tags each needs."""
    return [("database_job", {})]


def _describe(tags: dict[str, str]) -> str:
    start = tags.get("dagster/asset_partition_range_start")
    if start:
        return f" for {start} .. {tags['dagster/asset_partition_range_end']}"
    if "dagster/partition" in tags:
        return f" for {tags['dagster/partition']}"
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
