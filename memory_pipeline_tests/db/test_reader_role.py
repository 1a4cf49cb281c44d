"""The read-only role serving connects as: it reads, and writes nothing but retrieval events."""

from __future__ import annotations

import psycopg
import pytest

from memory_pipeline.db.connection import connect

WRITES = [
    "INSERT INTO memories (type, title, content, partition_day)"
    " VALUES ('idea', 'x', 'y', '2026-01-01')",
    "UPDATE memories SET title = 'changed'",
    "DELETE FROM memories",
    "INSERT INTO memory_relationships (source_id, target_id, relation_type)"
    " VALUES (gen_random_uuid(), gen_random_uuid(), 'supports')",
    "UPDATE retrieval_events SET folded_at = now()",
    "DELETE FROM retrieval_events",
    "TRUNCATE memories",
    "CREATE TABLE sneaky (id int)",
]


@pytest.fixture
def memory_id(db_url: str) -> str:
    with connect(db_url) as conn:
        row = conn.execute(
            "INSERT INTO memories (type, title, content, partition_day)"
            " VALUES ('idea', 'kept', 'as is', '2026-01-01') RETURNING id"
        ).fetchone()
    assert row
    return str(row[0])


@pytest.mark.parametrize("statement", WRITES)
def test_reader_cannot_write(reader_url: str, memory_id: str, statement: str) -> None:
    with connect(reader_url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)


def test_reader_reads_memories_and_records_retrievals(
    reader_url: str, db_url: str, memory_id: str
) -> None:
    with connect(reader_url) as conn:
        assert conn.execute("SELECT title FROM memories").fetchall() == [("kept",)]
        conn.execute(
            "INSERT INTO retrieval_events (memory_id, surface, rank) VALUES (%s, 'cli', 1)",
            [memory_id],
        )
    with connect(db_url) as conn:
        assert conn.execute("SELECT title, access_count FROM memories").fetchall() == [("kept", 0)]
        assert conn.execute("SELECT count(*) FROM retrieval_events").fetchone() == (1,)
