"""Schedules: the hourly catch-up of anything the sensor missed, and hourly maintenance."""

from datetime import timedelta

import dagster as dg

from memory_pipeline.capture.changes import changed_against_store
from memory_pipeline.embedding.store import days_missing_vectors
from memory_pipeline.jobs import INGEST_JOB, maintenance_job, request_days
from memory_pipeline.resources import DatabaseResource, EmbeddingResource, SourcesResource
from memory_pipeline.semantic.store import days_with_pending_passes


@dg.schedule(
    cron_schedule="7 * * * *",
    job_name=INGEST_JOB,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description=(
        "Hourly catch-up: ingests the days of transcripts that changed since they were last "
        "captured, of tasks renamed lately, of tasks whose semantic pass is pending (not quiet "
        "yet, or failed), and of memories without a vector in the active space."
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
        days = (
            changed_against_store(conn, sources.connectors(), int(renamed_after.timestamp() * 1e9))
            | days_with_pending_passes(conn)
            | days_missing_vectors(conn, embedding.space)
        )
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
        "Folds retrieval events into access statistics, recomputes the BM25 corpus statistics "
        "and refreshes the database report."
    ),
)
