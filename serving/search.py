"""Hybrid search, exactly as the seed specifies, over the read-only role's connection.

1. Each channel ranks passages (memory_passages: a memory cut at turn boundaries into pieces
   that fit the embedding window): Okapi BM25 over each passage's full-text entry, and cosine
   over the serving space's HNSW index of passage vectors. A memory takes the rank of its best
   passage in that channel, so a long segment is found by whichever of its turns matches; the
   same CANDIDATES_PER_CHANNEL memories per channel whatever the output limit.
2. Reciprocal Rank Fusion (k = 60) of the two memory rankings.
3. The utility rerank over the whole fused pool (`serving/rerank.py`).
4. Exact-content dedup, then soft diversity (at most two results per source task first).
5. The limit, applied last: a larger limit only appends (prefix stability).
6. Temporal context: the top result's neighbours within 24 hours, appended and marked.
7. Retrieval events for the returned results, which the pipeline folds into access counts.

Every hit carries the passages that matched it (best first by the RRF of their passage ranks),
with their turn ordinals and native ids: what a context pack quotes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from memory_pipeline import tuning
from memory_pipeline.embedding.spaces import serving_space
from serving import keyword_index
from serving import rerank_weights as W
from serving.models import (
    PassageMatch,
    PassageTurn,
    Provenance,
    SearchFilters,
    SearchHit,
    SearchResponse,
    TurnRef,
)
from serving.rerank import Candidate, rounded, rrf_scores, terms, top_results
from serving.text import tokens

# Ids come back as text: building and printing ~1,000 uuid.UUID objects per search cost
# milliseconds of Python (issue 12).
_CANDIDATE_COLUMNS = (
    "m.id::text, m.type, m.title, m.content, m.encoding_context, m.project, m.mem_class, m.status,"
    " m.depth_score, m.access_count, m.created_at, m.last_accessed_at, m.source_type, m.tags,"
    " m.updated_at, m.observation_count,"
    " (SELECT p.task_id::text FROM memory_provenance p WHERE p.memory_id = m.id LIMIT 1)"
)


class QueryEmbedder:
    """Embeds queries in the serving space; loaded lazily, kept for the process."""

    def __init__(self, ollama_host: str) -> None:
        self.ollama_host = ollama_host
        self._by_space: dict[str, Any] = {}

    def embed(self, space: str, query: str) -> np.ndarray:
        return self.embed_many(space, [query])[0]

    def embed_many(self, space: str, texts: list[str]) -> np.ndarray:
        if space not in self._by_space:
            from memory_pipeline.embedding.spaces import embedder_for

            self._by_space[space] = embedder_for(space, self.ollama_host)
        return self._by_space[space].embed(texts)


@dataclass(frozen=True)
class _Row:
    candidate: Candidate
    source_type: str | None
    tags: list[str]
    updated_at: datetime
    observation_count: int  # > 1: near-duplicates folded into it (relationship discovery)


# A memory a newer decision reverses (live contradicts edge: newer -> older) or that has a
# successor (live superseded_by edge: old -> new); relationship discovery writes the first.
REVERSED_SQL = (
    "NOT EXISTS (SELECT 1 FROM memory_relationships r WHERE r.expired_at IS NULL AND"
    " ((r.relation_type = 'contradicts' AND r.target_id = m.id)"
    " OR (r.relation_type = 'superseded_by' AND r.source_id = m.id)))"
)


# The memory columns each passage vector carries (sql/023), so the vector channel filters
# in the index scan itself.
_ON_VECTORS = {
    "type": "memory_type",
    "source_type": "memory_source_type",
    "project": "memory_project",
    "created_at": "memory_created_at",
}


@dataclass(frozen=True)
class _Condition:
    sql: sql.Composable
    params: list[Any]
    on_vectors: bool  # on `e` (passage_embeddings), else on `m` (memories)


def _conditions(filters: SearchFilters, *, on_vectors: bool = False) -> list[_Condition]:
    """The hard filters as conditions on `m` (memories); with `on_vectors`, those on type,
    source, project and time are on the columns `e` (passage_embeddings) carries."""

    def on(column: str, template: str, value: Any) -> _Condition:
        if on_vectors and column in _ON_VECTORS:
            name: sql.Composable = sql.SQL("e.{}").format(sql.Identifier(_ON_VECTORS[column]))
        else:
            name = sql.SQL("m.{}").format(sql.Identifier(column))
        return _Condition(
            sql.SQL(template).format(name), [value], on_vectors and column in _ON_VECTORS
        )

    conds = [on("status", "{} = ANY(%s)", list(filters.statuses))]
    for column, values in (
        ("type", filters.types),
        ("mem_class", filters.mem_classes),
        ("project", filters.projects),
        ("source_type", filters.sources),
    ):
        if values:
            conds.append(on(column, "{} = ANY(%s)", list(values)))
    if filters.tags:
        conds.append(on("tags", "{} && %s", list(filters.tags)))
    if filters.since:
        conds.append(on("created_at", "{} >= %s", filters.since))
    if filters.until:
        conds.append(on("created_at", "{} < %s", filters.until))
    for flag, condition in (
        (not filters.include_private, "NOT m.private"),
        (not filters.include_duplicates, "m.duplicate_of IS NULL"),
        (filters.exclude_reversed, REVERSED_SQL),
    ):
        if flag:
            conds.append(_Condition(sql.SQL(condition), [], False))
    return conds


def _joined(conds: list[_Condition]) -> tuple[sql.Composable, list[Any]]:
    if not conds:
        return sql.SQL("true"), []
    return sql.SQL(" AND ").join(c.sql for c in conds), [p for c in conds for p in c.params]


def filter_sql(filters: SearchFilters) -> tuple[sql.Composable, list[Any]]:
    """WHERE conditions on `m` (memories) for the hard filters."""
    return _joined(_conditions(filters))


@dataclass(frozen=True)
class ChannelResult:
    """One channel's memory ranking (each memory at its best passage) and passage ranking."""

    memories: list[str]
    passages: list[tuple[str, str]]  # (passage id, memory id), best first

    @staticmethod
    def of(rows: Sequence[tuple[Any, Any]]) -> ChannelResult:
        """From (passage id, memory id) rows best first: memories in order of first appearance,
        at most CANDIDATES_PER_CHANNEL of them."""
        memories: list[str] = []
        seen: set[str] = set()
        passages = []
        for pid, mid in rows:
            passages.append((str(pid), str(mid)))
            if str(mid) not in seen and len(memories) < W.CANDIDATES_PER_CHANNEL:
                seen.add(str(mid))
                memories.append(str(mid))
        return ChannelResult(memories, passages)


