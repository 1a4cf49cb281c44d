"""The private tier on the surfaces that reach memories by id instead of through search.

Search, context packs, listings and timelines filter in SQL (serving/search/filters.py `filter_sql`:
`NOT m.private` unless SearchFilters.include_private). Reading one memory and walking its graph
take an id, so they are checked here: a private memory reads as not found, and a public memory's
relationships and graph leave private neighbours out (their titles would leak).
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

import psycopg

from memory_pipeline.errors import MemoryNotFound
from memory_pipeline.models.browse import MemoryDetail, MemoryGraph


def private_ids(conn: psycopg.Connection, ids: Iterable[UUID | str]) -> set[str]:
    wanted = sorted({str(i) for i in ids})
    if not wanted:
        return set()
    rows = conn.execute(
        "SELECT id FROM memories WHERE private AND id = ANY(%s::uuid[])", [wanted]
    ).fetchall()
    return {str(r[0]) for r in rows}


def visible_detail(conn: psycopg.Connection, detail: MemoryDetail) -> MemoryDetail:
    hidden = private_ids(conn, [detail.id, *(r.other_id for r in detail.relationships)])
    if str(detail.id) in hidden:
        raise MemoryNotFound(detail.id)
    if not hidden:
        return detail
    kept = [r for r in detail.relationships if str(r.other_id) not in hidden]
    return detail.model_copy(update={"relationships": kept})


def visible_graph(conn: psycopg.Connection, graph: MemoryGraph) -> MemoryGraph:
    hidden = private_ids(conn, [n.id for n in graph.nodes])
    if str(graph.root_id) in hidden:
        raise MemoryNotFound(graph.root_id)
    if not hidden:
        return graph
    nodes = [n for n in graph.nodes if str(n.id) not in hidden]
    edges = [
        e for e in graph.edges if str(e.source_id) not in hidden and str(e.target_id) not in hidden
    ]
    return graph.model_copy(update={"nodes": nodes, "edges": edges})
