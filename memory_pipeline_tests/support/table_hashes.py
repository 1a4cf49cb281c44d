"""A content hash of every table of a database, to prove that a run changed nothing.

Tables are enumerated from information_schema, so a table a later migration adds is covered
without touching the tests. A table's hash is over the text of every row (every column: ids,
timestamps, counters), order-independent, so a row deleted and inserted again with a new id or a
new `updated_at` shows up as a change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
from psycopg import sql

# Tables that record runs, not what the runs produce. Each entry says why it may gain a row on
# a run that finds nothing new. Nothing else is excluded.
RUN_RECORD_TABLES = {
    # One row per dream run, whatever it found (`dream list`): the issue allows "a dream run may
    # add its run row". Its candidates and memories are in other tables, which are compared.
    "dream_cycle_runs": "one row per dream run (`dream list`)",
}


def table_hashes(url: str, exclude: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
    """table name -> "<rows>:<md5 of the sorted md5s of its rows' text>"."""
    out: dict[str, str] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1"
            ).fetchall()
        ]
        for table in tables:
            if table in exclude:
                continue
            row = conn.execute(
                sql.SQL(
                    "SELECT count(*), md5(coalesce(string_agg(h, ',' ORDER BY h), ''))"
                    " FROM (SELECT md5(t::text) AS h FROM {} t) rows"
                ).format(sql.Identifier(table))
            ).fetchone()
            assert row is not None
            out[table] = f"{row[0]}:{row[1]}"
    return out


def changed_tables(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """Tables whose hash changed (or that appeared or vanished), with their row counts."""
    return {
        t: f"{before.get(t, 'absent')} -> {after.get(t, 'absent')}"
        for t in sorted(set(before) | set(after))
        if before.get(t) != after.get(t)
    }


def file_hashes(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under `root` (empty when it does not exist)."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
