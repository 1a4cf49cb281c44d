"""Store and load briefings (`briefings`, `briefing_items`, `briefing_item_memories`, sql/018).

A day has one briefing: storing a day again replaces it in one transaction, so a failure leaves
the previous one whole. A briefing composed again with nothing new (the same editor, items,
links and muted items) is not stored again: the stored one stays row for row, its window,
`composed_at` and item ids included (every `memory-pipeline run` composes today's briefing, and
`brief --useful 12` must still name the same item). Loading needs only SELECT, so serving (the
read-only role) uses it too.
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
    """Replace `day`'s briefing with these items (in this order); returns its id. When the
    stored one already says exactly this, it is kept as it is."""
    with conn.transaction():
        stored = load_briefing(conn, day)
        if stored is not None and _same(stored, editor, items, filtered):
            return stored.id
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


def _same(
    stored: StoredBriefing, editor: str, items: list[EditedItem], filtered: list[Filtered]
) -> bool:
    """Whether storing these items would tell the same as the stored briefing."""

    def links(memories: tuple[LinkedMemory, ...]) -> list[tuple[str, str]]:
        first: dict[str, str] = {}  # a memory is linked once, with its first role (as stored)
        for m in memories:
            first.setdefault(m.id, m.role)
        return list(first.items())

    new = [
        (
            position,
            i.candidate.kind,
            i.candidate.topic,
            i.headline,
            i.detail,
            i.score,
            i.candidate.cross_project,
            i.candidate.key,
            links(i.candidate.memories),
        )
        for position, i in enumerate(items, start=1)
    ]
    old = [
        (
            i.position,
            i.kind,
            i.topic,
            i.headline,
            i.detail,
            i.score,
            i.cross_project,
            i.key,
            links(i.memories),
        )
        for i in stored.items
    ]
    return stored.editor == editor and old == new and list(stored.filtered) == list(filtered)


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
