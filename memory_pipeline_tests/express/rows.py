"""Hand-made rows as the dream cycle (D), relationships (E) and capture would write them."""

from __future__ import annotations

from datetime import datetime, timedelta

import psycopg

from memory_pipeline_tests.support.memories import NOW, add_memory, add_task

DAY = NOW.date()
HOUR = timedelta(hours=1)


def edge(
    conn: psycopg.Connection, source: str, target: str, relation: str, at: datetime = NOW
) -> None:
    conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type, note, created_at)"
        " VALUES (%s, %s, %s, %s, %s)",
        [source, target, relation, f"{relation} note", at],
    )


def dream_memory(
    conn: psycopg.Connection,
    title: str,
    rests_on: list[str],
    cross_project: bool,
    operation: str | None = None,
    **fields,
) -> str:
    metadata = {"dream_cycle": True, "dream_run_id": "r1", "cross_project": cross_project}
    if operation:
        metadata["dream_operation"] = operation
    memory = add_memory(
        conn,
        title,
        f"{title}. It rests on {len(rests_on)} memories.",
        type="synthesis",
        source_type="dream_cycle",
        tags=["dream-cycle"],
        metadata=metadata,
        **fields,
    )
    for target in rests_on:
        edge(conn, memory, target, "derived_from")
    return memory


def unanswered_question(conn: psycopg.Connection, prompt: str, project: str | None = None) -> str:
    """A chat whose last prompt nobody answered, its turns in a segment memory; returns the
    segment memory's id."""
    task_id, turn_ids = add_task(conn, source="chat_import", turns=1)
    turn = conn.execute(
        "INSERT INTO agent_turns (task_id, ordinal, prompt, outcome, content_sha256, unanswered,"
        " captured_at) VALUES (%s, 1, %s, '', 'q', true, %s) RETURNING id",
        [task_id, prompt, NOW],
    ).fetchone()[0]  # type: ignore[index]
    segment_memory = add_memory(
        conn, "Deploy questions", f"prompt 0\n{prompt}", type="segment", project=project
    )
    segment = conn.execute(
        "INSERT INTO topic_segments (task_id, first_ordinal, last_ordinal, title, memory_id)"
        " VALUES (%s, 0, 1, 'Deploy questions', %s) RETURNING id",
        [task_id, segment_memory],
    ).fetchone()[0]  # type: ignore[index]
    for turn_id in [*turn_ids, turn]:
        conn.execute(
            "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
            " VALUES (%s, %s, %s, %s, 'segment')",
            [segment_memory, turn_id, segment, task_id],
        )
    return segment_memory
