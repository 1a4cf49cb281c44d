"""Step 1 of a search: the hard filters as SQL conditions, and how narrow a filter is (which
decides between walking an index and scoring the few memories a filter leaves exactly)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from memory_pipeline import tuning
from serving.models import SearchFilters

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


def conditions(filters: SearchFilters, *, on_vectors: bool = False) -> list[_Condition]:
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
    if filters.entity_ids is not None:  # filter first: memories mentioning the entities
        conds.append(
            _Condition(
                sql.SQL(
                    "m.id IN (SELECT me.memory_id FROM memory_entities me"
                    " WHERE me.entity_id = ANY(%s))"
                ),
                [list(filters.entity_ids)],
                False,
            )
        )
    for flag, condition in (
        (not filters.include_private, "NOT m.private"),
        (not filters.include_duplicates, "m.duplicate_of IS NULL"),
        (filters.exclude_reversed, REVERSED_SQL),
    ):
        if flag:
            conds.append(_Condition(sql.SQL(condition), [], False))
    return conds


def joined(conds: list[_Condition]) -> tuple[sql.Composable, list[Any]]:
    if not conds:
        return sql.SQL("true"), []
    return sql.SQL(" AND ").join(c.sql for c in conds), [p for c in conds for p in c.params]


def filter_sql(filters: SearchFilters) -> tuple[sql.Composable, list[Any]]:
    """WHERE conditions on `m` (memories) for the hard filters."""
    return joined(conditions(filters))


def filtered_memories(conn: psycopg.Connection, filters: SearchFilters) -> int | None:
    """How many memories a narrowing filter leaves, as the planner estimates it (planning
    only: counting even a few thousand rows costs more than some whole searches); None
    without a narrowing filter. It only chooses between two correct plans."""
    if not narrowing(filters):
        return None
    where, params = filter_sql(filters)
    row = conn.execute(
        sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE {where}").format(where=where),
        params,
    ).fetchone()
    return int(row[0][0]["Plan"]["Plan Rows"]) if row else None  # type: ignore[index]


def exact_path(filtered: int | None) -> bool:
    return filtered is not None and filtered <= tuning.SEARCH_EXACT_FILTERED_MEMORIES


def narrowing(filters: SearchFilters) -> bool:
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
            filters.entity_ids is not None,
        )
    )
