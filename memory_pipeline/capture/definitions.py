"""Dagster definitions for capture: the external transcripts, the captured tasks, the sensor."""

import json

import dagster as dg

from memory_pipeline.capture.changes import changed_since
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.db.definitions import memory_database
from memory_pipeline.jobs import INGEST_JOB, request_days
from memory_pipeline.partitions import daily, single_run
from memory_pipeline.resources import DatabaseResource, SourcesResource

agent_transcripts = dg.AssetSpec(
    "agent_transcripts",
    group_name="capture",
    kinds={"file"},
    description=(
        "The user's own agent sessions on disk, read in place: Codex CLI rollouts "
        "($CODEX_HOME/sessions, archived_sessions), Claude Code transcripts "
        "($CLAUDE_CONFIG_DIR/projects) and chat exports dropped into MEMORY_IMPORT_DIR. "
        "Falls back to the bundled demo corpus when none exist."
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
    window = context.partition_time_window
    with db.connection() as conn:
        report = capture_window(
            conn, sources.connectors(), window.start.date(), window.end.date(), context.log.info
        )
    metadata = {
        key: dg.MetadataValue.json(value) if isinstance(value, dict) else value
        for key, value in report.metadata().items()
    }
    metadata["sources"] = sources.kind
    metadata["skipped_tasks_table"] = dg.MetadataValue.md(report.skip_table())
    return dg.MaterializeResult(metadata=metadata)


@dg.sensor(
    job_name=INGEST_JOB,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Watches the transcript roots; when files change, requests an ingest run for the "
        "days of the tasks in them. The cursor is the newest file mtime seen."
    ),
)
def transcript_sensor(
    context: dg.SensorEvaluationContext, sources: SourcesResource
) -> dg.SensorResult:
    since = json.loads(context.cursor)["mtime_ns"] if context.cursor else 0
    days, newest = changed_since(sources.connectors(), since)
    cursor = json.dumps({"mtime_ns": newest})
    if not days:
        return dg.SensorResult(skip_reason="no transcript changed", cursor=cursor)
    return dg.SensorResult(run_requests=[request_days(days, f"sensor:{newest}")], cursor=cursor)


defs = dg.Definitions(assets=[agent_transcripts, captured_tasks], sensors=[transcript_sensor])
