"""Read-only browsing: one memory in full, filtered listings, relationship graphs, timelines.

Plain functions over a psycopg connection (the read-only role's, in serving), each returning a
pydantic model from `memory_pipeline/models/browse.py`. Every result is bounded: page sizes, node
and edge counts, preview lengths, turn text. Expected failures raise `MemoryNotFound`,
`InvalidCursor` or `BrowseError` (a `ValueError`, from `memory_pipeline/errors.py`) with a message
safe to show an agent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_pipeline.errors import BrowseError, MemoryNotFound
from memory_pipeline.models.browse import (
    DreamProvenance,
    GraphEdge,
    GraphNode,
    MemoryDetail,
    MemoryGraph,
    MemoryPage,
    MemorySummary,
    ProvenanceDetail,
    Relationship,
    Timeline,
    TurnText,
)
from serving.models import SearchFilters
from serving.search import filter_sql, provenance

# --- bounds ----------------------------------------------------------------------------------
PREVIEW_CHARS = 300  # content shown per memory in listings and timelines
GRAPH_PREVIEW_CHARS = 200
MAX_PAGE_SIZE = 50
DEFAULT_PAGE_SIZE = 20
MAX_GRAPH_DEPTH = 3
MAX_GRAPH_NODES = 100
DEFAULT_GRAPH_NODES = 50
MAX_GRAPH_EDGES = 500  # edges read per BFS level and edges returned
MAX_TIMELINE_ITEMS = 100
DEFAULT_TIMELINE_ITEMS = 30
MAX_TIMELINE_WINDOW_HOURS = 24 * 90
READ_CONTENT_CHARS = 20_000  # a memory's content in memory_read
READ_MAX_RELATIONSHIPS = 100
READ_MAX_TURNS = 40
READ_TURN_CHARS = 2_000  # per prompt and per outcome
READ_TOTAL_TURN_CHARS = 24_000  # all prompts and outcomes of one read together
MAX_CURSOR_CHARS = 200

_ELLIPSIS = " [...]"


class InvalidCursor(BrowseError):
    def __init__(self, reason: str) -> None:
        super().__init__(
            f"invalid cursor ({reason}); pass the next_cursor of a previous listing with the "
            "same filters, or omit it for the first page"
        )


def parse_memory_id(value: str | UUID) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(value.strip())
    except (ValueError, AttributeError):
        raise BrowseError(
            "memory ids are UUIDs such as 3f2b9c1e-0d4a-4e8b-9a57-2c6d1e0f9b13, or their first 8 "
            "or more hex digits (as context packs show them); use an id returned by search, "
            "context, list, timeline or graph"
        ) from None


_HEX_PREFIX = re.compile(r"[0-9a-f]{8,31}")


def resolve_memory_id(conn: psycopg.Connection, value: str | UUID) -> UUID:
    """A full id, or the leading hex digits of one (at least 8, dashes optional) as context
    packs show them: the one memory whose id starts with them. An ambiguous prefix is refused."""
    if isinstance(value, UUID):
        return value
    digits = str(value).strip().lower().replace("-", "")
    if not _HEX_PREFIX.fullmatch(digits):
        return parse_memory_id(value)
    low, high = UUID(digits.ljust(32, "0")), UUID(digits.ljust(32, "f"))
    rows = conn.execute(
        "SELECT id FROM memories WHERE id BETWEEN %s AND %s ORDER BY id LIMIT 2", [low, high]
    ).fetchall()
    if not rows:
        raise MemoryNotFound(value)
    if len(rows) > 1:
        raise BrowseError(
            f"memory id prefix {value} matches more than one memory; pass more digits or the full"
            " id (the structured output of search and context has it)"
        )
    return rows[0][0]


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - len(_ELLIPSIS))].rstrip() + _ELLIPSIS, True


# --- read ------------------------------------------------------------------------------------
def read_memory(
    conn: psycopg.Connection,
    memory_id: str | UUID,
    *,
    include_expired: bool = False,
    content_chars: int = READ_CONTENT_CHARS,
    turn_chars: int = READ_TURN_CHARS,
    total_turn_chars: int = READ_TOTAL_TURN_CHARS,
    max_turns: int = READ_MAX_TURNS,
    max_relationships: int = READ_MAX_RELATIONSHIPS,
) -> MemoryDetail:
    """A memory, its typed relationships and its provenance down to the supporting turns."""
    with conn.transaction():
        mid = resolve_memory_id(conn, memory_id)
        row = conn.execute(
            "SELECT id, type, title, left(content, %s), length(content), summary, tags, project,"
            " mem_class, source_type, source_url, status, confidence, parent_id, created_at,"
            " updated_at, observation_count, duplicate_of FROM memories WHERE id = %s",
            [content_chars + 1, mid],
        ).fetchone()
        if row is None:
            raise MemoryNotFound(mid)
        relationships, rel_truncated = _relationships(conn, mid, include_expired, max_relationships)
        chains, turns_truncated = _provenance_detail(
            conn, mid, turn_chars, total_turn_chars, max_turns
        )
        dream, successor = _dream_provenance(conn, mid)
    content, content_cut = _cut(row[3], content_chars)
    return MemoryDetail(
        id=row[0],
        type=row[1],
        title=row[2],
        content=content,
        content_truncated=content_cut or row[4] > content_chars,
        summary=row[5],
        tags=list(row[6] or []),
        project=row[7],
        mem_class=row[8],
        source_type=row[9],
        source_url=row[10],
        status=row[11],
        confidence=row[12],
        parent_id=row[13],
        created_at=row[14],
        updated_at=row[15],
        relationships=relationships,
        relationships_truncated=rel_truncated,
        observation_count=row[16],
        duplicate_of=row[17],
        provenance=chains,
        turns_truncated=turns_truncated,
        dream=dream,
        superseded_by=successor,
    )


_VOTES = ("skeptic", "user_advocate", "epistemologist", "methodologist")


def _dream_provenance(
    conn: psycopg.Connection, mid: UUID
) -> tuple[list[DreamProvenance], UUID | None]:
    """Dream-cycle candidates that made this memory or superseded it (newest first, bounded),
    and the memory's live successor when it is superseded."""
    rows = conn.execute(
        "SELECT CASE WHEN c.created_memory_id = %(m)s THEN 'created' ELSE 'superseded' END,"
        " r.id, r.run_type, r.started_at, c.strategy, c.operation, c.schema_operation,"
        " c.evaluator_a_verdict, c.evaluator_b_verdict, c.evaluator_c_verdict,"
        " c.evaluator_d_verdict, ARRAY(SELECT cm.memory_id FROM dream_candidate_memories cm"
        "  WHERE cm.candidate_id = c.id ORDER BY cm.memory_id), c.successor_id,"
        " c.user_rejected_at, c.user_rejection_reason"
        " FROM dream_cycle_candidates c JOIN dream_cycle_runs r ON r.id = c.run_id"
        " WHERE c.stored_at IS NOT NULL AND (c.created_memory_id = %(m)s"
        " OR (c.operation = 'SUPERSEDE' AND c.target_memory_id = %(m)s))"
        " ORDER BY c.created_at DESC LIMIT 10",
        {"m": mid},
    ).fetchall()
    dream = [
        DreamProvenance(
            role=r[0],
            run_id=r[1],
            run_type=r[2],
            run_started_at=r[3],
            strategy=r[4],
            operation=r[5],
            schema_operation=r[6],
            votes={k: v for k, v in zip(_VOTES, r[7:11], strict=True) if v},
            rests_on=list(r[11] or []),
            successor_id=r[12],
            user_rejected_at=r[13],
            user_rejection_reason=r[14],
        )
        for r in rows
    ]
    successor = conn.execute(
        "SELECT r.target_id FROM memory_relationships r JOIN memories m ON m.id = r.source_id"
        " WHERE r.source_id = %s AND r.relation_type = 'superseded_by'"
        " AND r.expired_at IS NULL AND m.status = 'superseded'"
        " ORDER BY r.created_at DESC LIMIT 1",
        [mid],
    ).fetchone()
    return dream, successor[0] if successor else None


