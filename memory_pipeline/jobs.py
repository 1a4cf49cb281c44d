"""Jobs and schedules that span stages. Stages refer to jobs by name to avoid import cycles."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

import dagster as dg

INGEST_JOB = "ingest_job"
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"

ingest_job = dg.define_asset_job(
    INGEST_JOB,
    selection=dg.AssetSelection.assets("captured_tasks", "semantic_memories", "memory_embeddings"),
    description=(
        "Capture, semantic pass and embedding for a day or a range of days: what the sensor, "
        "the hourly catch-up and backfills run."
    ),
)

maintenance_job = dg.define_asset_job(
    "maintenance_job",
    selection=dg.AssetSelection.assets(
        "memory_database", "memory_reinforcement", "bm25_statistics"
    ),
    description=(
        "Migrations check and database report, retrieval events folded into memories, and "
        "the BM25 corpus statistics recomputed."
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


def request_days(days: Iterable[date], run_key: str) -> dg.RunRequest:
    tags = partition_tags(days)
    if PARTITION_TAG in tags:
        return dg.RunRequest(run_key=run_key, partition_key=tags[PARTITION_TAG])
    return dg.RunRequest(run_key=run_key, tags=tags)
