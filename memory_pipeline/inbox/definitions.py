"""Dagster definitions for the inbox: the inbox files, the stored sources, the sensor."""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from memory_pipeline.db.definitions import memory_database
from memory_pipeline.inbox.changes import inbox_changed
from memory_pipeline.inbox.resource import InboxResource
from memory_pipeline.inbox.store import INBOX_LINE, capture_inbox
from memory_pipeline.jobs import INGEST_JOB, request_days, work_key
from memory_pipeline.partitions import daily, single_run
from memory_pipeline.progress import step_progress
from memory_pipeline.resources import DatabaseResource
from memory_pipeline.tuning import INBOX_SENSOR_INTERVAL_S

inbox_files = dg.AssetSpec(
    "inbox_files",
    group_name="inbox",
    kinds={"file"},
    description=(
        "What the user reads and watches, dropped into MEMORY_INBOX_DIR (default "
        "MEMORY_HOME/inbox): saved web pages (.html, .htm, .mhtml), documents (Markdown, text, "
        "reStructuredText, PDF), video transcripts (.vtt, .srt with yt-dlp's .info.json beside "
        "them) and `*.url` lists of URLs to fetch (`memory-pipeline add URL` writes one). The "
        "demo corpus's inbox when capture reads the demo corpus."
    ),
)


@dg.asset(
    partitions_def=daily,
    backfill_policy=single_run,
    deps=[inbox_files, memory_database],
    group_name="inbox",
    kinds={"postgres"},
    description=(
        "Inbox documents stored as sources (inbox_sources), each passage (a section at its "
        "heading, a PDF page, a group of video cues) a `source` memory with its position (§ "
        "heading, p. 3, 12:31) and URL or path, classified (mem_class), redacted, for the "
        "embedding and relationship steps of the same run. Read by the run whose days include "
        "today (UTC): the same content changes nothing, an edited document is replaced in "
        "place (its passages, memories and edges re-derived), a deleted file is kept (marked "
        "missing) until `memory-pipeline inbox forget`. Bad files, exclusions and failed "
        "fetches are recorded in capture_skips; forgotten URLs are never fetched again."
    ),
)
def inbox_documents(
    context: dg.AssetExecutionContext, db: DatabaseResource, inbox: InboxResource
) -> dg.MaterializeResult:
    window = context.partition_time_window
    today = datetime.now(UTC).date()
    if not window.start.date() <= today < window.end.date():
        return dg.MaterializeResult(
            metadata={"inbox_read": False, "note": "the inbox is read by today's partition"}
        )
    with db.connection() as conn:
        report = capture_inbox(
            conn,
            Path(inbox.inbox_dir),
            Path(inbox.fetch_dir),
            today,
            step_progress(context.log.info),
        )
    metadata: dict = {"inbox_read": True, "inbox_dir": inbox.inbox_dir}
    for key, value in report.metadata().items():
        metadata[key] = dg.MetadataValue.json(value) if isinstance(value, dict) else value
    metadata[INBOX_LINE] = dg.MetadataValue.text(report.line())
    return dg.MaterializeResult(metadata=metadata)  # type: ignore[arg-type]


@dg.sensor(
    job_name=INGEST_JOB,
    minimum_interval_seconds=INBOX_SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Watches MEMORY_INBOX_DIR and requests today's ingest run when a file there is new, "
        "changed (size or mtime) or gone since the inbox last stored it, a `*.url` list "
        "names a URL not stored yet, or a listed video URL waits for yt-dlp and yt-dlp is "
        "installed now (a forgotten URL never asks)."
    ),
)
def inbox_sensor(
    context: dg.SensorEvaluationContext, inbox: InboxResource, db: DatabaseResource
) -> dg.SensorResult:
    with db.connection() as conn:
        changed = inbox_changed(conn, Path(inbox.inbox_dir))
    if not changed:
        return dg.SensorResult(skip_reason="no inbox file changed")
    today = datetime.now(UTC).date()
    key = work_key("inbox", changed)
    context.log.info(f"{len(changed)} inbox change(s)")
    return dg.SensorResult(run_requests=[request_days({today}, key)])


defs = dg.Definitions(assets=[inbox_files, inbox_documents], sensors=[inbox_sensor])
