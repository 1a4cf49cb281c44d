"""Step 3: the fused memories as rerank candidates, and the top result's temporal neighbours, read
with the same columns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from memory_pipeline import tuning
from serving.models import SearchFilters
from serving.rerank import Candidate
from serving.search.filters import filter_sql

# Ids come back as text: building and printing ~1,000 uuid.UUID objects per search cost
# milliseconds of Python (issue 12).
CANDIDATE_COLUMNS = (
    "m.id::text, m.type, m.title, m.content, m.encoding_context, m.project, m.mem_class, m.status,"
    " m.depth_score, m.access_count, m.created_at, m.last_accessed_at, m.source_type, m.tags,"
    " m.updated_at, m.observation_count,"
    " (SELECT p.task_id::text FROM memory_provenance p WHERE p.memory_id = m.id LIMIT 1),"
    # An inbox document's passage (issue 33): its URL or path and position, e.g.
    # 'https://youtu.be/x 12:31', 'file:///home/me/inbox/plan.pdf p. 3'.
    " CASE WHEN m.type = 'source' THEN concat_ws(' ', m.source_url, m.metadata ->> 'position') END"
)


@dataclass(frozen=True)
class CandidateRow:
    candidate: Candidate
    source_type: str | None
    tags: list[str]
    updated_at: datetime
    observation_count: int  # > 1: near-duplicates folded into it (relationship discovery)
    cite: str | None = None  # an inbox passage's URL or path and position


def fused_candidates(conn: psycopg.Connection, fused: dict[str, float]) -> dict[str, CandidateRow]:
    """The fused memories as candidates, each with its RRF score."""
    rows = conn.execute(
        f"SELECT {CANDIDATE_COLUMNS} FROM memories m WHERE m.id = ANY(%s::uuid[])",
        [list(fused)],
    ).fetchall()
    return _rows(rows, fused)


def _rows(
    rows: Sequence[Sequence[Any]], rrf: dict[str, float] | None = None
) -> dict[str, CandidateRow]:
    """Rows of CANDIDATE_COLUMNS by memory id, in the order given, with their RRF scores (0
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
        out[cand.id] = CandidateRow(cand, r[12], list(r[13] or []), r[14], r[15], r[17])
    return out


def temporal_neighbours(
    conn: psycopg.Connection, top: Candidate, exclude: set[str], filters: SearchFilters
) -> dict[str, CandidateRow]:
    """The memories created nearest to the top result (within TEMPORAL_WINDOW_HOURS), nearest
    first, read with their candidate columns in the same statement (one round trip)."""
    where, params = filter_sql(filters)
    window = timedelta(hours=tuning.TEMPORAL_WINDOW_HOURS)
    rows = conn.execute(
        sql.SQL(
            "SELECT " + CANDIDATE_COLUMNS + " FROM memories m"
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
            tuning.TEMPORAL_NEIGHBOURS,
        ],
    ).fetchall()
    return _rows(rows)
