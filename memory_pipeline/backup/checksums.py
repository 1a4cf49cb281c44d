"""Row counts and content checksums of tables, computed the same way on both sides of a restore.

A table's checksum is md5 over the sorted md5s of its rows' text form (`row::text`): independent of
the physical row order (a restore rewrites every table) and computed inside PostgreSQL, so only
32 bytes per row are aggregated there and nothing is sent to us. Text forms depend on a few
session settings (time zone, date style, float digits), so both sides pin them first.

Hashing every row is server CPU (about 20 s at 100K memories, most of it in the vector and
posting tables), so `checksums_in_parallel` spreads the tables over a few connections; a backup
has them import its exported snapshot, so they read exactly what pg_dump and the exports read.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Sequence

import psycopg
from psycopg import sql

from memory_pipeline.backup.manifest import TableChecksum
from memory_pipeline.db.connection import connect
from memory_pipeline.tuning import BACKUP_CHECKSUM_WORKERS

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


def largest_first(conn: psycopg.Connection, tables: Sequence[str]) -> list[str]:
    """`tables` by their size on disk, largest first: the order that finishes workers together."""
    rows = conn.execute(
        "SELECT t, pg_total_relation_size(format('public.%%I', t)::regclass)"
        " FROM unnest(%s::text[]) AS t",
        [list(tables)],
    ).fetchall()
    return [name for name, _size in sorted(rows, key=lambda r: (-r[1], r[0]))]


def checksums_in_parallel(
    dsn: str,
    tables: Sequence[str],
    *,
    snapshot: str | None = None,
    workers: int = BACKUP_CHECKSUM_WORKERS,
    cancel: threading.Event | None = None,
) -> list[TableChecksum]:
    """table_checksum of each of `tables` (best given largest first) over `workers` connections
    to `dsn`, each in one read-only REPEATABLE READ transaction that imports `snapshot` when
    given; sorted by table name. The first error stops the other workers (their running query
    is cancelled) and is raised; so is an interrupt of the calling thread. Setting `cancel`
    stops them too (then the result is incomplete: the caller is failing anyway)."""
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for table in tables:
        todo.put(table)
    results: dict[str, TableChecksum] = {}
    errors: list[BaseException] = []
    stop = threading.Event()
    conns: list[psycopg.Connection] = []
    lock = threading.Lock()

    def work() -> None:
        try:
            with connect(dsn, autocommit=True) as conn:
                with lock:
                    conns.append(conn)
                if stop.is_set():
                    return
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                conn.read_only = True
                with conn.transaction():
                    if snapshot is not None:  # must be the transaction's first statement
                        conn.execute(
                            sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot))
                        )
                    pin_output_settings(conn)
                    while not stop.is_set():
                        try:
                            table = todo.get_nowait()
                        except queue.Empty:
                            return
                        results[table] = table_checksum(conn, table)
        except BaseException as exc:  # handed to the calling thread
            if not stop.is_set():
                errors.append(exc)
            _stop_all()

    def _stop_all() -> None:
        stop.set()
        with lock:
            for conn in conns:
                if not conn.closed:
                    with contextlib.suppress(Exception):  # best effort: the join still waits
                        conn.cancel_safe()

    threads = [
        threading.Thread(target=work, name=f"backup-checksums-{i}", daemon=True)
        for i in range(max(1, min(workers, len(tables))))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
                if cancel is not None and cancel.is_set():
                    _stop_all()
    except BaseException:
        _stop_all()
        for thread in threads:
            thread.join()
        raise
    if errors:
        raise errors[0]
    return [results[name] for name in sorted(results)]


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
