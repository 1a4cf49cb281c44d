"""Schema behaviour the rest of the pipeline relies on."""

from __future__ import annotations

import re

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb


def insert_memory(conn: psycopg.Connection, **fields: object) -> str:
    values = {"type": "decision", "title": "t", "content": "c", "partition_day": "2026-10-01"}
    values.update(fields)
    cols = ", ".join(values)
    marks = ", ".join(["%s"] * len(values))
    row = conn.execute(
        f"INSERT INTO memories ({cols}) VALUES ({marks}) RETURNING id",
        list(values.values()),
    ).fetchone()
    assert row
    return str(row[0])


def lexeme_weights(conn: psycopg.Connection, memory_id: str) -> dict[str, str]:
    """lexeme -> its weight letters, parsed from the stored tsvector ('rate':1A -> A)."""
    row = conn.execute("SELECT search_vector::text FROM memories WHERE id = %s", [memory_id])
    text = row.fetchone()[0]
    return {
        lex: re.sub(r"[0-9,]", "", pos) or "D" for lex, pos in re.findall(r"'([^']+)':(\S+)", text)
    }


def test_search_vector_weights_title_and_questions_above_content(conn: psycopg.Connection) -> None:
    mid = insert_memory(
        conn,
        title="Rate limiter storage",
        content="We keep counters in Postgres.",
        metadata=Jsonb({"questions": ["Why not Redis?"]}),
    )
    weights = lexeme_weights(conn, mid)
    assert weights["limit"] == "A"  # title
    assert weights["redi"] == "A"  # a question the memory answers
    assert weights["counter"] == "B" and weights["postgr"] == "B"  # content
    conn.execute("UPDATE memories SET content = 'Now Valkey.' WHERE id = %s", [mid])
    weights = lexeme_weights(conn, mid)
    assert weights["valkey"] == "B" and "counter" not in weights


def test_embedding_spaces_never_mix(conn: psycopg.Connection) -> None:
    mid = insert_memory(conn)
    vec384 = np.ones(384, dtype=np.float32)
    conn.execute(
        "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
        " VALUES (%s, 'local:all-minilm-l6-v2:384', %s, 'h')",
        [mid, vec384],
    )
    with pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
            " VALUES (%s, 'ollama:bge-m3:1024', %s, 'h')",
            [mid, vec384],
        )


def test_each_space_has_its_own_hnsw_index(conn: psycopg.Connection) -> None:
    rows = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_embeddings'"
        " AND indexdef LIKE '%hnsw%'"
    ).fetchall()
    defs = " ".join(r[0] for r in rows)
    assert "vector(384)" in defs and "local:all-minilm-l6-v2:384" in defs
    assert "vector(1024)" in defs and "ollama:bge-m3:1024" in defs


def test_stored_turns_are_immutable(conn: psycopg.Connection) -> None:
    task = conn.execute(
        "INSERT INTO captured_tasks (source, native_id, started_at, partition_day, source_path,"
        " ownership_reason) VALUES ('codex', 'n1', now(), current_date, '/x', 'r') RETURNING id"
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO agent_turns (task_id, ordinal, prompt, outcome, content_sha256)"
        " VALUES (%s, 0, 'p', 'o', 'h')",
        [task],
    )
    with pytest.raises(psycopg.errors.RaiseException, match="immutable"):
        conn.execute("UPDATE agent_turns SET outcome = 'changed'")
