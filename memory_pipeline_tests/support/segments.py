"""A captured conversation and its segment memory, stored as the semantic pass stores them."""

from __future__ import annotations

import psycopg

from memory_pipeline.embedding.passages import turn_text
from memory_pipeline_tests.support.memories import NOW, add_memory


def add_segment(
    conn: psycopg.Connection,
    turns: list[tuple[str, str]],
    native_id: str = "thread-1",
    title: str = "Lab night",
    **memory_fields: object,
) -> tuple[str, list[str]]:
    """A captured task with these (prompt, outcome) turns and one segment memory over them,
    stored as the semantic pass stores it; returns (memory id, turn ids). A turn with an empty
    outcome is one nobody answered (an imported conversation's last message)."""
    task_id = conn.execute(
        "INSERT INTO captured_tasks (source, native_id, title, started_at, partition_day,"
        " source_path, ownership_reason, turn_count)"
        " VALUES ('chat_import', %s, 'Lab', %s, %s, '/x', 'test', %s) RETURNING id",
        [native_id, NOW, NOW.date(), len(turns)],
    ).fetchone()[0]  # type: ignore[index]
    turn_ids = [
        str(
            conn.execute(
                "INSERT INTO agent_turns (task_id, ordinal, prompt, outcome, prompt_speaker,"
                " outcome_speaker, native_message_ids, content_sha256, unanswered)"
                " VALUES (%s, %s, %s, %s, 'Mara', 'Jonas', %s, 'h', %s) RETURNING id",
                [
                    task_id,
                    i,
                    p,
                    o,
                    [f"{native_id}-m{2 * i}", f"{native_id}-m{2 * i + 1}"][: 2 if o else 1],
                    not o,
                ],
            ).fetchone()[0]  # type: ignore[index]
        )
        for i, (p, o) in enumerate(turns)
    ]
    content = "\n\n".join(turn_text("Mara", p, "Jonas", o) for p, o in turns)
    memory_fields.setdefault("partition_day", NOW.date())
    memory_id = add_memory(conn, title, content, type="segment", **memory_fields)
    segment_id = conn.execute(
        "INSERT INTO topic_segments (task_id, first_ordinal, last_ordinal, title, memory_id)"
        " VALUES (%s, 0, %s, %s, %s) RETURNING id",
        [task_id, len(turns) - 1, title, memory_id],
    ).fetchone()[0]  # type: ignore[index]
    for turn_id in turn_ids:
        conn.execute(
            "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
            " VALUES (%s, %s, %s, %s, 'segment')",
            [memory_id, turn_id, segment_id, task_id],
        )
    return memory_id, turn_ids