EMPTY = ChannelResult([], [])


# The tail of a BM25 statement over `scored (id, memory_id, s)` passages: the best passage of each
# of the top memories (first %s: how many memories), plus any other passage within the top
# (second %s: how many passages), best first.
RANK_PASSAGES_BY_MEMORY = (
    "), ranked AS ("
    " SELECT id, memory_id, s,"
    "  row_number() OVER (ORDER BY s DESC, id) AS prank,"
    "  row_number() OVER (PARTITION BY memory_id ORDER BY s DESC, id) AS inner_rank"
    " FROM scored"
    "), best AS MATERIALIZED ("
    " SELECT memory_id, s FROM ranked WHERE inner_rank = 1"
    " ORDER BY s DESC, memory_id LIMIT %s"
    ")"
    " SELECT r.id, r.memory_id FROM ranked r JOIN best b USING (memory_id)"
    " WHERE r.inner_rank = 1 OR r.prank <= %s ORDER BY r.s DESC, r.id"
)


def bm25_channel(
    conn: psycopg.Connection, query: str, filters: SearchFilters, filtered: int | None = -1
) -> ChannelResult:
    """Okapi BM25 over passages: any query lexeme may match, rare ones weigh most.

    The query's English lexemes are OR-ed (a question rarely repeats every word of its answer),
    weighted by the inverse document frequencies the pipeline recorded over passages (before the
    first statistics exist, every lexeme counts the same). Scoring every passage that holds a
    common word is what made this channel slow (issue 12). When the keyword index (tantivy,
    derived from the passages by the pipeline) is current, it finds the best passages by
    block-max WAND, narrowed by the filter; PostgreSQL applies the whole filter and scores the
    best of them exactly. Otherwise (no index, or a passage not yet in it) it reads the
    impact-ordered index (passage_postings, sql/021): for each lexeme only its
    BM25_POSTINGS_PER_LEXEME best postings, found in impact order by a btree. Passages found
    that way are filtered, the best BM25_RESCORE_PASSAGES of them by that partial sum are scored
    exactly over every query lexeme, and ranked. A rare lexeme's list is read whole; only a
    common lexeme's long tail, whose postings weigh least, is left unread. Returned: the best
    passages of the best CANDIDATES_PER_CHANNEL memories (each memory's best passage, and any
    passage within the top PASSAGE_CANDIDATES_PER_CHANNEL).

    Without the index, under a narrowing filter that few memories pass (`filtered`, from
    filtered_memories; -1: count them here), those memories' passages are scored exactly
    instead when the postings to walk outnumber them: walking postings until enough survive
    such a filter reads most of every common word's list, two primary-key lookups per posting.
    """
    # The keyword index (tantivy, serving/keyword_index.py) ranks when it is current; it
    # narrows by the filter itself, so it also serves the filters the exact path would.
    view = keyword_index.open_view(conn, query)
    if view is None:
        statement, params = bm25_chosen_statement(conn, query, filters, filtered)
        return ChannelResult.of(conn.execute(statement, params).fetchall())
    if not view.lexemes:
        return EMPTY  # only stop words
    # Its best passages, kept when their memory passes the filter, deeper while too few
    # memories survive it. The best BM25_INDEX_EXACT_PASSAGES of those that pass are scored
    # exactly as the postings would (the arithmetic of bm25_filtered_statement), as tantivy
    # rounds lengths above 40 tokens; the rest keep tantivy's score. One round trip each.
    where, filter_params = filter_sql(filters)
    statement = sql.SQL(
        "WITH " + _QUERY_LEXEMES + ", c AS MATERIALIZED ("
        # The hits in tantivy's order: n, passage id, memory id (keyword_index.pack).
        " SELECT i AS n, encode(substr(%b, i * 32 - 31, 16), 'hex')::uuid AS pid,"
        "  encode(substr(%b, i * 32 - 15, 16), 'hex')::uuid AS mid"
        " FROM generate_series(1, %s) AS i"
        "), f AS MATERIALIZED ("
        " SELECT m.id FROM memories m"
        " WHERE m.id = ANY(ARRAY(SELECT DISTINCT mid FROM c)) AND {where}"
        "), kept AS MATERIALIZED ("
        " SELECT c.n, c.pid FROM c WHERE c.mid IN (SELECT id FROM f)"
        "), e AS MATERIALIZED ("
        " SELECT k.n, sum(q.idf * (t.tf * (pr.k1 + 1)"
        "  / (t.tf + pr.k1 * (1 - pr.b + pr.b * length(p.search_vector) / pr.avgdl)))::real)"
        "  AS s"
        " FROM (SELECT * FROM kept ORDER BY n LIMIT %s) k"
        " JOIN memory_passages p ON p.id = k.pid CROSS JOIN passage_postings_params pr"
        # The query's lexemes picked out first: joining all of a passage's lexemes to q made
        # the planner hash thousands of them (it cannot know q has a handful of rows).
        " CROSS JOIN LATERAL ("
        "  SELECT * FROM unnest(p.search_vector) AS v WHERE v.lexeme = ANY(%s::text[])"
        " ) u JOIN q ON q.lexeme = u.lexeme"
        " CROSS JOIN LATERAL ("
        "  SELECT coalesce(sum(CASE w WHEN 'A' THEN pr.title_tf ELSE 1 END), 1) AS tf"
        "  FROM unnest(u.weights) AS w"
        " ) t GROUP BY k.n"
        ") SELECT k.n, e.s FROM kept k LEFT JOIN e USING (n)"
    ).format(where=where)
    depth = W.BM25_RESCORE_PASSAGES
    while True:
        hits = view.top(depth, filters)
        packed = keyword_index.pack(hits)
        rows = conn.execute(
            statement,
            [
                query,
                packed,
                packed,
                len(hits),
                *filter_params,
                tuning.BM25_INDEX_EXACT_PASSAGES,
                view.lexemes,
            ],
        ).fetchall()
        result = ChannelResult.of(
            keyword_index.rank(
                [(hits[n - 1][0] if s is None else s, *hits[n - 1][1:]) for n, s in rows]
            )
        )
        enough = len(result.memories) >= W.CANDIDATES_PER_CHANNEL
        if enough or len(hits) < depth or depth >= view.documents:
            return result
        depth *= 2


