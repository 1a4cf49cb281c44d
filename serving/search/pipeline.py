"""The whole search: filters, both channels, fusion, rerank, limit, temporal neighbours,
provenance and matched passages, and the retrieval events."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from memory_pipeline import tuning
from serving import keyword_index
from serving.models import (
    SearchFilters,
    SearchHit,
    SearchResponse,
)
from serving.rerank import Candidate, rounded, rrf_scores, terms, top_results
from serving.search.bm25 import bm25_channel
from serving.search.candidates import fused_candidates, temporal_neighbours
from serving.search.channel import EMPTY
from serving.search.filters import filtered_memories
from serving.search.provenance import (
    PASSAGE_DETAILS_SQL,
    PROVENANCE_SQL,
    MatchedChoice,
    chains_of,
    collect_passages,
)
from serving.search.vector import (
    SCAN_SETTINGS,
    scan_settings_params,
    vector_result,
    vector_statement,
)
from serving.text import tokens


class QueryEmbedder:
    """Embeds queries in the serving space; loaded lazily, kept for the process."""

    def __init__(self, ollama_host: str) -> None:
        self.ollama_host = ollama_host
        self._by_space: dict[str, Any] = {}
        self._recent: dict[tuple[str, str], np.ndarray] = {}
        self._lock = threading.Lock()

    def embed(self, space: str, query: str) -> np.ndarray:
        # A context pack embeds its query twice (search, then its messages' ranks): once.
        key = (space, query)
        with self._lock:
            vector = self._recent.get(key)
        if vector is None:
            vector = self.embed_many(space, [query])[0]
            with self._lock:
                if len(self._recent) >= 16:
                    self._recent.pop(next(iter(self._recent)))
                self._recent[key] = vector
        return vector

    def forget_recent(self) -> None:
        """Drop the recent queries' vectors (the benchmark times a first call's embedding)."""
        with self._lock:
            self._recent.clear()

    def embed_many(self, space: str, texts: list[str]) -> np.ndarray:
        if space not in self._by_space:
            from memory_pipeline.embedding.spaces import embedder_for

            self._by_space[space] = embedder_for(space, self.ollama_host)
        return self._by_space[space].embed(texts)


def search(conn: psycopg.Connection, query: str, **options: Any) -> SearchResponse:
    """The full pipeline in a transaction of its own; `options` are `search_in_transaction`'s."""
    with conn.transaction():
        return search_in_transaction(conn, query, **options)


