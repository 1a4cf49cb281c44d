"""Step 2b: the vector channel, cosine over the serving space's HNSW indexes of passage vectors."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from memory_pipeline import tuning
from serving.models import SearchFilters
from serving.search.channel import ChannelResult
from serving.search.filters import conditions, exact_path, filtered_memories, joined, narrowing

# The transaction's scan settings, as columns of a statement: one round trip for all three
# (`search` reads them with the serving space, in the statement it runs anyway). No parallel
# workers: starting them costs more than these statements take, and the other core serves other
# searches.
SCAN_SETTINGS = (
    "set_config('hnsw.ef_search', %s, true),"
    " set_config('hnsw.iterative_scan', 'relaxed_order', true),"
    " set_config('max_parallel_workers_per_gather', '0', true)"
)


def scan_settings_params() -> list[str]:
    return [str(int(tuning.HNSW_EF_SEARCH))]


def vector_channel(
    conn: psycopg.Connection,
    space: str,
    dims: int,
    vector: np.ndarray,
    filters: SearchFilters,
    filtered: int | None = -1,
    *,
    settings_applied: bool = False,
) -> ChannelResult:
    """Cosine over the serving space's HNSW indexes of passage vectors, and only that space:
    the nearest PASSAGE_CANDIDATES_PER_CHANNEL passages, a memory at its nearest one
    (`vector_statement` says which walk). `settings_applied`: the transaction already ran
    SCAN_SETTINGS (one round trip fewer)."""
    statement, params = vector_statement(
        conn, space, dims, vector, filters, filtered, settings_applied=settings_applied
    )
    return vector_result(conn.execute(statement, params).fetchall())


def vector_result(rows: list[Any]) -> ChannelResult:
    """The channel's result from its statement's rows (passage id, memory id, distance)."""
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
    *,
    settings_applied: bool = False,
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
    if partial and (partial[2] or not exact_path(filtered)):
        # The partial index's predicate as a literal (so the planner matches the index) stands
        # for the filter's condition on that column: both would square its selectivity in
        # the planner's estimate and make it sort a btree scan's rows instead.
        filters = filters.model_copy(update={_FILTER_OF[partial[0]]: None})
    else:
        partial = None
    conds = conditions(filters, on_vectors=True)
    on_e, e_params = joined([c for c in conds if c.on_vectors])
    on_m, m_params = joined([c for c in conds if not c.on_vectors])
    exact = partial is None and exact_path(filtered)
    if not settings_applied:
        conn.execute("SELECT " + SCAN_SETTINGS, scan_settings_params())
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
        [vector, *e_params, *m_params, tuning.PASSAGE_CANDIDATES_PER_CHANNEL],
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
            return column, values[0], not narrowing(others)
    return None
