"""Flags for served memories: what a reader must know before acting on one (seed 003: <= 2).

A memory is flagged when a newer memory reverses it (a live `contradicts` edge pointing at it),
when it was superseded (a live `superseded_by` edge from it), or when it contradicts an older
memory itself (so the older one may still be believed elsewhere). Flags describe, they do not
decide: the agent judges what to do. Read-only; serving calls it with its reader connection.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from memory_pipeline import tuning

# Most urgent first: being reversed or replaced outranks reversing something else.
_PRIORITY = {"reversed_by": 0, "superseded_by": 1, "contradicts": 2}
_TITLE_CHARS = 80


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1].rstrip() + "…"


def memory_flags(
    conn: psycopg.Connection,
    memory_ids: Sequence[str],
    limit: int = tuning.PACK_MAX_FLAGS,
    include_private: bool = False,
) -> dict[str, list[str]]:
    """memory id -> at most `limit` one-line flags, most urgent and newest first. A private-tier
    memory (sql/019) names no flag unless `include_private`: its title would leak."""
    if not memory_ids:
        return {}
    rows = conn.execute(
        "SELECT r.target_id::text, 'reversed_by', o.id::text, o.type, o.title, o.created_at,"
        " r.evidence FROM memory_relationships r JOIN memories o ON o.id = r.source_id"
        " WHERE r.relation_type = 'contradicts' AND r.expired_at IS NULL"
        " AND r.target_id = ANY(%s::uuid[]) AND (%s OR NOT o.private)"
        " UNION ALL"
        " SELECT r.source_id::text, 'superseded_by', o.id::text, o.type, o.title, o.created_at,"
        " r.evidence FROM memory_relationships r JOIN memories o ON o.id = r.target_id"
        " WHERE r.relation_type = 'superseded_by' AND r.expired_at IS NULL"
        " AND r.source_id = ANY(%s::uuid[]) AND (%s OR NOT o.private)"
        " UNION ALL"
        " SELECT r.source_id::text, 'contradicts', o.id::text, o.type, o.title, o.created_at,"
        " r.evidence FROM memory_relationships r JOIN memories o ON o.id = r.target_id"
        " WHERE r.relation_type = 'contradicts' AND r.expired_at IS NULL"
        " AND r.source_id = ANY(%s::uuid[]) AND (%s OR NOT o.private)",
        [list(memory_ids), include_private] * 3,
    ).fetchall()
    rows.sort(key=lambda r: (_PRIORITY[r[1]], -r[5].timestamp(), r[2]))
    out: dict[str, list[str]] = {}
    for mid, kind, other, other_type, title, created, _evidence in rows:
        flags = out.setdefault(mid, [])
        if len(flags) >= limit:
            continue
        day = created.date().isoformat()
        what = f'{other_type} {other} ({day}, "{_short(title)}")'
        if kind == "reversed_by":
            flags.append(f"reversed by a newer {what}: check it before relying on this")
        elif kind == "superseded_by":
            flags.append(f"superseded by {what}")
        else:
            flags.append(f"contradicts an older {what}, which may still be served elsewhere")
    return out
