"""Hand-made memories for tests where the right ranking is known in advance."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def add_memory(conn: psycopg.Connection, title: str, content: str, **fields: object) -> str:
    values: dict[str, object] = {
        "type": "insight",
        "title": title,
        "content": content,
        "partition_day": "2026-11-01",
        "created_at": NOW,
        "mem_class": "semantic",
        "depth_score": 0.5,
    }
    values.update(fields)
    if "metadata" in values:
        values["metadata"] = Jsonb(values["metadata"])
    cols = ", ".join(values)
    marks = ", ".join(["%s"] * len(values))
    row = conn.execute(
        f"INSERT INTO memories ({cols}) VALUES ({marks}) RETURNING id", list(values.values())
    ).fetchone()
    assert row
    return str(row[0])


def add_vector(conn: psycopg.Connection, memory_id: str, space: str, vector: np.ndarray) -> None:
    conn.execute(
        "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
        " VALUES (%s, %s, %s, 'test')",
        [memory_id, space, np.asarray(vector, dtype=np.float32)],
    )


def set_serving(conn: psycopg.Connection, space: str) -> None:
    conn.execute("UPDATE embedding_spaces SET serving = false WHERE serving")
    conn.execute("UPDATE embedding_spaces SET serving = true WHERE name = %s", [space])


def add_task(
    conn: psycopg.Connection, native_id: str | None = None, source: str = "codex", turns: int = 3
) -> tuple[str, list[str]]:
    """A captured task with `turns` turns; returns (task id, turn ids)."""
    native_id = native_id or f"thread-{uuid.uuid4().hex[:8]}"
    task_id = conn.execute(
        "INSERT INTO captured_tasks (source, native_id, title, started_at, partition_day,"
        " source_path, ownership_reason, turn_count)"
        " VALUES (%s, %s, %s, %s, %s, '/x', 'test', %s) RETURNING id",
        [source, native_id, f"task {native_id}", NOW, NOW.date(), turns],
    ).fetchone()[0]  # type: ignore[index]
    turn_ids = [
        str(
            conn.execute(
                "INSERT INTO agent_turns (task_id, ordinal, native_turn_id, prompt, outcome,"
                " native_message_ids, content_sha256) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " RETURNING id",
                [task_id, i, f"turn-{i}", f"prompt {i}", f"outcome {i}", [f"msg-{i}"], f"h{i}"],
            ).fetchone()[0]  # type: ignore[index]
        )
        for i in range(turns)
    ]
    return str(task_id), turn_ids


def link(
    conn: psycopg.Connection, memory_id: str, task_id: str, turn_ids: list[str], first: int = 0
) -> str:
    """Attach a memory to turns of a task through a topic segment; returns the segment id."""
    # Archived so it never shows up in the searches under test.
    seg_memory = add_memory(
        conn, "segment", f"segment of {task_id} {uuid.uuid4()}", type="segment", status="archived"
    )
    segment_id = conn.execute(
        "INSERT INTO topic_segments (task_id, first_ordinal, last_ordinal, title, memory_id)"
        " VALUES (%s, %s, %s, 'seg', %s) RETURNING id",
        [task_id, first, first + len(turn_ids) - 1, seg_memory],
    ).fetchone()[0]  # type: ignore[index]
    for turn_id in turn_ids:
        conn.execute(
            "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
            " VALUES (%s, %s, %s, %s, 'supports')",
            [memory_id, turn_id, segment_id, task_id],
        )
    return str(segment_id)