def bm25_chosen_statement(
    conn: psycopg.Connection, query: str, filters: SearchFilters, filtered: int | None = -1
) -> tuple[sql.Composed, list[Any]]:
    """The statement bm25_channel runs for this query and filter (the benchmark EXPLAINs it):
    the postings walk, or exact scores over the few memories a filter leaves."""
    if filtered == -1:
        filtered = filtered_memories(conn, filters)
    if _exact(filtered):
        walk = conn.execute(
            "SELECT coalesce(sum(least(ndoc, %s)), 0) FROM passage_term_stats"
            " WHERE lexeme = ANY(tsvector_to_array(to_tsvector('english', %s)))",
            [_postings_per_lexeme(filters), query],
        ).fetchone()
        if walk and walk[0] > filtered:  # type: ignore[operator]
            return bm25_filtered_statement(query, filters)
    return bm25_statement(query, filters)


def filtered_memories(conn: psycopg.Connection, filters: SearchFilters) -> int | None:
    """How many memories a narrowing filter leaves, as the planner estimates it (planning
    only: counting even a few thousand rows costs more than some whole searches); None
    without a narrowing filter. It only chooses between two correct plans."""
    if not _narrowing(filters):
        return None
    where, params = filter_sql(filters)
    row = conn.execute(
        sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE {where}").format(where=where),
        params,
    ).fetchone()
    return int(row[0][0]["Plan"]["Plan Rows"]) if row else None  # type: ignore[index]