def search_in_transaction(
    conn: psycopg.Connection,
    query: str,
    *,
    embedder: QueryEmbedder | None,
    limit: int = tuning.DEFAULT_LIMIT,
    filters: SearchFilters | None = None,
    context: str | None = None,
    project_context: str | None = None,
    channels: tuple[str, ...] = ("bm25", "vector"),
    temporal_context: bool = True,
    record_surface: str | None = None,
    now: datetime | None = None,
    passages_per_hit: int = tuning.MATCHED_PASSAGES_PER_HIT,
    near_passages: bool = False,
) -> SearchResponse:
    """The full pipeline, in the caller's transaction (a context pack's, one for the whole
    pack). `channels` lets the evaluation measure each channel alone.

    `passages_per_hit` and `near_passages` widen what a hit reports as matched: context packs
    choose among more of each hit's passages, including every passage the vector channel
    ranked (not only each memory's nearest).

    Round trips (issue 35: under load each one waits for a core): the serving space with the
    vector scan's settings, the filter's estimate and the keyword index's check go together;
    the vector statement is sent before the keyword index is searched (PostgreSQL walks the
    HNSW graph while tantivy ranks) and answered with the BM25 statement's; the provenance and
    the matched passages' details are read together."""
    filters = filters or SearchFilters()
    now = now or datetime.now(UTC)
    limit = max(1, min(limit, tuning.MAX_LIMIT))
    want_vector = "vector" in channels and embedder is not None
    with conn.pipeline():
        space_cursor = (
            conn.execute(
                "SELECT name, dims, " + SCAN_SETTINGS + " FROM embedding_spaces WHERE serving",
                scan_settings_params(),
            )
            if want_vector
            else None
        )
        n = filtered_memories(conn, filters)
        view = keyword_index.open_view(conn, query) if "bm25" in channels else None
        row = space_cursor.fetchone() if space_cursor is not None else None
        space = (row[0], row[1]) if row else None
        vec_cursor = None
        if space is not None and embedder is not None:
            statement, params = vector_statement(
                conn,
                space[0],
                space[1],
                embedder.embed(space[0], query),
                filters,
                n,
                settings_applied=True,
            )
            vec_cursor = conn.execute(statement, params)
        bm25_result = bm25_channel(conn, query, filters, n, view) if "bm25" in channels else EMPTY
        vec_result = vector_result(vec_cursor.fetchall()) if vec_cursor is not None else EMPTY
    bm25, vec = bm25_result.memories, vec_result.memories
    fused = rrf_scores(bm25, vec)
    rows = fused_candidates(conn, fused)
    bm25_rank = {mid: i for i, mid in enumerate(bm25, start=1)}
    vec_rank = {mid: i for i, mid in enumerate(vec, start=1)}
    q_tokens = tokens(query)
    c_tokens = tokens(context) if context else q_tokens
    ranked, parts_of = top_results(
        [row.candidate for row in rows.values()],
        q_tokens,
        c_tokens,
        project_context,
        now,
        limit,
    )

    extra: list[Candidate] = []
    if temporal_context and ranked:
        extra_rows = temporal_neighbours(conn, ranked[0], {c.id for c in ranked}, filters)
        extra = [row.candidate for row in extra_rows.values()]
        for mid in extra_rows.keys() & rows.keys() - parts_of.keys():
            # A fused candidate the rerank did not need to score reports its terms.
            parts_of[mid] = terms(rows[mid].candidate, q_tokens, c_tokens, project_context, now)
        rows.update(extra_rows)
    choice = MatchedChoice.of(
        bm25_result,
        vec_result,
        {c.id for c in ranked},
        per_hit=passages_per_hit,
        nearest_only=not near_passages,
    )
    wanted = choice.wanted
    with conn.pipeline():
        chains_cursor = conn.execute(PROVENANCE_SQL, [[c.id for c in ranked + extra]])
        details_cursor = conn.execute(PASSAGE_DETAILS_SQL, [wanted]) if wanted else None
    chains = chains_of(chains_cursor.fetchall())
    matched = choice.matched(
        collect_passages(details_cursor.fetchall()) if details_cursor is not None else {}
    )

    hits = []
    extra_ids = {c.id for c in extra}
    for cand in ranked + extra:
        is_extra = cand.id in extra_ids
        parts = parts_of.get(cand.id, {})
        total = sum(parts.values())
        row = rows[cand.id]
        hits.append(
            SearchHit(
                id=cand.id,
                type=cand.type,
                title=cand.title,
                content=cand.content,
                project=cand.project,
                mem_class=cand.mem_class,
                source_type=row.source_type,
                status=cand.status,
                tags=row.tags,
                created_at=cand.created_at,
                updated_at=row.updated_at,
                score=round(total, 6),
                rrf=round(cand.rrf, 6),
                bm25_rank=bm25_rank.get(cand.id),
                vector_rank=vec_rank.get(cand.id),
                components=rounded(parts),
                temporal_context=is_extra,
                provenance=chains.get(cand.id, []),
                passages=matched.get(cand.id, []),
                observation_count=row.observation_count,
                cite=row.cite,
            )
        )
    if record_surface and ranked:
        record_retrievals(conn, query, [c.id for c in ranked], record_surface)
    return SearchResponse(query=query, space=space[0] if space else None, results=hits)


def record_retrievals(
    conn: psycopg.Connection, query: str, memory_ids: Sequence[str], surface: str
) -> None:
    """What was returned, for reinforcement; the query is kept only as a hash."""
    digest = hashlib.sha256(query.encode()).hexdigest()
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO retrieval_events (memory_id, surface, query_sha256, rank)"
            " VALUES (%s, %s, %s, %s)",
            [(mid, surface, digest, rank) for rank, mid in enumerate(memory_ids, start=1)],
        )
