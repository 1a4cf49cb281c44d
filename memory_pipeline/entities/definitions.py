"""Dagster definitions for the entity stage: nodes and mentions, a daily-partitioned asset
after the embeddings (thin over store.extract_window)."""

import dagster as dg

from memory_pipeline.embedding.definitions import memory_embeddings
from memory_pipeline.entities.ollama_backend import backend_for
from memory_pipeline.entities.store import extract_window
from memory_pipeline.partitions import daily, day_window, single_run
from memory_pipeline.resources import DatabaseResource, SemanticResource

MODEL_FAILURES_CHECK = "no_failed_entity_batches"


@dg.asset(
    partitions_def=daily,
    backfill_policy=single_run,
    deps=[memory_embeddings],
    group_name="entities",
    kinds={"postgres", "ollama"},
    pool="llm",
    check_specs=[dg.AssetCheckSpec(MODEL_FAILURES_CHECK, asset="memory_entities")],
    description=(
        "The things the partition's memories and turns are about (people, projects, "
        "repositories, packages, files, hosts, tools, places, organisations: a closed set) and "
        "the mentions wiring them to memories and turns, with extractor and confidence. "
        "Identity strongest first: deterministic identifiers (repository URLs, package names, "
        "paths, host names, e-mails, handles, speakers) merge with no model; names resolve "
        "through aliases, and an alias of two nodes is kept as an ambiguity, never linked. "
        "Offline by default; with the semantic pass's Ollama model reachable, its proposals "
        "pass a staged precheck first. Idempotent: mentions are recomputed and diffed, nodes "
        "with no mention left are removed."
    ),
)
def memory_entities(
    context: dg.AssetExecutionContext, db: DatabaseResource, semantic: SemanticResource
) -> dg.MaterializeResult:
    start, end = day_window(context)
    backend = backend_for(semantic.ollama_host, semantic.model, semantic.timeout_s)
    context.log.info(f"entity backend: {backend.name if backend else 'offline'}")
    with db.connection() as conn:
        report = extract_window(conn, start, end, backend, progress=context.log.info)
    failures = dg.MetadataValue.json(report.failures)
    return dg.MaterializeResult(
        metadata={**report.metadata(), "failed_batches": failures},
        check_results=[
            dg.AssetCheckResult(
                check_name=MODEL_FAILURES_CHECK,
                passed=not report.failures,
                severity=dg.AssetCheckSeverity.WARN,
                description="Memories of a failed model batch keep only their offline mentions "
                "and are asked again by the next run.",
                metadata={"failed_batches": failures},
            )
        ],
    )


defs = dg.Definitions(assets=[memory_entities])
