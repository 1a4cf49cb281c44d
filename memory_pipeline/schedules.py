"""Cross-stage automation: the semantic pass sensor, the hourly catch-up, hourly maintenance.

The transcript sensor (capture/definitions.py) requests what changed on disk; the semantic pass
sensor requests passes the moment a task's quiet period has elapsed; the hourly catch-up requests
anything both missed (runs that failed or died, vectors missing). None of them requests days a
queued ingest run will process anyway.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import psycopg

from memory_pipeline.capture.changes import scan_changes
from memory_pipeline.embedding.store import days_missing_vectors
from memory_pipeline.jobs import (
    INGEST_JOB,
    ingest_days_in_flight,
    maintenance_job,
    request_days,
    work_key,
)
from memory_pipeline.partitions import partition_day, partition_days
from memory_pipeline.resources import (
    DatabaseResource,
    EmbeddingResource,
    SemanticResource,
    SourcesResource,
)
from memory_pipeline.semantic.store import days_with_pending_passes, ready_revisions
from memory_pipeline.tuning import SEMANTIC_SENSOR_INTERVAL_S

# What a semantic pass request runs: the pass, the vectors of what it stores, its entity
# mentions and its edges. Capture is left out: the transcript sensor requests it when files
# change.
PASS_ASSETS = (
    "semantic_memories",
    "memory_embeddings",
    "memory_entities",
    "memory_relationships",
)


def semantic_pass_request(
    conn: psycopg.Connection, instance: dg.DagsterInstance, quiet_minutes: float, now: datetime
) -> dg.RunRequest | str:
    """A run for the days of tasks whose pass is pending and whose quiet period has elapsed, or
    why there is none. Days a waiting or in-progress run passes anyway are left out; the run key
    names the task revisions, so the daemon never launches the same work twice (a pass that
    failed is retried by the hourly catch-up, not every tick)."""
    ready = ready_revisions(conn, now - timedelta(minutes=quiet_minutes))
    if not ready:
        return "no task is both quiet and waiting for its semantic pass"
    waiting, running = ingest_days_in_flight(instance, PASS_ASSETS[0])
    busy = waiting | running
    todo = [(d, task, turns) for d, task, turns in ready if partition_day(d) not in busy]
    days = partition_days(day for day, _, _ in todo)
    if not days:
        return f"{len(ready)} quiet task(s): their days are already in a queued or running run"
    key = work_key(
        "semantic",
        (f"{task}:{turns}" for day, task, turns in todo if partition_day(day) in days),
    )
    return request_days(days, key, assets=PASS_ASSETS)


@dg.sensor(
    job_name=INGEST_JOB,
    minimum_interval_seconds=SEMANTIC_SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Requests the semantic pass (and the vectors) for the days of tasks whose quiet period "
        "(MEMORY_SEMANTIC_QUIET_MINUTES since their last turn) has elapsed and whose pass is "
        "pending; never for days a queued or running ingest run will pass anyway."
    ),
)
def semantic_pass_sensor(
    context: dg.SensorEvaluationContext, db: DatabaseResource, semantic: SemanticResource
) -> dg.RunRequest | dg.SkipReason:
    with db.connection() as conn:
        outcome = semantic_pass_request(
            conn, context.instance, semantic.quiet_minutes, datetime.now(UTC)
        )
    return dg.SkipReason(outcome) if isinstance(outcome, str) else outcome


@dg.schedule(
    cron_schedule="7 * * * *",
    job_name=INGEST_JOB,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description=(
        "Hourly catch-up: ingests the days of transcripts that differ from what was last "
        "captured, of tasks renamed lately, of tasks whose semantic pass is pending (not quiet "
        "yet, or failed), and of memories without a vector in the active space. Days a queued "
        "ingest run will process anyway are left out."
    ),
)
def hourly_catch_up(
    context: dg.ScheduleEvaluationContext,
    db: DatabaseResource,
    sources: SourcesResource,
    embedding: EmbeddingResource,
) -> dg.RunRequest | dg.SkipReason:
    # Renames are looked for over the last two hours: the previous tick's window, with overlap.
    renamed_after = context.scheduled_execution_time - timedelta(hours=2)
    with db.connection() as conn:
        scan = scan_changes(
            conn, sources.connectors(), renamed_after_ns=int(renamed_after.timestamp() * 1e9)
        )
        days = scan.days | partition_days(
            days_with_pending_passes(conn) | days_missing_vectors(conn, embedding.space)
        )
    waiting, _ = ingest_days_in_flight(context.instance, "captured_tasks")
    days -= waiting
    if not days:
        return dg.SkipReason("nothing to catch up")
    return request_days(days, run_key=f"catch-up:{context.scheduled_execution_time.isoformat()}")


hourly_maintenance = dg.ScheduleDefinition(
    name="hourly_maintenance",
    job=maintenance_job,
    cron_schedule="37 * * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description=(
        "Folds retrieval events into access statistics (and prunes folded events past their "
        "retention), recomputes the BM25 corpus statistics and refreshes the database report."
    ),
)
