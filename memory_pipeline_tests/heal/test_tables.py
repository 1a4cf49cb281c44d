"""Rewriting a table batch by batch: by primary key, or by ctid where a table has none (a
table a later Dagster version adds, say); only changed rows are written, a second pass none."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memory_pipeline.heal.tables import Column, rewrite_table


def mask(text: str) -> str:
    return text.replace("s3cret", "[X]")


@pytest.mark.parametrize("key", ["id bigint PRIMARY KEY,", ""])
def test_every_batch_is_walked_and_only_changed_rows_are_written(
    conn: psycopg.Connection, key: str
) -> None:
    conn.execute(f"CREATE TABLE notes ({key} body text, doc jsonb, tags text[])")
    rows = [
        (i, f"note {i} s3cret" if i % 2 else f"note {i}", {"a": [f"s3cret {i}"]}, ["x"])
        for i in range(7)
    ]
    for i, body, doc, tags in rows:
        conn.execute(
            "INSERT INTO notes (id, body, doc, tags) VALUES (%s, %s, %s, %s)"
            if key
            else "INSERT INTO notes (body, doc, tags) VALUES (%s, %s, %s)",
            [i, body, Jsonb(doc), tags] if key else [body, Jsonb(doc), tags],
        )
    columns = [Column("body", "text"), Column("doc", "json"), Column("tags", "array")]
    result = rewrite_table(conn, "notes", columns, mask, batch=3)
    assert (result.scanned, result.rewritten) == (7, 7)
    stored = conn.execute("SELECT body, doc FROM notes ORDER BY body").fetchall()
    assert all("s3cret" not in body and "s3cret" not in str(doc) for body, doc in stored)
    assert len(stored) == 7
    again = rewrite_table(conn, "notes", columns, mask, batch=3)
    assert (again.scanned, again.rewritten) == (7, 0)
