"""The one partitioning scheme: UTC days.

Captured work belongs to the day its task started, so a long-running thread keeps one partition
while it grows. `end_offset=1` makes today a partition, so the sensor can capture live sessions.
Dagster's partition machinery is built for thousands of partitions, not one per task or message.
"""

import warnings

import dagster as dg

# backfill_policy is marked beta in Dagster 1.13; we rely on it knowingly (one run per backfill).
warnings.filterwarnings("ignore", category=dg.BetaWarning)

# Tasks that started before this day cannot be captured (they are reported as skips).
PARTITION_START = "2020-01-01"

daily = dg.DailyPartitionsDefinition(start_date=PARTITION_START, end_offset=1, timezone="UTC")

# A backfill over any range of days is one run: every partitioned asset works on a day range.
single_run = dg.BackfillPolicy.single_run()
