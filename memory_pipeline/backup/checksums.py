"""Row counts and content checksums of tables, computed the same way on both sides of a restore.

A table's checksum is md5 over the sorted md5s of its rows' text form (`row::text`): independent of
the physical row order (a restore rewrites every table) and computed inside PostgreSQL, so only
32 bytes per row are aggregated there and nothing is sent to us. Text forms depend on a few
session settings (time zone, date style, float digits), so both sides pin them first.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from memory_pipeline.backup.manifest import TableChecksum

# Must run inside the transaction that computes checksums or exports (SET LOCAL ends with it).
_OUTPUT_SETTINGS = (
    "SET LOCAL TimeZone = 'UTC'",
    "SET LOCAL DateStyle = 'ISO, YMD'",
    "SET LOCAL IntervalStyle = 'postgres'",
    "SET LOCAL extra_float_digits = 1",
    "SET LOCAL bytea_output = 'hex'",
)


def pin_output_settings(conn: psycopg.Connection) -> None:
    """Make value text forms identical on every server and session (call inside a transaction)."""
    for statement in _OUTPUT_SETTINGS:
        conn.execute(statement)  # type: ignore[arg-type]  # constant SQL


def user_tables(conn: psycopg.Connection) -> list[str]:
    """Every ordinary table in schema public that is ours (not created by an extension)."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'public' AND c.relkind = 'r'"
        " AND NOT EXISTS (SELECT 1 FROM pg_depend d"
        "                 WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid"
        "                 AND d.deptype = 'e')"
        " ORDER BY c.relname"
    ).fetchall()
    return [r[0] for r in rows]


def table_checksum(conn: psycopg.Connection, table: str) -> TableChecksum:
    # The alias is unlikely to be a column name: `alias::text` would read that column instead.
    query = sql.SQL(
        "SELECT count(*), md5(coalesce(string_agg(h, '' ORDER BY h), ''))"
        " FROM (SELECT md5(_backup_row::text) AS h FROM {} AS _backup_row) AS hashes"
    ).format(sql.Identifier("public", table))
    row = conn.execute(query).fetchone()
    assert row is not None
    return TableChecksum(name=table, rows=int(row[0]), md5=row[1])


def table_checksums(conn: psycopg.Connection) -> list[TableChecksum]:
    return [table_checksum(conn, table) for table in user_tables(conn)]


def compare_tables(expected: list[TableChecksum], actual: list[TableChecksum]) -> list[str]:
    """Problems, one line each: missing or unexpected tables, other row counts or contents."""
    found = {t.name: t for t in actual}
    problems = []
    for want in expected:
        got = found.pop(want.name, None)
        if got is None:
            problems.append(f"table {want.name} is missing")
        elif got.rows != want.rows:
            problems.append(f"table {want.name} has {got.rows} rows, the backup had {want.rows}")
        elif got.md5 != want.md5:
            problems.append(f"table {want.name} has other contents than the backup (checksum)")
    problems.extend(f"table {name} is not in the backup's manifest" for name in sorted(found))
    return problems