def _relationships(
    conn: psycopg.Connection, mid: UUID, include_expired: bool, limit: int
) -> tuple[list[Relationship], bool]:
    live = sql.SQL("") if include_expired else sql.SQL(" AND r.expired_at IS NULL")
    rows = conn.execute(
        sql.SQL(
            "SELECT * FROM ("
            " SELECT 'outgoing' AS direction, r.relation_type, r.target_id AS other, m.type,"
            " m.title, m.status, r.note, r.created_at, r.expired_at, r.similarity, r.evidence,"
            " r.backend"
            " FROM memory_relationships r JOIN memories m ON m.id = r.target_id"
            " WHERE r.source_id = %s{live}"
            " UNION ALL"
            " SELECT 'incoming', r.relation_type, r.source_id, m.type, m.title, m.status, r.note,"
            " r.created_at, r.expired_at, r.similarity, r.evidence, r.backend"
            " FROM memory_relationships r JOIN memories m ON m.id = r.source_id"
            " WHERE r.target_id = %s{live}"
            ") e ORDER BY e.expired_at IS NOT NULL, e.created_at DESC, e.other, e.relation_type"
            " LIMIT %s"
        ).format(live=live),
        [mid, mid, limit + 1],
    ).fetchall()
    edges = [
        Relationship(
            direction=r[0],
            relation_type=r[1],
            other_id=r[2],
            other_type=r[3],
            other_title=r[4],
            other_status=r[5],
            note=r[6],
            created_at=r[7],
            expired_at=r[8],
            similarity=r[9],
            evidence=r[10],
            backend=r[11],
        )
        for r in rows[:limit]
    ]
    return edges, len(rows) > limit


