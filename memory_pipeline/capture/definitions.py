"""Dagster definitions for capture: the external transcripts, the captured tasks, the sensor."""

import dagster as dg

from memory_pipeline.capture.changes import WatchCursor, watch
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.report import OWNERSHIP_SKIP_LINE
from memory_pipeline.db.definitions import memory_database
from memory_pipeline.jobs import INGEST_JOB, ingest_days_in_flight, request_days, work_key
from memory_pipeline.models.sources import SOURCES
from memory_pipeline.partitions import daily, day_window, first_day, pin_first_day, single_run
from memory_pipeline.resources import DatabaseResource, SourcesResource
from memory_pipeline.settings import Settings
from memory_pipeline.tuning import TRANSCRIPT_SENSOR_INTERVAL_S

agent_transcripts = dg.AssetSpec(
    "agent_transcripts",
    group_name="capture",
    kinds={"file"},
    description=(
        "The user's own agent sessions on disk, read in place: "
        + ", ".join(s.reads or s.display for s in SOURCES)
        + ". Falls back to the bundled demo corpus when none exist."
    ),
)


@dg.asset(
    partitions_def=daily,
    backfill_policy=single_run,
    deps=[agent_transcripts, memory_database],
    group_name="capture",
    kinds={"postgres"},
    description=(
        "Captured tasks and their complete turns (prompt + visible outcome) for tasks that "
        "started on the partition's day (UTC). User-owned tasks only; delegated and "
        "unknown-ownership tasks and bad input are recorded in capture_skips. Monotonic: "
        "re-running appends only unseen turns. Secrets are redacted before storage."
    ),
)
def captured_tasks(
    context: dg.AssetExecutionContext, db: DatabaseResource, sources: SourcesResource
) -> dg.MaterializeResult:
    start, end = day_window(context)
    with db.connection() as conn:
        report = capture_window(conn, sources.connectors(), start, end, context.log.info)
    # The home's first capture keeps the day its partitions start at (see partitions.py).
    pin_first_day(Settings.from_env(), lambda: [first_day()])
    metadata = {
        key: dg.MetadataValue.json(value) if isinstance(value, dict) else value
        for key, value in report.metadata().items()
    }
    metadata["sources"] = sources.kind
    metadata["skipped_tasks_table"] = dg.MetadataValue.md(report.skip_table())
    # The one line `memory-pipeline run` prints and the UI shows: skipped for ownership, why,
    # and the commands that list and confirm them.
    metadata[OWNERSHIP_SKIP_LINE] = dg.MetadataValue.text(
        report.ownership_skip_line() or "no task skipped for ownership"
    )
    return dg.MaterializeResult(metadata=metadata)


@dg.sensor(
    job_name=INGEST_JOB,
    minimum_interval_seconds=TRANSCRIPT_SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Watches the transcript roots and requests an ingest run for the days of the tasks in "
        "every file that differs from what capture stored (size or mtime, or a path never "
        "captured), so copied, moved and restored files count however old their mtime. A file "
        "is requested once per version (and once more if still not captured when its quiet "
        "period has passed), never while a queued run will read it anyway."
    ),
)
def transcript_sensor(
    context: dg.SensorEvaluationContext, sources: SourcesResource, db: DatabaseResource
) -> dg.SensorResult:
    with db.connection() as conn:
        outcome = watch(
            conn,
            sources.connectors(),
            WatchCursor.load(context.cursor),
            in_flight=lambda: ingest_days_in_flight(context.instance, "captured_tasks"),
            settle_ns=int(sources.quiet_minutes * 60e9),
        )
    for failure in outcome.failures:
        context.log.warning(failure.describe())
    cursor = outcome.cursor.dump()
    if not outcome.days:
        waits = len(outcome.deferred)
        reason = f"{waits} changed file(s) wait for a run in progress" if waits else ""
        return dg.SensorResult(
            skip_reason=reason or f"no transcript changed ({outcome.files_seen} files)",
            cursor=cursor,
        )
    key = work_key("files", (change.version for change in outcome.request))
    context.log.info(f"{len(outcome.request)} changed file(s): {len(outcome.days)} day(s)")
    return dg.SensorResult(run_requests=[request_days(outcome.days, key)], cursor=cursor)


defs = dg.Definitions(assets=[agent_transcripts, captured_tasks], sensors=[transcript_sensor])