def _exact(filtered: int | None) -> bool:
    return filtered is not None and filtered <= tuning.SEARCH_EXACT_FILTERED_MEMORIES


def _postings_per_lexeme(filters: SearchFilters) -> int:
    if _narrowing(filters):
        return W.BM25_POSTINGS_PER_LEXEME * W.BM25_FILTERED_POSTINGS_FACTOR
    return W.BM25_POSTINGS_PER_LEXEME


# The query's lexemes with the idf of _bm25_statistics (1 before any statistics exist).
_QUERY_LEXEMES = (
    "q(lexeme, idf) AS MATERIALIZED ("
    " SELECT l.lexeme, CASE WHEN coalesce(c.documents, 0) = 0 THEN 1.0"
    "  ELSE ln(1 + (c.documents - coalesce(t.ndoc, 0) + 0.5) / (coalesce(t.ndoc, 0) + 0.5))"
    "  END"
    " FROM (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %s)))"
    "       AS lexeme) l"
    " LEFT JOIN passage_term_stats t ON t.lexeme = l.lexeme"
    " LEFT JOIN passage_corpus_stats c ON true"
    ")"
)


def bm25_filtered_statement(query: str, filters: SearchFilters) -> tuple[sql.Composed, list[Any]]:
    """Exact BM25 over the passages of the memories a filter leaves: each passage holding a
    query lexeme is scored from its full-text entry with the parameters the postings were
    computed with (passage_postings_params), so it ranks as the postings would, exactly."""
    where, filter_params = filter_sql(filters)
    return (
        sql.SQL(
            "WITH " + _QUERY_LEXEMES + ", f AS MATERIALIZED ("
            " SELECT m.id FROM memories m WHERE {where}"
            "), scored AS ("
            " SELECT p.id, p.memory_id, sum(q.idf * (t.tf * (pr.k1 + 1)"
            "  / (t.tf + pr.k1 * (1 - pr.b + pr.b * length(p.search_vector) / pr.avgdl)))::real)"
            "  AS s"
            # From the filtered memories to their passages (OFFSET 0 keeps this a nested loop
            # over the memory_id index: a common lexeme's GIN list can be most of the corpus).
            " FROM f CROSS JOIN LATERAL ("
            "  SELECT p.id, p.memory_id, p.search_vector FROM memory_passages p"
            "  WHERE p.memory_id = f.id AND p.search_vector @@ (SELECT"
            "   coalesce(string_agg(quote_literal(lexeme), ' | '), '') FROM q)::tsquery"
            "  OFFSET 0"
            " ) p"
            " CROSS JOIN passage_postings_params pr"
            " CROSS JOIN LATERAL unnest(p.search_vector) AS u"
            " JOIN q ON q.lexeme = u.lexeme"
            " CROSS JOIN LATERAL ("
            "  SELECT coalesce(sum(CASE w WHEN 'A' THEN pr.title_tf ELSE 1 END), 1) AS tf"
            "  FROM unnest(u.weights) AS w"
            " ) t"
            " GROUP BY p.id, p.memory_id" + RANK_PASSAGES_BY_MEMORY
        ).format(where=where),
        [
            query,
            *filter_params,
            W.CANDIDATES_PER_CHANNEL,
            W.PASSAGE_CANDIDATES_PER_CHANNEL,
        ],
    )


