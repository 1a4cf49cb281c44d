"""Jobs that span stages, and how automation requests them without piling up the run queue.

Stages refer to jobs by name to avoid import cycles.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta

import dagster as dg

from memory_pipeline.partitions import partition_days

INGEST_JOB = "ingest_job"
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"

# Run states in which a run will still read the sources and the database: waiting ones will do
# all of their work later, in-progress ones may already be past some of it.
WAITING = (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED)
IN_PROGRESS = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED)

ingest_job = dg.define_asset_job(
    INGEST_JOB,
    selection=dg.AssetSelection.assets(
        "captured_tasks",
        "inbox_documents",
        "semantic_memories",
        "memory_embeddings",
        "memory_entities",
        "memory_relationships",
    ),
    # One process for the three steps: a subprocess per step costs 7 to 17 s of Python and
    # Dagster start-up each, several times what the steps themselves take on a new turn. The
    # steps run in sequence anyway (each depends on the one before); pools still apply.
    executor_def=dg.in_process_executor,
    description=(
        "Capture (agent tasks and the inbox's documents), semantic pass, embedding and "
        "relationships for a day or a range of days: what the sensors, "
        "the hourly catch-up and backfills run. Its steps run in one process."
    ),
)

maintenance_job = dg.define_asset_job(
    "maintenance_job",
    selection=dg.AssetSelection.assets(
        "memory_database", "memory_reinforcement", "bm25_statistics"
    ),
    description=(
        "Migrations check and database report, retrieval events folded into memories (and old "
        "folded ones pruned), and the BM25 corpus statistics recomputed."
    ),
)


DREAM_JOB = "dream_job"
dream_job = dg.define_asset_job(
    DREAM_JOB,
    selection=dg.AssetSelection.assets("dream_cycle", "briefing", "briefing_push"),
    executor_def=dg.in_process_executor,
    description=(
        "The dream cycle for a day: Explorer, precheck, Thinker, four-evaluator panel, storage "
        "and digest, then the day's Express briefing and its gated e-mail push. The noon "
        "schedule, the post_learn sensor and `memory-pipeline run` run it."
    ),
)


def partition_tags(days: Iterable[date]) -> dict[str, str]:
    """Tags selecting the span of the given days: one partition, or a one-run range.

    A span may include unchanged days in between; re-running them is idempotent and cheap.
    """
    ordered = sorted(days)
    first, last = ordered[0].isoformat(), ordered[-1].isoformat()
    if first == last:
        return {PARTITION_TAG: first}
    return {RANGE_START_TAG: first, RANGE_END_TAG: last}


def request_days(
    days: Iterable[date], run_key: str, assets: Iterable[str] | None = None
) -> dg.RunRequest:
    """An ingest run for the span of `days`' partitions (only the given assets of the job, if
    any): a task day before the first partition is the first partition's work."""
    tags = partition_tags(partition_days(days) or {datetime.now(UTC).date()})
    selection = [dg.AssetKey(a) for a in assets] if assets is not None else None
    if PARTITION_TAG in tags:
        return dg.RunRequest(
            run_key=run_key, partition_key=tags[PARTITION_TAG], asset_selection=selection
        )
    return dg.RunRequest(run_key=run_key, tags=tags, asset_selection=selection)


def work_key(prefix: str, items: Iterable[str]) -> str:
    """A run key naming a piece of work: the same work gets the same key, so the daemon never
    launches it twice (Dagster skips a request whose run key this sensor already used)."""
    digest = hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()[:20]
    return f"{prefix}:{digest}"


def run_days(tags: Mapping[str, str]) -> set[date]:
    """The partition days a run works on, from its tags (empty for an unpartitioned run)."""
    try:
        if PARTITION_TAG in tags:
            return {date.fromisoformat(tags[PARTITION_TAG])}
        if RANGE_START_TAG in tags and RANGE_END_TAG in tags:
            first = date.fromisoformat(tags[RANGE_START_TAG])
            last = date.fromisoformat(tags[RANGE_END_TAG])
            return {first + timedelta(days=i) for i in range((last - first).days + 1)}
    except ValueError:
        pass
    return set()


def ingest_days_in_flight(instance: dg.DagsterInstance, asset: str) -> tuple[set[date], set[date]]:
    """Days that waiting and in-progress ingest runs materialize `asset` for.

    Automation checks these before requesting, so the same pending work is never queued twice
    (the queue runs two runs at a time: duplicates would hold back everything else).
    """
    waiting: set[date] = set()
    running: set[date] = set()
    runs = instance.get_runs(
        filters=dg.RunsFilter(job_name=INGEST_JOB, statuses=[*WAITING, *IN_PROGRESS])
    )
    key = dg.AssetKey(asset)
    for run in runs:
        if run.asset_selection is not None and key not in run.asset_selection:
            continue
        days = run_days(run.tags)
        (waiting if run.status in WAITING else running).update(days)
    return waiting, running
