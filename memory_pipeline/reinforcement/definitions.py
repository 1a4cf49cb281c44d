"""Dagster definitions for retrieval reinforcement."""

import dagster as dg

from memory_pipeline.reinforcement.fold import fold_retrievals, prune_retrievals
from memory_pipeline.resources import DatabaseResource
from memory_pipeline.tuning import RETRIEVAL_EVENTS_RETENTION_DAYS

retrieval_events = dg.AssetSpec(
    "retrieval_events",
    group_name="reinforcement",
    kinds={"postgres"},
    description=(
        "What search and the MCP tools returned, inserted by the read-only serving role "
        "(memory_reader). Outside Dagster: serving writes it, the pipeline only reads it."
    ),
)


@dg.asset(
    deps=[retrieval_events],
    group_name="reinforcement",
    kinds={"postgres"},
    description=(
        "Retrieval reinforcement: results that search and MCP returned (retrieval_events, "
        "written by the read-only role) folded into memories.access_count and last_accessed_at, "
        "which the rerank's recency stability and reinforcement terms read; then folded events "
        f"older than {RETRIEVAL_EVENTS_RETENTION_DAYS} days are deleted (never unfolded ones). "
        "Idempotent."
    ),
)
def memory_reinforcement(db: DatabaseResource) -> dg.MaterializeResult:
    with db.connection() as conn:
        events, memories = fold_retrievals(conn)  # first: nothing is pruned before it counts
        pruned = prune_retrievals(conn)
    return dg.MaterializeResult(
        metadata={
            "events_folded": events,
            "memories_reinforced": memories,
            "events_pruned": pruned,
            "retention_days": RETRIEVAL_EVENTS_RETENTION_DAYS,
        }
    )


defs = dg.Definitions(assets=[retrieval_events, memory_reinforcement])
