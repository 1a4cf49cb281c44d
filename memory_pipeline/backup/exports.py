"""JSON Lines exports of the tables that hold what the agents learned, written with polars.

One line per row, rows ordered by primary key, so the same data always gives the same bytes: a
restore check re-exports the restored database and compares sha256s with the manifest. Rows are
read through a server-side cursor in batches of BACKUP_EXPORT_BATCH_ROWS and each batch is written
straight into the caller's stream (the encryptor), so memory stays flat and no plaintext file is
ever written.

Value forms: uuids, numerics and JSON documents as strings (a jsonb column holds the JSON text,
since a polars struct would add keys a row never had), timestamps in UTC ISO 8601, vectors as
lists of float32, text arrays as lists. tsvector columns (memories.search_vector) are left out:
a trigger derives them from the row, and the pg_dump keeps them.

memory_embeddings is not exported: the vectors are in the pg_dump, a JSON copy of them would be
several times the size of everything else, and they can be recomputed from the exported text.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import polars as pl
import psycopg
from psycopg import sql

from memory_pipeline.tuning import BACKUP_EXPORT_BATCH_ROWS

EXPORT_TABLES = (
    "memories",
    "memory_relationships",
    "captured_tasks",
    "agent_turns",
    "dream_cycle_runs",
    "dream_cycle_candidates",
)

_Mapping = tuple[str | None, Any]  # (SQL cast or None, polars dtype)
_STRING: _Mapping = (None, pl.String)
_SCALARS: dict[str, _Mapping] = {
    "text": _STRING,
    "varchar": _STRING,
    "bpchar": _STRING,
    "name": _STRING,
    "uuid": ("text", pl.String),
    "int2": (None, pl.Int16),
    "int4": (None, pl.Int32),
    "int8": (None, pl.Int64),
    "float4": (None, pl.Float32),
    "float8": (None, pl.Float64),
    "numeric": ("text", pl.String),  # exact: a float would round it
    "bool": (None, pl.Boolean),
    "timestamptz": (None, pl.Datetime("us", "UTC")),
    "timestamp": (None, pl.Datetime("us")),
    "date": (None, pl.Date),
    "json": ("text", pl.String),
    "jsonb": ("text", pl.String),
    "vector": ("real[]", pl.List(pl.Float32)),
}
_ARRAYS: dict[str, _Mapping] = {
    "text": (None, pl.List(pl.String)),
    "varchar": (None, pl.List(pl.String)),
    "uuid": ("text[]", pl.List(pl.String)),
    "int2": (None, pl.List(pl.Int16)),
    "int4": (None, pl.List(pl.Int32)),
    "int8": (None, pl.List(pl.Int64)),
    "float4": (None, pl.List(pl.Float32)),
    "float8": (None, pl.List(pl.Float64)),
    "bool": (None, pl.List(pl.Boolean)),
}
_SKIPPED_TYPES = {"tsvector"}  # derived by triggers; see the module docstring


@dataclass(frozen=True)
class _Column:
    name: str
    cast: str | None
    dtype: Any


def export_table(
    conn: psycopg.Connection,
    table: str,
    sink: BinaryIO,
    *,
    batch_rows: int = BACKUP_EXPORT_BATCH_ROWS,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write `table` as JSON Lines to `sink`; return the row count.

    Must run inside a transaction (server-side cursors live in one); call
    checksums.pin_output_settings first so values print the same way on every server.
    """
    columns = _columns(conn, table)
    order = _primary_key(conn, table)
    select = sql.SQL(", ").join(_select_item(c) for c in columns)
    query = sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
        select,
        sql.Identifier("public", table),
        sql.SQL(", ").join(sql.Identifier(k) for k in order),
    )
    schema = {c.name: c.dtype for c in columns}
    rows = 0
    with conn.cursor(name=f"backup_export_{table}") as cur:
        cur.execute(query)
        while batch := cur.fetchmany(batch_rows):
            pl.DataFrame(batch, schema=schema, orient="row").write_ndjson(sink)
            rows += len(batch)
            if progress:
                progress(rows)
    return rows


def _select_item(column: _Column) -> sql.Composable:
    name = sql.Identifier(column.name)
    if column.cast is None:
        return name
    # The cast comes from the constant tables above, never from input.
    return sql.SQL("{}::{} AS {}").format(name, sql.SQL(column.cast), name)  # type: ignore[arg-type]


def _columns(conn: psycopg.Connection, table: str) -> list[_Column]:
    rows = conn.execute(
        "SELECT a.attname, t.typname, t.typcategory = 'A', et.typname"
        " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
        " LEFT JOIN pg_type et ON et.oid = t.typelem"
        " WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped"
        " ORDER BY a.attnum",
        [_regclass(conn, table)],
    ).fetchall()
    if not rows:
        raise ValueError(f"table {table} has no columns or does not exist")
    columns = []
    for name, typname, is_array, element in rows:
        if typname in _SKIPPED_TYPES:
            continue
        cast, dtype = (_ARRAYS if is_array else _SCALARS).get(element if is_array else typname) or (
            "text",
            pl.String,  # anything else keeps PostgreSQL's own text form
        )
        columns.append(_Column(name, cast, dtype))
    return columns


def _primary_key(conn: psycopg.Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT a.attname FROM pg_index i"
        " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)"
        " WHERE i.indrelid = %s::regclass AND i.indisprimary"
        " ORDER BY array_position(i.indkey::int2[], a.attnum)",
        [_regclass(conn, table)],
    ).fetchall()
    if not rows:
        # Without a total order the export's bytes (and so its checksum) could differ per run.
        raise ValueError(f"table {table} has no primary key; it cannot be exported reproducibly")
    return [r[0] for r in rows]


def _regclass(conn: psycopg.Connection, table: str) -> str:
    return sql.Identifier("public", table).as_string(conn)


class HashingSink(io.RawIOBase):
    """A write-only stream that keeps only the sha256 and size of what it receives."""

    def __init__(self) -> None:
        super().__init__()
        self._sha = hashlib.sha256()
        self.bytes = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # b: any bytes-like object
        data = memoryview(b).cast("B")
        self._sha.update(data)
        self.bytes += len(data)
        return len(data)

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()