def bm25_statement(query: str, filters: SearchFilters) -> tuple[sql.Composed, list[Any]]:
    """The BM25 channel's postings statement and its parameters.

    One statement, one round trip: under load every extra round trip waits for a core."""
    where, filter_params = filter_sql(filters)
    per_lexeme = _postings_per_lexeme(filters)
    return (
        sql.SQL(
            "WITH " + _QUERY_LEXEMES + ", read AS MATERIALIZED ("
            # Each lexeme's best postings, in impact order from the btree.
            " SELECT q.lexeme, q.idf * h.impact AS w, h.passage_id"
            " FROM q CROSS JOIN LATERAL ("
            "   SELECT pp.passage_id, pp.impact FROM passage_postings pp"
            "   WHERE pp.lexeme = q.lexeme ORDER BY pp.impact DESC LIMIT %s"
            " ) h"
            # Lexemes whose list was cut short: only their contributions can be missing.
            "), cut AS MATERIALIZED ("
            " SELECT lexeme FROM read GROUP BY lexeme HAVING count(*) >= %s"
            "), hits AS MATERIALIZED ("
            " SELECT passage_id, sum(w) AS partial,"
            "  coalesce(sum(w) FILTER (WHERE lexeme NOT IN (SELECT lexeme FROM cut)), 0) AS whole"
            " FROM read GROUP BY passage_id"
            # Best partial sums first, filtered one by one until enough passed: a nested
            # loop over the sorted hits that stops at the LIMIT (the inner LIMIT 1 keeps the
            # planner from turning it into a hash join over every hit).
            "), candidates AS MATERIALIZED ("
            " SELECT x.id, x.memory_id, x.search_vector, h.whole"
            " FROM (SELECT * FROM hits ORDER BY partial DESC, passage_id) h"
            " CROSS JOIN LATERAL ("
            "   SELECT p.id, p.memory_id, p.search_vector FROM memory_passages p JOIN memories m"
            "   ON m.id = p.memory_id WHERE p.id = h.passage_id AND {where} LIMIT 1"
            " ) x LIMIT %s"
            # Exact scores: what the whole lists gave, plus the cut lexemes' impacts computed
            # from the full-text entry the filter step just read, as passage_postings_of does
            # (looking each up in the postings' primary key cost more than the rest together).
            "), scored AS ("
            " SELECT c.id, c.memory_id, c.whole + coalesce(e.s, 0) AS s"
            " FROM candidates c CROSS JOIN passage_postings_params pr CROSS JOIN LATERAL ("
            "   SELECT sum(q.idf * (t.tf * (pr.k1 + 1) / (t.tf + pr.k1"
            "    * (1 - pr.b + pr.b * length(c.search_vector) / pr.avgdl)))::real) AS s"
            "   FROM unnest(c.search_vector) AS u JOIN q ON q.lexeme = u.lexeme"
            "   CROSS JOIN LATERAL ("
            "    SELECT coalesce(sum(CASE w WHEN 'A' THEN pr.title_tf ELSE 1 END), 1) AS tf"
            "    FROM unnest(u.weights) AS w"
            "   ) t"
            "   WHERE u.lexeme IN (SELECT lexeme FROM cut)"
            " ) e" + RANK_PASSAGES_BY_MEMORY
        ).format(where=where),
        [
            query,
            per_lexeme,
            per_lexeme,
            *filter_params,
            W.BM25_RESCORE_PASSAGES,
            W.CANDIDATES_PER_CHANNEL,
            W.PASSAGE_CANDIDATES_PER_CHANNEL,
        ],
    )


def _narrowing(filters: SearchFilters) -> bool:
    """Whether a filter may drop many of the passages the postings yield (project, type, time,
    ...), so more postings per lexeme are read to leave enough after filtering."""
    return any(
        (
            filters.types,
            filters.mem_classes,
            filters.projects,
            filters.sources,
            filters.tags,
            filters.since,
            filters.until,
        )
    )


def _bm25_statistics(conn: psycopg.Connection, lexemes: list[str]) -> tuple[list[float], float]:
    """IDF of each lexeme and the mean passage length, from the pipeline's statistics."""
    corpus = conn.execute("SELECT documents, avg_lexemes FROM passage_corpus_stats").fetchone()
    if not corpus or not corpus[0]:
        return [1.0] * len(lexemes), 1.0
    documents, avgdl = corpus
    df = dict(
        conn.execute(
            "SELECT lexeme, ndoc FROM passage_term_stats WHERE lexeme = ANY(%s)", [lexemes]
        ).fetchall()
    )
    idfs = [
        math.log(1 + (documents - df.get(lex, 0) + 0.5) / (df.get(lex, 0) + 0.5)) for lex in lexemes
    ]
    return idfs, max(float(avgdl), 1.0)


def vector_channel(
    conn: psycopg.Connection,
    space: str,
    dims: int,
    vector: np.ndarray,
    filters: SearchFilters,
    filtered: int | None = -1,
) -> ChannelResult:
    """Cosine over the serving space's HNSW indexes of passage vectors, and only that space:
    the nearest PASSAGE_CANDIDATES_PER_CHANNEL passages, a memory at its nearest one
    (`vector_statement` says which walk)."""
    statement, params = vector_statement(conn, space, dims, vector, filters, filtered)
    rows = conn.execute(statement, params).fetchall()
    # Iterative scans in relaxed order may return a few rows out of order: sort them back.
    rows.sort(key=lambda r: (r[2], str(r[0])))
    return ChannelResult.of([(r[0], r[1]) for r in rows])


