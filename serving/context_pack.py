"""Context packs: ranked memories with provenance, cut to a token budget.

Borrowed from the sister design's "context pack is the product": the consumer gets items with
kind, title, text, timestamps, score and provenance ids, knows what was left out, and never gets
correction episodes (evidence, not steering).
"""

from __future__ import annotations

import psycopg

from serving import rerank_weights as W
from serving.models import ContextItem, ContextPack, SearchFilters
from serving.search import QueryEmbedder, record_retrievals, search

_ELLIPSIS = " [...]"


def tokens_of(text: str) -> int:
    return -(-len(text) // W.CHARS_PER_TOKEN)  # ceiling


def context(
    conn: psycopg.Connection,
    query: str,
    token_budget: int,
    *,
    embedder: QueryEmbedder | None,
    filters: SearchFilters | None = None,
    project_context: str | None = None,
    record_surface: str | None = None,
) -> ContextPack:
    filters = (filters or SearchFilters()).model_copy()
    allowed = [t for t in (filters.types or []) if t not in W.STEERING_EXCLUDED_TYPES]
    if filters.types and not allowed:
        return ContextPack(
            query=query, token_budget=token_budget, tokens_used=0, truncated=False, items=[]
        )
    response = search(
        conn,
        query,
        embedder=embedder,
        limit=W.MAX_LIMIT,
        filters=filters,
        project_context=project_context,
        record_surface=None,
    )
    hits = [h for h in response.results if h.type not in W.STEERING_EXCLUDED_TYPES]
    items: list[ContextItem] = []
    used = 0
    truncated = False
    for hit in hits:
        header = tokens_of(hit.title) + 16  # kind, ids and timestamps as rendered by clients
        remaining = token_budget - used - header
        if remaining <= 0:
            truncated = True
            break
        text = hit.content
        cut = tokens_of(text) > remaining
        if cut:
            keep = (remaining - tokens_of(_ELLIPSIS)) * W.CHARS_PER_TOKEN
            if keep <= 0:
                truncated = True
                break
            text = text[:keep].rstrip() + _ELLIPSIS
            truncated = True
        used += header + tokens_of(text)
        items.append(
            ContextItem(
                kind=hit.type,
                memory_id=hit.id,
                title=hit.title,
                text=text,
                created_at=hit.created_at,
                updated_at=hit.created_at,
                score=hit.score,
                temporal_context=hit.temporal_context,
                truncated=cut,
                provenance=hit.provenance,
            )
        )
        if cut:
            break
    if record_surface and items:
        with conn.transaction():
            record_retrievals(
                conn,
                query,
                [str(i.memory_id) for i in items if not i.temporal_context],
                record_surface,
            )
    return ContextPack(
        query=query, token_budget=token_budget, tokens_used=used, truncated=truncated, items=items
    )