def _provenance_detail(
    conn: psycopg.Connection,
    mid: UUID,
    turn_chars: int,
    total_chars: int,
    max_turns: int,
) -> tuple[list[ProvenanceDetail], bool]:
    rows = conn.execute(
        "SELECT p.task_id, t.source, t.native_id, t.title, p.segment_id, s.title,"
        " s.first_ordinal, s.last_ordinal, a.ordinal, a.native_turn_id, a.native_message_ids,"
        " p.role, a.started_at, a.completed_at,"
        " left(a.prompt, %s), length(a.prompt), left(a.outcome, %s), length(a.outcome)"
        " FROM memory_provenance p JOIN captured_tasks t ON t.id = p.task_id"
        " JOIN agent_turns a ON a.id = p.turn_id JOIN topic_segments s ON s.id = p.segment_id"
        " WHERE p.memory_id = %s"
        " ORDER BY t.started_at, p.task_id, s.first_ordinal, p.segment_id, a.ordinal LIMIT %s",
        [turn_chars + 1, turn_chars + 1, mid, max_turns + 1],
    ).fetchall()
    truncated = len(rows) > max_turns
    budget = total_chars
    chains: dict[tuple[UUID, UUID], ProvenanceDetail] = {}
    for r in rows[:max_turns]:
        key = (r[0], r[4])
        if key not in chains:
            chains[key] = ProvenanceDetail(
                task_id=r[0],
                source=r[1],
                native_task_id=r[2],
                task_title=r[3],
                segment_id=r[4],
                segment_title=r[5],
                first_ordinal=r[6],
                last_ordinal=r[7],
                turns=[],
            )
        texts: list[tuple[str | None, bool]] = []
        for text, length in ((r[14], r[15]), (r[16], r[17])):
            if budget <= 0:
                texts.append((None, length > 0))
                truncated = truncated or length > 0
                continue
            cut, was_cut = _cut(text, min(turn_chars, budget))
            was_cut = was_cut or length > turn_chars
            budget -= len(cut)
            truncated = truncated or was_cut
            texts.append((cut, was_cut))
        chains[key].turns.append(
            TurnText(
                ordinal=r[8],
                native_turn_id=r[9],
                native_message_ids=list(r[10] or []),
                role=r[11],
                started_at=r[12],
                completed_at=r[13],
                prompt=texts[0][0],
                outcome=texts[1][0],
                prompt_truncated=texts[0][1],
                outcome_truncated=texts[1][1],
            )
        )
    return list(chains.values()), truncated


# --- list ------------------------------------------------------------------------------------
_SUMMARY_COLUMNS = (
    "m.id, m.type, m.title, left(m.content, %s), length(m.content), m.project, m.mem_class,"
    " m.source_type, m.status, m.tags, m.created_at, m.updated_at"
)


def _summaries(
    conn: psycopg.Connection, rows: Sequence[tuple[Any, ...]], preview_chars: int
) -> list[MemorySummary]:
    chains = provenance(conn, [str(r[0]) for r in rows]) if rows else {}
    out = []
    for r in rows:
        preview, cut = _cut(r[3], preview_chars)
        out.append(
            MemorySummary(
                id=r[0],
                type=r[1],
                title=r[2],
                preview=preview,
                preview_truncated=cut or r[4] > preview_chars,
                project=r[5],
                mem_class=r[6],
                source_type=r[7],
                status=r[8],
                tags=list(r[9] or []),
                created_at=r[10],
                updated_at=r[11],
                provenance=chains.get(str(r[0]), []),
            )
        )
    return out


def _filters_digest(filters: SearchFilters) -> str:
    return hashlib.sha256(filters.model_dump_json().encode()).hexdigest()[:16]


def encode_cursor(created_at: datetime, memory_id: UUID, filters: SearchFilters) -> str:
    payload = json.dumps(
        {"v": 1, "t": created_at.isoformat(), "id": str(memory_id), "f": _filters_digest(filters)},
        separators=(",", ":"),
    )
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