def vector_statement(
    conn: psycopg.Connection,
    space: str,
    dims: int,
    vector: np.ndarray,
    filters: SearchFilters,
    filtered: int | None = -1,
) -> tuple[sql.Composed, list[Any]]:
    """The vector channel's statement for this filter, with the transaction's scan settings
    applied (the benchmark and the tests EXPLAIN it).

    The space and width are inlined as literals so the planner can match the partial indexes
    (`WHERE space = '...'`); iterative scans keep filtered queries from running short. The
    filter's type, source, project and time conditions apply to the columns each vector carries
    (sql/023), so a passage that fails them costs no join. Which walk, in order:
    - a filter on just one type or source with its own partial index (VECTOR_PARTIAL_INDEXES):
      that index, a graph of only its passages;
    - a narrowing filter that few memories pass (`filtered`, as for bm25_channel): the cosine
      of each of their passages, exact (no HNSW index);
    - otherwise the space's whole index, skipping what the filter rejects.
    """
    if filtered == -1:
        filtered = filtered_memories(conn, filters)
    partial = _partial_index(filters)
    if partial and (partial[2] or not _exact(filtered)):
        # The partial index's predicate as a literal (so the planner matches the index) stands
        # for the filter's condition on that column: both would square its selectivity in
        # the planner's estimate and make it sort a btree scan's rows instead.
        filters = filters.model_copy(update={_FILTER_OF[partial[0]]: None})
    else:
        partial = None
    conds = _conditions(filters, on_vectors=True)
    on_e, e_params = _joined([c for c in conds if c.on_vectors])
    on_m, m_params = _joined([c for c in conds if not c.on_vectors])
    exact = partial is None and _exact(filtered)
    # One round trip for the settings; no parallel workers: starting them costs more than
    # these statements take, and the other core serves other searches.
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true),"
        " set_config('hnsw.iterative_scan', 'relaxed_order', true),"
        " set_config('max_parallel_workers_per_gather', '0', true)",
        [str(int(W.HNSW_EF_SEARCH))],
    )
    if exact and any(c.on_vectors for c in conds):
        # The vectors the filter's own columns select, sorted by cosine (OFFSET 0 keeps the
        # HNSW index from supplying that order); each memory row is read only until enough
        # pass the rest of the filter (a nested loop over the sorted rows).
        statement = sql.SQL(
            "SELECT x.passage_id::text, x.memory_id::text, x.d FROM (SELECT * FROM ("
            " SELECT e.passage_id, e.memory_id, e.embedding::{cast} <=> %s::{cast} AS d"
            " FROM passage_embeddings e WHERE e.space = {space} AND {on_e} OFFSET 0"
            ") y ORDER BY d) x WHERE EXISTS ("
            " SELECT 1 FROM memories m WHERE m.id = x.memory_id AND {on_m}"
            ") ORDER BY x.d LIMIT %s"
        )
    elif exact:
        # Only memory columns narrow (tags, class): from those memories to their vectors.
        statement = sql.SQL(
            "SELECT passage_id::text, memory_id::text, d FROM ("
            " SELECT e.passage_id, e.memory_id, e.embedding::{cast} <=> %s::{cast} AS d"
            " FROM memories m JOIN passage_embeddings e ON e.memory_id = m.id"
            " WHERE e.space = {space} AND {on_e} AND {on_m} OFFSET 0"
            ") x ORDER BY d LIMIT %s"
        )
    else:
        statement = sql.SQL(
            "SELECT e.passage_id::text, e.memory_id::text,"
            " e.embedding::{cast} <=> %s::{cast} AS d"
            " FROM passage_embeddings e JOIN memories m ON m.id = e.memory_id"
            " WHERE e.space = {space} AND {only}{on_e} AND {on_m} ORDER BY d LIMIT %s"
        )
    # A partial index's own predicate, as literals, so the planner matches it.
    only = (
        sql.SQL("e.{} = {} AND ").format(sql.Identifier(partial[0]), sql.Literal(partial[1]))
        if partial
        else sql.SQL("")
    )
    return (
        statement.format(
            space=sql.Literal(space),
            only=only,
            on_e=on_e,
            on_m=on_m,
            cast=sql.SQL("vector({})").format(sql.Literal(dims)),
        ),
        [vector, *e_params, *m_params, W.PASSAGE_CANDIDATES_PER_CHANNEL],
    )


_FILTER_OF = {"memory_type": "types", "memory_source_type": "sources"}


def _partial_index(filters: SearchFilters) -> tuple[str, str, bool] | None:
    """(column, value, alone) of the partial HNSW index that can serve this filter, if any:
    the filter names exactly one type (or else one source) that has its own index; `alone`
    when nothing else narrows the filter."""
    for column, field in _FILTER_OF.items():
        values = getattr(filters, field)
        if values and len(values) == 1 and values[0] in tuning.VECTOR_PARTIAL_INDEXES[column]:
            others = filters.model_copy(update={field: None})
            return column, values[0], not _narrowing(others)
    return None


