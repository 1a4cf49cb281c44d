"""Dagster definitions for relationship discovery."""

import dagster as dg

from memory_pipeline.embedding.definitions import memory_embeddings
from memory_pipeline.entities.definitions import memory_entities
from memory_pipeline.partitions import daily, day_window, single_run
from memory_pipeline.progress import step_progress
from memory_pipeline.relationships.judges import judge_for
from memory_pipeline.relationships.store import discover_window
from memory_pipeline.resources import DatabaseResource, SemanticResource
from memory_pipeline.tuning import PROGRESS_TERMINAL_EVERY_S

JUDGE_FAILURES_CHECK = "no_failed_judgements"


@dg.asset(
    partitions_def=daily,
    backfill_policy=single_run,
    # After the entities: a reversal needs a subject entity both memories mention.
    deps=[memory_embeddings, memory_entities],
    group_name="relationships",
    kinds={"postgres", "pgvector", "ollama"},
    pool="llm",
    check_specs=[dg.AssetCheckSpec(JUDGE_FAILURES_CHECK, asset="memory_relationships")],
    description=(
        "Typed edges from the partition's new memories to the whole corpus, through the serving "
        "space's HNSW index: derived_from (a decision, insight or correction to its segment), "
        "related_to (close vector neighbours, with the cosine), duplicate_of (the same statement "
        "from another task: search shows the kept memory with its observation count), and "
        "judged edges (contradicts, supports, extends, requires, blocks, inspires) from the "
        "Ollama model of the semantic pass, or offline rules that find reversed decisions; "
        "a reversal (contradicts) needs a newer decision and a subject entity both memories "
        "mention, so the step runs after the entity mentions. "
        "Idempotent: a memory is linked again only when its text, its entity mentions, the "
        "judge or the serving space changed; an edge that stops holding gets expired_at, "
        "never a delete."
    ),
)
def memory_relationships(
    context: dg.AssetExecutionContext, db: DatabaseResource, semantic: SemanticResource
) -> dg.MaterializeResult:
    start, end = day_window(context)
    judge = judge_for(semantic.ollama_host, semantic.model, semantic.timeout_s)
    context.log.info(f"relationship judge: {judge.name}")
    with db.connection() as conn:
        report = discover_window(
            conn,
            judge,
            start,
            end,
            progress=step_progress(context.log.info, PROGRESS_TERMINAL_EVERY_S),
        )
    failures = dg.MetadataValue.json([f.model_dump() for f in report.failures])
    metadata = report.metadata()
    metadata["live_edges_by_type"] = dg.MetadataValue.json(report.live)
    metadata["failed_batches"] = failures
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[
            dg.AssetCheckResult(
                check_name=JUDGE_FAILURES_CHECK,
                passed=not report.failures,
                severity=dg.AssetCheckSeverity.WARN,
                description="Pairs whose judgement failed stored nothing and are asked again "
                "by the next run.",
                metadata={"failed_batches": failures},
            )
        ],
    )


defs = dg.Definitions(assets=[memory_relationships])
