"""Step 2a: the keyword channel, Okapi BM25 over passages (the tantivy keyword index when it is
current, else PostgreSQL: impact-ordered postings, or exact scores under a narrow filter)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from memory_pipeline import tuning
from serving import keyword_index
from serving.models import SearchFilters
from serving.search.channel import EMPTY, ChannelResult
from serving.search.filters import (
    exact_path,
    filter_sql,
    filtered_memories,
    narrowing,
)

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


_OPEN = object()  # bm25_channel opens the keyword index's view itself


def bm25_channel(
    conn: psycopg.Connection,
    query: str,
    filters: SearchFilters,
    filtered: int | None = -1,
    view: keyword_index.View | object | None = _OPEN,
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

    `view`: the keyword index's view for this query as `keyword_index.open_view` gave it, when
    the caller opened it already (search sends it with its first statements).
    """
    # The keyword index (tantivy, serving/keyword_index.py) ranks when it is current; it
    # narrows by the filter itself, so it also serves the filters the exact path would.
    if view is _OPEN:
        view = keyword_index.open_view(conn, query)
    if not isinstance(view, keyword_index.View):
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
    depth = tuning.BM25_RESCORE_PASSAGES
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
        enough = len(result.memories) >= tuning.CANDIDATES_PER_CHANNEL
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
    if exact_path(filtered):
        walk = conn.execute(
            "SELECT coalesce(sum(least(ndoc, %s)), 0) FROM passage_term_stats"
            " WHERE lexeme = ANY(tsvector_to_array(to_tsvector('english', %s)))",
            [_postings_per_lexeme(filters), query],
        ).fetchone()
        if walk and walk[0] > filtered:  # type: ignore[operator]
            return bm25_filtered_statement(query, filters)
    return bm25_statement(query, filters)


def _postings_per_lexeme(filters: SearchFilters) -> int:
    if narrowing(filters):
        return tuning.BM25_POSTINGS_PER_LEXEME * tuning.BM25_FILTERED_POSTINGS_FACTOR
    return tuning.BM25_POSTINGS_PER_LEXEME


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
            tuning.CANDIDATES_PER_CHANNEL,
            tuning.PASSAGE_CANDIDATES_PER_CHANNEL,
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
            tuning.BM25_RESCORE_PASSAGES,
            tuning.CANDIDATES_PER_CHANNEL,
            tuning.PASSAGE_CANDIDATES_PER_CHANNEL,
        ],
    )