def _candidates(conn: psycopg.Connection, fused: dict[str, float]) -> dict[str, _Row]:
    """The fused memories as candidates, each with its RRF score."""
    rows = conn.execute(
        f"SELECT {_CANDIDATE_COLUMNS} FROM memories m WHERE m.id = ANY(%s::uuid[])",
        [list(fused)],
    ).fetchall()
    return _rows(rows, fused)


def _rows(rows: Sequence[Sequence[Any]], rrf: dict[str, float] | None = None) -> dict[str, _Row]:
    """Rows of _CANDIDATE_COLUMNS by memory id, in the order given, with their RRF scores (0
    when not fused: temporal neighbours)."""
    rrf = rrf or {}
    out = {}
    for r in rows:
        mid = str(r[0])
        cand = Candidate(
            id=mid,
            type=r[1],
            title=r[2],
            content=r[3],
            encoding_context=r[4],
            project=r[5],
            mem_class=r[6],
            status=r[7],
            depth_score=r[8],
            access_count=r[9],
            created_at=r[10],
            last_accessed_at=r[11],
            rrf=rrf.get(mid, 0.0),
            task_id=str(r[16]) if r[16] else None,
        )
        out[cand.id] = _Row(cand, r[12], list(r[13] or []), r[14], r[15])
    return out


def provenance(conn: psycopg.Connection, memory_ids: Sequence[str]) -> dict[str, list[Provenance]]:
    """memory id -> its provenance chains (task, native task id, segment, turns)."""
    rows = conn.execute(
        "SELECT p.memory_id, p.task_id, t.source, t.native_id, t.title, p.segment_id,"
        " a.ordinal, a.native_turn_id, a.native_message_ids, p.role"
        " FROM memory_provenance p JOIN captured_tasks t ON t.id = p.task_id"
        " JOIN agent_turns a ON a.id = p.turn_id"
        " WHERE p.memory_id = ANY(%s::uuid[]) ORDER BY p.memory_id, p.segment_id, a.ordinal",
        [list(memory_ids)],
    ).fetchall()
    chains: dict[str, dict[tuple[str, str], Provenance]] = {}
    for mid, task_id, source, native_id, title, seg_id, ordinal, turn_id, msg_ids, role in rows:
        by_seg = chains.setdefault(str(mid), {})
        key = (str(task_id), str(seg_id))
        if key not in by_seg:
            by_seg[key] = Provenance(
                task_id=task_id,
                source=source,
                native_task_id=native_id,
                task_title=title,
                segment_id=seg_id,
                turns=[],
            )
        by_seg[key].turns.append(
            TurnRef(
                ordinal=ordinal, native_turn_id=turn_id, native_message_ids=list(msg_ids), role=role
            )
        )
    return {mid: list(v.values()) for mid, v in chains.items()}


def matched_passages(
    conn: psycopg.Connection,
    bm25: ChannelResult,
    vec: ChannelResult,
    memory_ids: set[str],
    *,
    per_hit: int = W.MATCHED_PASSAGES_PER_HIT,
    nearest_only: bool = True,
) -> dict[str, list[PassageMatch]]:
    """memory id -> the passages that matched it, best first (RRF of their passage ranks), at
    most MATCHED_PASSAGES_PER_HIT, with turn ordinals and native ids.

    A passage matched when it holds a query lexeme (BM25 ranked it) or is the memory's nearest
    passage to the query. Every passage has some cosine to the query, so the vector channel's
    further passages of a memory are not matches.
    """
    ranks: dict[str, dict[str, int]] = {}
    owner: dict[str, str] = {}
    nearest: set[str] = set()
    for name, result in (("bm25", bm25), ("vector", vec)):
        for rank, (pid, mid) in enumerate(result.passages, start=1):
            if mid not in memory_ids:
                continue
            if name == "vector" and nearest_only:
                if mid in nearest:
                    continue
                nearest.add(mid)
            ranks.setdefault(pid, {})[name] = rank
            owner[pid] = mid
    fused = rrf_scores(
        [p for p, _ in bm25.passages if p in ranks], [p for p, _ in vec.passages if p in ranks]
    )
    by_memory: dict[str, list[str]] = {}
    for pid in sorted(ranks, key=lambda p: (-fused[p], p)):
        chosen = by_memory.setdefault(owner[pid], [])
        if len(chosen) < per_hit:
            chosen.append(pid)
    wanted = [p for chosen in by_memory.values() for p in chosen]
    details = passage_details(conn, wanted)
    return {
        mid: [
            details[p].model_copy(
                update={
                    "bm25_rank": ranks[p].get("bm25"),
                    "vector_rank": ranks[p].get("vector"),
                }
            )
            for p in chosen
            if p in details
        ]
        for mid, chosen in by_memory.items()
    }