_CURSOR_CHARS = re.compile(r"[A-Za-z0-9_-]+")


def decode_cursor(cursor: str, filters: SearchFilters) -> tuple[datetime, UUID]:
    """The (created_at, id) keyset position in a cursor; anything malformed is refused."""
    if len(cursor) > MAX_CURSOR_CHARS or not _CURSOR_CHARS.fullmatch(cursor):
        raise InvalidCursor("not a cursor this server issued")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw.decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidCursor("not a cursor this server issued") from None
    if not isinstance(data, dict) or set(data) != {"v", "t", "id", "f"} or data["v"] != 1:
        raise InvalidCursor("not a cursor this server issued")
    if not all(isinstance(data[k], str) for k in ("t", "id", "f")):
        raise InvalidCursor("not a cursor this server issued")
    try:
        created_at = datetime.fromisoformat(data["t"])
        memory_id = UUID(data["id"])
    except ValueError:
        raise InvalidCursor("not a cursor this server issued") from None
    if created_at.tzinfo is None:
        raise InvalidCursor("not a cursor this server issued")
    if data["f"] != _filters_digest(filters):
        raise InvalidCursor("it belongs to a listing with other filters")
    return created_at, memory_id


def list_memories(
    conn: psycopg.Connection,
    filters: SearchFilters | None = None,
    *,
    limit: int = DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
    preview_chars: int = PREVIEW_CHARS,
) -> MemoryPage:
    """Memories matching the filters, newest first, a page at a time (keyset pagination)."""
    filters = filters or SearchFilters()
    limit = max(1, min(limit, MAX_PAGE_SIZE))
    where, params = filter_sql(filters)
    if cursor:
        created_at, memory_id = decode_cursor(cursor, filters)
        where = sql.SQL("{} AND (m.created_at, m.id) < (%s::timestamptz, %s::uuid)").format(where)
        params += [created_at, memory_id]
    with conn.transaction():
        rows = conn.execute(
            sql.SQL(
                "SELECT " + _SUMMARY_COLUMNS + " FROM memories m WHERE {where}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT %s"
            ).format(where=where),
            [preview_chars + 1, *params, limit + 1],
        ).fetchall()
        items = _summaries(conn, rows[:limit], preview_chars)
    next_cursor = None
    if len(rows) > limit:
        last = items[-1]
        next_cursor = encode_cursor(last.created_at, last.id, filters)
    return MemoryPage(items=items, page_size=limit, next_cursor=next_cursor)


