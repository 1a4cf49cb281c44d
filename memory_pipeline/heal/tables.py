"""Rewriting columns of one table batch by batch: each batch is read under row locks, rewritten
in Python and written back in its own transaction, so a failure keeps every batch before it
and a run that is stopped resumes cleanly the next time (what was rewritten is found unchanged).

Only rows whose value changed are written; a second pass over the same rows writes nothing.
Rows are walked by primary key (keyset pagination), or by ctid for a table without one (a
rewritten row moves to a new ctid, possibly ahead of the walk: those are remembered and passed
over).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_pipeline.heal.values import (
    Rewrite,
    rewrite_array,
    rewrite_json,
    rewrite_serialized,
    rewrite_text,
)

# text: a whole string; json: a json/jsonb column's string values; array: a text[]'s elements;
# serialized: a text column that may hold a JSON document (Dagster's records).
Kind = Literal["text", "json", "array", "serialized"]


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind


@dataclass
class TableResult:
    table: str
    scanned: int = 0
    rewritten: int = 0
    changed_keys: list[tuple[Any, ...]] = field(default_factory=list)


# Called for each changed row with (old values, new values) by column name; returns more
# columns to set on it (a hash of the new text, say).
Extra = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


def primary_key(conn: psycopg.Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT a.attname FROM pg_index i"
        " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
        " WHERE i.indrelid = %s::regclass AND i.indisprimary"
        " ORDER BY array_position(i.indkey, a.attnum)",
        [sql.Identifier(table).as_string(conn)],
    ).fetchall()
    return [r[0] for r in rows]


def rewrite_table(
    conn: psycopg.Connection,
    table: str,
    columns: Sequence[Column],
    rewrite: Rewrite,
    *,
    batch: int,
    dry_run: bool = False,
    keep_keys: frozenset[str] = frozenset(),
    setup: str | None = None,
    extra: Extra | None = None,
    after_batch: Callable[[psycopg.Connection, list[tuple[Any, ...]]], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> TableResult:
    """Rewrite `columns` of every row of `table` with `rewrite`.

    `setup` runs at the start of each batch's transaction (a SET LOCAL); `extra` adds columns
    to set on a changed row; `after_batch` runs in the batch's transaction with the keys of the
    rows it changed. `keep_keys` are JSON keys whose values are left alone. With `dry_run`
    nothing is written (the counts say what would be). `conn` must be in autocommit mode."""
    result = TableResult(table)
    key = primary_key(conn, table) or ["ctid"]
    key_sql = sql.SQL(", ").join(sql.Identifier(k) if k != "ctid" else sql.SQL("ctid") for k in key)
    names = [c.name for c in columns]
    select = sql.SQL("SELECT {key}, {cols} FROM {table} {where} ORDER BY {key} LIMIT {n}{lock}")
    last: tuple[Any, ...] | None = None
    moved: set[str] = set()  # ctids of rows rewritten by this walk (no primary key)
    while True:
        where = sql.SQL("")
        params: list[Any] = []
        if last is not None:
            where = sql.SQL("WHERE ({key}) > ({values})").format(
                key=key_sql, values=sql.SQL(", ").join(sql.Placeholder() * len(key))
            )
            params = list(last)
        query = select.format(
            key=key_sql,
            cols=sql.SQL(", ").join(map(sql.Identifier, names)),
            table=sql.Identifier(table),
            where=where,
            n=sql.Literal(batch),
            lock=sql.SQL("" if dry_run else " FOR UPDATE"),
        )
        with conn.transaction():
            if setup and not dry_run:
                conn.execute(setup)
            rows = conn.execute(query, params).fetchall()
            if not rows:
                break
            changed: list[tuple[Any, ...]] = []
            scanned = 0
            for row in rows:
                row_key = tuple(row[: len(key)])
                if key == ["ctid"] and str(row_key[0]) in moved:
                    continue
                scanned += 1
                old = dict(zip(names, row[len(key) :], strict=True))
                new = {
                    c.name: _rewrite_value(old[c.name], c.kind, rewrite, keep_keys) for c in columns
                }
                sets = {n: _storable(new[n], c.kind) for n, c in zip(names, columns, strict=True)}
                sets = {n: v for n, v in sets.items() if new[n] is not old[n]}
                if not sets:
                    continue
                if extra:
                    sets.update(extra(old, new))
                changed.append(row_key)
                if not dry_run:
                    new_ctid = _update(conn, table, key, row_key, sets)
                    if key == ["ctid"]:
                        moved.add(new_ctid)
            if changed and after_batch and not dry_run:
                after_batch(conn, changed)
        result.scanned += scanned
        result.rewritten += len(changed)
        result.changed_keys.extend(changed)
        last = tuple(rows[-1][: len(key)])
        if progress:
            progress(result.scanned)
    return result


def _rewrite_value(value: Any, kind: Kind, rewrite: Rewrite, keep: frozenset[str]) -> Any:
    if value is None:
        return None
    if kind == "text":
        return rewrite_text(value, rewrite)
    if kind == "array":
        return rewrite_array(value, rewrite)
    if kind == "serialized":
        new = rewrite_serialized(value, rewrite, keep)
        return value if new == value else new
    return rewrite_json(value, rewrite, keep)


def _storable(value: Any, kind: Kind) -> Any:
    if kind == "json" and value is not None:
        return Jsonb(value)
    return value


def _update(
    conn: psycopg.Connection,
    table: str,
    key: list[str],
    row_key: tuple[Any, ...],
    sets: dict[str, Any],
) -> str:
    """Update one row; returns its new ctid."""
    # A value may be SQL itself (`redactions + 2`): inlined, the others are parameters.
    assignments = sql.SQL(", ").join(
        sql.SQL("{} = {}").format(
            sql.Identifier(n), v if isinstance(v, sql.Composable) else sql.Placeholder()
        )
        for n, v in sets.items()
    )
    match = sql.SQL(" AND ").join(
        sql.SQL("{} = {}").format(
            sql.Identifier(k) if k != "ctid" else sql.SQL("ctid"), sql.Placeholder()
        )
        for k in key
    )
    row = conn.execute(
        sql.SQL("UPDATE {} SET {} WHERE {} RETURNING ctid").format(
            sql.Identifier(table), assignments, match
        ),
        [*(v for v in sets.values() if not isinstance(v, sql.Composable)), *row_key],
    ).fetchone()
    return str(row[0]) if row else ""
