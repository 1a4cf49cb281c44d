"""Table checksums over several connections (issue 12: a backup computes them while pg_dump
runs): the same figures as one connection, read from the backup's snapshot, errors raised."""

from __future__ import annotations

import psycopg
import pytest

from memory_pipeline.backup.checksums import (
    checksums_in_parallel,
    largest_first,
    pin_output_settings,
    table_checksums,
    user_tables,
)
from memory_pipeline.db.connection import connect
from memory_pipeline_tests.backup.conftest import Seeded


def test_parallel_checksums_equal_one_connections_and_read_the_snapshot(
    seeded: Seeded, db_url: str
) -> None:
    with connect(db_url, autocommit=True) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with conn.transaction():
            pin_output_settings(conn)
            snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
            before = table_checksums(conn)
            tables = largest_first(conn, user_tables(conn))
            assert sorted(tables) == sorted(t.name for t in before)
            with connect(db_url, autocommit=True) as other:  # lands after the snapshot
                other.execute(
                    "INSERT INTO memories (type, title, content, partition_day)"
                    " VALUES ('insight', 'late', 'written during the backup', '2026-01-01')"
                )
            in_snapshot = checksums_in_parallel(db_url, tables, snapshot=snapshot, workers=3)
            now = checksums_in_parallel(db_url, tables, workers=2)
    by_name = {t.name: t for t in before}
    assert {t.name: t for t in in_snapshot} == by_name
    assert {t.name for t in now if t != by_name[t.name]} == {"memories"}


def test_a_failing_table_is_raised_and_stops_the_others(db_url: str) -> None:
    with connect(db_url, autocommit=True) as conn:
        tables = user_tables(conn)
    with pytest.raises(psycopg.errors.UndefinedTable):
        checksums_in_parallel(db_url, ["no_such_table", *tables], workers=2)