# --- graph -----------------------------------------------------------------------------------
def memory_graph(
    conn: psycopg.Connection,
    memory_id: str | UUID,
    *,
    depth: int = 1,
    relation_types: Sequence[str] | None = None,
    include_expired: bool = False,
    max_nodes: int = DEFAULT_GRAPH_NODES,
) -> MemoryGraph:
    """Breadth-first over typed relationships in both directions, to `depth` hops, capped."""
    root = resolve_memory_id(conn, memory_id)
    depth = max(1, min(depth, MAX_GRAPH_DEPTH))
    max_nodes = max(1, min(max_nodes, MAX_GRAPH_NODES))
    conds = [sql.SQL("TRUE")]
    extra: list[Any] = []
    if not include_expired:
        conds.append(sql.SQL("r.expired_at IS NULL"))
    if relation_types:
        conds.append(sql.SQL("r.relation_type = ANY(%s)"))
        extra.append(list(relation_types))
    edge_filter = sql.SQL(" AND ").join(conds)
    with conn.transaction():
        if conn.execute("SELECT 1 FROM memories WHERE id = %s", [root]).fetchone() is None:
            raise MemoryNotFound(root)
        depth_of: dict[UUID, int] = {root: 0}
        frontier = [root]
        truncated = False
        for level in range(1, depth + 1):
            if not frontier:
                break
            rows = conn.execute(
                sql.SQL(
                    "SELECT r.source_id, r.target_id FROM memory_relationships r"
                    " WHERE (r.source_id = ANY(%s) OR r.target_id = ANY(%s)) AND {f}"
                    " ORDER BY r.created_at DESC, r.source_id, r.target_id, r.relation_type"
                    " LIMIT %s"
                ).format(f=edge_filter),
                [frontier, frontier, *extra, MAX_GRAPH_EDGES + 1],
            ).fetchall()
            truncated = truncated or len(rows) > MAX_GRAPH_EDGES
            frontier = []
            for source_id, target_id in rows[:MAX_GRAPH_EDGES]:
                for node in (source_id, target_id):
                    if node in depth_of:
                        continue
                    if len(depth_of) >= max_nodes:
                        truncated = True
                        continue
                    depth_of[node] = level
                    frontier.append(node)
        ids = list(depth_of)
        edge_rows = conn.execute(
            sql.SQL(
                "SELECT r.source_id, r.target_id, r.relation_type, r.note, r.created_at,"
                " r.expired_at, r.similarity, r.evidence, r.backend FROM memory_relationships r"
                " WHERE r.source_id = ANY(%s) AND r.target_id = ANY(%s) AND {f}"
                " ORDER BY r.created_at, r.source_id, r.target_id, r.relation_type LIMIT %s"
            ).format(f=edge_filter),
            [ids, ids, *extra, MAX_GRAPH_EDGES + 1],
        ).fetchall()
        truncated = truncated or len(edge_rows) > MAX_GRAPH_EDGES
        node_rows = conn.execute(
            "SELECT id, type, title, left(content, %s), status, project, created_at,"
            " CASE WHEN source_type = 'dream_cycle' THEN metadata ->> 'dream_run_id' END"
            " FROM memories WHERE id = ANY(%s)",
            [GRAPH_PREVIEW_CHARS + 1, ids],
        ).fetchall()
        chains = provenance(conn, [str(i) for i in ids])
    by_id = {r[0]: r for r in node_rows}
    nodes = []
    for node_id in ids:  # insertion order is breadth-first order
        r = by_id.get(node_id)
        if r is None:
            continue
        nodes.append(
            GraphNode(
                id=r[0],
                type=r[1],
                title=r[2],
                preview=_cut(r[3], GRAPH_PREVIEW_CHARS)[0],
                status=r[4],
                project=r[5],
                created_at=r[6],
                depth=depth_of[node_id],
                provenance=chains.get(str(node_id), []),
                dream_run_id=r[7],
            )
        )
    edges = [
        GraphEdge(
            source_id=r[0],
            target_id=r[1],
            relation_type=r[2],
            note=r[3],
            created_at=r[4],
            expired_at=r[5],
            similarity=r[6],
            evidence=r[7],
            backend=r[8],
        )
        for r in edge_rows[:MAX_GRAPH_EDGES]
    ]
    return MemoryGraph(
        root_id=root,
        depth=depth,
        include_expired=include_expired,
        nodes=nodes,
        edges=edges,
        truncated=truncated,
    )


# --- timeline --------------------------------------------------------------------------------
def timeline(
    conn: psycopg.Connection,
    *,
    around: datetime | None = None,
    window_hours: float = 24,
    project: str | None = None,
    filters: SearchFilters | None = None,
    limit: int = DEFAULT_TIMELINE_ITEMS,
    preview_chars: int = PREVIEW_CHARS,
) -> Timeline:
    """Memories around a time (± `window_hours`) and/or of one project, oldest first.

    Around a time, the `limit` memories closest to it are kept; for a project alone, its
    `limit` most recent memories.
    """
    if around is None and not project:
        raise BrowseError("give a time to look around (around) or a project, or both")
    filters = (filters or SearchFilters()).model_copy()
    if project:
        filters.projects = [project]
    limit = max(1, min(limit, MAX_TIMELINE_ITEMS))
    where, params = filter_sql(filters)
    start = end = None
    order: sql.Composable = sql.SQL("m.created_at DESC, m.id DESC")
    order_params: list[Any] = []
    if around is not None:
        if around.tzinfo is None:
            around = around.replace(tzinfo=UTC)
        window = timedelta(hours=max(0.0, min(window_hours, MAX_TIMELINE_WINDOW_HOURS)))
        start, end = around - window, around + window
        where = sql.SQL("{} AND m.created_at BETWEEN %s AND %s").format(where)
        params += [start, end]
        order = sql.SQL("abs(extract(epoch FROM m.created_at - %s)), m.created_at, m.id")
        order_params = [around]
    with conn.transaction():
        rows = conn.execute(
            sql.SQL(
                "SELECT " + _SUMMARY_COLUMNS + " FROM memories m WHERE {where}"
                " ORDER BY {order} LIMIT %s"
            ).format(where=where, order=order),
            [preview_chars + 1, *params, *order_params, limit + 1],
        ).fetchall()
        kept = sorted(rows[:limit], key=lambda r: (r[10], str(r[0])))
        items = _summaries(conn, kept, preview_chars)
    return Timeline(
        around=around,
        window_start=start,
        window_end=end,
        project=project,
        items=items,
        truncated=len(rows) > limit,
    )
