"""Dagster definitions for embeddings."""

import dagster as dg

from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline.embedding.keyword_index import refresh_for_asset
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.inbox.definitions import inbox_documents
from memory_pipeline.partitions import daily, day_window, single_run
from memory_pipeline.progress import step_progress
from memory_pipeline.resources import DatabaseResource, EmbeddingResource
from memory_pipeline.semantic.definitions import semantic_memories
from memory_pipeline.tuning import PROGRESS_TERMINAL_EVERY_S


@dg.asset(
    partitions_def=daily,
    backfill_policy=single_run,
    deps=[semantic_memories, inbox_documents],
    group_name="embedding",
    kinds={"pgvector"},
    description=(
        "The partition's memories (agent memories and inbox documents' passages) cut into "
        "passages (at turn boundaries, each within the "
        "embedder's window), and vectors for memories, passages and each message a passage "
        "quotes (context packs rank and quote messages one by one) in the active embedding "
        "space (MEMORY_EMBEDDING_SPACE: local all-MiniLM-L6-v2 by default, or "
        "ollama:bge-m3:1024). Cuts and embeds only what is missing or stale. After a space "
        "change, backfill all partitions: search keeps serving the old space until every "
        "memory and passage has a vector in the new one. Then brings the keyword index "
        "(tantivy, MEMORY_HOME/keyword-index, derived from the passages) in step, so BM25 "
        "search uses it again."
    ),
)
def memory_embeddings(
    context: dg.AssetExecutionContext, db: DatabaseResource, embedding: EmbeddingResource
) -> dg.MaterializeResult:
    start, end = day_window(context)
    embedder = embedding.embedder()
    with db.connection() as conn:
        report = embed_window(
            conn,
            embedder,
            start,
            end,
            progress=step_progress(context.log.info, PROGRESS_TERMINAL_EVERY_S),
        )
        keywords = refresh_for_asset(conn, context.log)
    return dg.MaterializeResult(
        metadata={
            "space": report.space,
            "embedded": report.embedded,
            "already_current": report.up_to_date,
            "passages": report.passages,
            "memories_cut_into_passages": report.passages_cut,
            "passages_embedded": report.passages_embedded,
            "passage_vectors_reused": report.passages_reused,
            "passage_messages_embedded": report.pieces_embedded,
            "serving_space": report.serving_space or "none yet",
            "active_space_coverage": report.space_coverage,
            **keywords,
        }
    )


@dg.asset(
    deps=[memory_embeddings],
    group_name="embedding",
    kinds={"postgres"},
    description=(
        "Corpus statistics for BM25 ranking: in how many passages (and memories) each "
        "lexeme occurs, and the corpus size and mean length (PostgreSQL's own ts_rank has no "
        "inverse document frequency). Recomputed, writing only what changed (nothing when "
        "nothing did); the dream cycle brings them up to date when it stores memories. Search "
        "reads them, and ranks by term frequency alone until they exist. Also refreshes the "
        "keyword index (rebuilt whole when it is missing, unreadable or its document count is "
        "off)."
    ),
)
def bm25_statistics(
    context: dg.AssetExecutionContext, db: DatabaseResource
) -> dg.MaterializeResult:
    with db.connection() as conn:
        memories, passages, lexemes = refresh_bm25_statistics(conn)
        keywords = refresh_for_asset(conn, context.log)
    return dg.MaterializeResult(
        metadata={
            "memories": memories,
            "passages": passages,
            "distinct_lexemes": lexemes,
            **keywords,
        }
    )


defs = dg.Definitions(assets=[memory_embeddings, bm25_statistics])
