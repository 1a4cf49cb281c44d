"""Dagster definitions for the Task Semantic Pass."""

import dagster as dg

from memory_pipeline.capture.definitions import captured_tasks
from memory_pipeline.partitions import daily, day_window, single_run
from memory_pipeline.resources import DatabaseResource, SemanticResource
from memory_pipeline.semantic.process import process_window

FAILURES_CHECK = "no_failed_passes"


@dg.asset(
    partitions_def=daily,
    backfill_policy=single_run,
    deps=[captured_tasks],
    group_name="semantic",
    kinds={"postgres", "ollama"},
    pool="llm",
    check_specs=[dg.AssetCheckSpec(FAILURES_CHECK, asset="semantic_memories")],
    description=(
        "Task Semantic Pass for every captured task of the partition whose cursor is behind and "
        "that has been quiet for MEMORY_SEMANTIC_QUIET_MINUTES: topic segments (each a "
        "searchable memory), distilled decisions and insights, and user correction episodes, "
        "with exact provenance to turns. One Ollama call per task revision (offline rules when "
        "no model is reachable); each pass is stored atomically with the task's cursor."
    ),
)
def semantic_memories(
    context: dg.AssetExecutionContext, db: DatabaseResource, semantic: SemanticResource
) -> dg.MaterializeResult:
    start, end = day_window(context)
    backend = semantic.backend()
    context.log.info(f"semantic backend: {backend.name}")
    with db.connection() as conn:
        report = process_window(
            conn,
            backend,
            start,
            end,
            semantic.quiet_minutes,
            progress=context.log.info,
        )
    failed = dg.MetadataValue.json([f.model_dump() for f in report.failures])
    metadata = report.metadata()
    metadata["memories_by_type"] = dg.MetadataValue.json(metadata["memories_by_type"])
    metadata["failed_tasks"] = failed
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[
            dg.AssetCheckResult(
                check_name=FAILURES_CHECK,
                passed=not report.failures,
                severity=dg.AssetCheckSeverity.WARN,
                description="Failed passes stored nothing and are retried by the next run.",
                metadata={"failed_tasks": failed},
            )
        ],
    )


defs = dg.Definitions(assets=[semantic_memories])