def passage_details(
    conn: psycopg.Connection, passage_ids: Sequence[str]
) -> dict[str, PassageMatch]:
    """Passage id -> its text and the turns it quotes or rests on (ordinals, native ids)."""
    if not passage_ids:
        return {}
    rows = conn.execute(
        "SELECT p.id, p.memory_id, p.ordinal, p.text, t.source, t.native_id, a.ordinal,"
        " a.native_turn_id, a.native_message_ids"
        " FROM memory_passages p"
        " LEFT JOIN LATERAL unnest(p.turn_ids) WITH ORDINALITY AS u(turn_id, n) ON true"
        " LEFT JOIN agent_turns a ON a.id = u.turn_id"
        " LEFT JOIN captured_tasks t ON t.id = a.task_id"
        " WHERE p.id = ANY(%s::uuid[]) ORDER BY p.id, u.n",
        [list(passage_ids)],
    ).fetchall()
    out: dict[str, PassageMatch] = {}
    for pid, mid, ordinal, text, source, native_id, turn_ordinal, turn_id, msg_ids in rows:
        match = out.get(str(pid))
        if match is None:
            match = out[str(pid)] = PassageMatch(
                id=pid,
                memory_id=mid,
                ordinal=ordinal,
                text=text,
                source=source,
                native_task_id=native_id,
                turns=[],
            )
        if turn_ordinal is not None:
            match.turns.append(
                PassageTurn(
                    ordinal=turn_ordinal,
                    native_turn_id=turn_id,
                    native_message_ids=list(msg_ids or []),
                )
            )
    return out


def _temporal_neighbours(
    conn: psycopg.Connection, top: Candidate, exclude: set[str], filters: SearchFilters
) -> dict[str, _Row]:
    """The memories created nearest to the top result (within TEMPORAL_WINDOW_HOURS), nearest
    first, read with their candidate columns in the same statement (one round trip)."""
    where, params = filter_sql(filters)
    window = timedelta(hours=W.TEMPORAL_WINDOW_HOURS)
    rows = conn.execute(
        sql.SQL(
            "SELECT " + _CANDIDATE_COLUMNS + " FROM memories m"
            " WHERE m.created_at BETWEEN %s AND %s"
            " AND NOT (m.id = ANY(%s::uuid[])) AND {where}"
            " ORDER BY abs(extract(epoch FROM m.created_at - %s)), m.id LIMIT %s"
        ).format(where=where),
        [
            top.created_at - window,
            top.created_at + window,
            list(exclude),
            *params,
            top.created_at,
            W.TEMPORAL_NEIGHBOURS,
        ],
    ).fetchall()
    return _rows(rows)


def search(
    conn: psycopg.Connection,
    query: str,
    *,
    embedder: QueryEmbedder | None,
    limit: int = W.DEFAULT_LIMIT,
    filters: SearchFilters | None = None,
    context: str | None = None,
    project_context: str | None = None,
    channels: tuple[str, ...] = ("bm25", "vector"),
    temporal_context: bool = True,
    record_surface: str | None = None,
    now: datetime | None = None,
    passages_per_hit: int = W.MATCHED_PASSAGES_PER_HIT,
    near_passages: bool = False,
) -> SearchResponse:
    """The full pipeline. `channels` lets the evaluation measure each channel alone.

    `passages_per_hit` and `near_passages` widen what a hit reports as matched: context packs
    choose among more of each hit's passages, including every passage the vector channel
    ranked (not only each memory's nearest)."""
    filters = filters or SearchFilters()
    now = now or datetime.now(UTC)
    limit = max(1, min(limit, W.MAX_LIMIT))
    with conn.transaction():
        space = serving_space(conn) if "vector" in channels and embedder else None
        n = filtered_memories(conn, filters)
        bm25_result = bm25_channel(conn, query, filters, n) if "bm25" in channels else EMPTY
        vec_result = EMPTY
        if space is not None and embedder is not None:
            vec_result = vector_channel(
                conn, space[0], space[1], embedder.embed(space[0], query), filters, n
            )
        bm25, vec = bm25_result.memories, vec_result.memories
        fused = rrf_scores(bm25, vec)
        rows = _candidates(conn, fused)
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
            extra_rows = _temporal_neighbours(conn, ranked[0], {c.id for c in ranked}, filters)
            extra = [row.candidate for row in extra_rows.values()]
            for mid in extra_rows.keys() & rows.keys() - parts_of.keys():
                # A fused candidate the rerank did not need to score reports its terms.
                parts_of[mid] = terms(rows[mid].candidate, q_tokens, c_tokens, project_context, now)
            rows.update(extra_rows)
        chains = provenance(conn, [c.id for c in ranked + extra])
        matched = matched_passages(
            conn,
            bm25_result,
            vec_result,
            {c.id for c in ranked},
            per_hit=passages_per_hit,
            nearest_only=not near_passages,
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
