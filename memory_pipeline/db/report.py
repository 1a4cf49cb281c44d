"""A snapshot of the database for run metadata and `memory-pipeline db status`."""

from __future__ import annotations

import psycopg
from pydantic import BaseModel

from memory_pipeline.db.migrate import applied_checksums

# Tables whose size tells a user how much the pipeline holds.
COUNTED_TABLES = (
    "captured_tasks",
    "agent_turns",
    "capture_skips",
    "topic_segments",
    "memories",
    "memory_relationships",
    "memory_embeddings",
    "retrieval_events",
)


class DatabaseReport(BaseModel):
    server_version: str
    schema_version: str  # the newest applied migration
    migrations_applied: int
    row_counts: dict[str, int]
    serving_space: str | None
    size_bytes: int


def database_report(conn: psycopg.Connection) -> DatabaseReport:
    applied = applied_checksums(conn)
    counts = {}
    for table in COUNTED_TABLES:
        # Table names come from the constant above, never from input.
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        counts[table] = int(row[0]) if row else 0
    serving = conn.execute("SELECT name FROM embedding_spaces WHERE serving").fetchone()
    size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return DatabaseReport(
        server_version=str(conn.execute("SHOW server_version").fetchone()[0]),  # type: ignore[index]
        schema_version=max(applied) if applied else "none",
        migrations_applied=len(applied),
        row_counts=counts,
        serving_space=serving[0] if serving else None,
        size_bytes=int(size[0]) if size else 0,
    )
