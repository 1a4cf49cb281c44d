"""Store and load briefings (`briefings`, `briefing_items`, `briefing_item_memories`, sql/018).

A day has one briefing: storing a day again replaces it in one transaction, so a failure leaves
the previous one whole. Loading needs only SELECT, so serving (the read-only role) uses it too.
"""

from __future__ import annotations

from datetime import date, datetime

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_pipeline.express.models import (
    EditedItem,
    Filtered,
    LinkedMemory,
    StoredBriefing,
    StoredItem,
)


def store_briefing(
    conn: psycopg.Connection,
    day: date,
    window: tuple[datetime, datetime],
    editor: str,
    items: list[EditedItem],
    filtered: list[Filtered],
) -> str:
    """Replace `day`'s briefing with these items (in this order); returns its id."""
    with conn.transaction():
        conn.execute("DELETE FROM briefings WHERE day = %s", [day])
        row = conn.execute(
            "INSERT INTO briefings (day, window_from, window_to, editor, filtered)"
            " VALUES (%s, %s, %s, %s, %s) RETURNING id::text",
            [
                day,
                window[0],
                window[1],
                editor,
                Jsonb([{"kind": f.kind, "topic": f.topic, "rule": f.rule} for f in filtered]),
            ],
        ).fetchone()
        assert row is not None
        briefing_id = row[0]
        for position, item in enumerate(items, start=1):
            c = item.candidate
            item_row = conn.execute(
                "INSERT INTO briefing_items (briefing_id, position, kind, topic, headline,"
                " detail, score, cross_project, item_key)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                [
                    briefing_id,
                    position,
                    c.kind,
                    c.topic,
                    item.headline,
                    item.detail,
                    item.score,
                    c.cross_project,
                    c.key,
                ],
            ).fetchone()
            assert item_row is not None
            seen: set[str] = set()
            for ordinal, memory in enumerate(c.memories):
                if memory.id in seen:
                    continue
                seen.add(memory.id)
                conn.execute(
                    "INSERT INTO briefing_item_memories (item_id, memory_id, role, ordinal)"
                    " VALUES (%s, %s, %s, %s)",
                    [item_row[0], memory.id, memory.role, ordinal],
                )
    return briefing_id


def load_briefing(conn: psycopg.Connection, day: date | None = None) -> StoredBriefing | None:
    """`day`'s briefing, or the latest one; None when there is none."""
    with conn.cursor(row_factory=dict_row) as cur:
        if day is None:
            head = cur.execute("SELECT * FROM briefings ORDER BY day DESC LIMIT 1").fetchone()
        else:
            head = cur.execute("SELECT * FROM briefings WHERE day = %s", [day]).fetchone()
        if head is None:
            return None
        rows = cur.execute(
            """
            SELECT i.*, coalesce(json_agg(json_build_object(
                       'id', m.id, 'title', m.title, 'role', bim.role, 'project', m.project)
                       ORDER BY bim.ordinal) FILTER (WHERE m.id IS NOT NULL), '[]') AS memories
            FROM briefing_items i
            LEFT JOIN briefing_item_memories bim ON bim.item_id = i.id
            LEFT JOIN memories m ON m.id = bim.memory_id
            WHERE i.briefing_id = %s
            GROUP BY i.id ORDER BY i.position
            """,
            [head["id"]],
        ).fetchall()
    items = tuple(
        StoredItem(
            id=r["id"],
            position=r["position"],
            kind=r["kind"],
            topic=r["topic"],
            headline=r["headline"],
            detail=r["detail"],
            score=r["score"],
            cross_project=r["cross_project"],
            key=r["item_key"],
            memories=tuple(
                LinkedMemory(str(m["id"]), m["title"], m["role"], m["project"])
                for m in r["memories"]
            ),
        )
        for r in rows
    )
    return StoredBriefing(
        id=str(head["id"]),
        day=head["day"],
        window_from=head["window_from"],
        window_to=head["window_to"],
        editor=head["editor"],
        composed_at=head["composed_at"],
        items=items,
        filtered=tuple(Filtered(f["kind"], f["topic"], f["rule"]) for f in head["filtered"]),
    )
