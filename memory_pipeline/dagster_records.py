"""Rewriting text in the records of our Dagster instance (its PostgreSQL database).

Dagster keeps what our steps reported long after the run: asset materialization metadata, log
messages and errors, in `event_logs.event` (one serialized JSON record per event) and copies of
the latest ones (`asset_keys.last_materialization`, check evaluations, tags, ticks). When that
text quotes a memory, healing a secret or forgetting the memory must reach it too. This module
applies any `rewrite: Callable[[str], str]` to every string in those records and writes back the
rows it changed, keeping each record valid JSON of the same shape:

- every text, varchar, json and jsonb column of every table of the instance's `public` schema
  (found in the catalog, so tables a later Dagster version adds are covered), except the
  identifier and enum columns in SKIP_COLUMNS;
- in a serialized record, every string value except those of the keys in KEEP_KEYS (Dagster's
  type tags and ids), never a key;
- batch by batch, each batch in its own transaction, only rows that changed.

The heal (memory_pipeline/heal) passes the redaction rules; forget may pass a function that
replaces the forgotten text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from memory_pipeline.heal.tables import Column, rewrite_table
from memory_pipeline.heal.values import Rewrite

# Columns that hold ids, enums, timestamps as text, or Dagster's own bookkeeping keys.
SKIP_COLUMNS = frozenset(
    [
        "run_id",
        "step_key",
        "asset_key",
        "dagster_event_type",
        "status",
        "partition",
        "snapshot_id",
        "snapshot_type",
        "instance_id",
        "selector_id",
        "origin_id",
        "job_origin_id",
        "repository_label",
        "job_name",
        "pipeline_name",
        "concurrency_key",
        "version_num",
        "name",
        "key",
        "kind",
        "type",
        "daemon_type",
        "daemon_id",
        "backfill_id",
        "run_status",
        "check_name",
        "execution_status",
        "partitions_def_name",
        "dagster_version",
    ]
)
# Keys of a serialized record whose values are left alone: type tags, ids, step keys.
KEEP_KEYS = frozenset(
    ["__class__", "run_id", "step_key", "parent_run_id", "root_run_id", "snapshot_id"]
)
TEXT_TYPES = ("text", "character varying", "json", "jsonb")


@dataclass(frozen=True)
class RecordsReport:
    """Per `table.column`: rows read and rows rewritten."""

    scanned: dict[str, int]
    rewritten: dict[str, int]

    @property
    def total_rewritten(self) -> int:
        return sum(self.rewritten.values())


def dagster_psycopg_url(url: str) -> str:
    """The instance's SQLAlchemy URL (`postgresql+psycopg2://...`) as a libpq one."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql://{rest}" if sep and scheme.startswith("postgresql") else url


def record_columns(conn: psycopg.Connection) -> list[tuple[str, Column]]:
    """(table, column) of every text-like column this module rewrites, in a stable order."""
    rows = conn.execute(
        "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c"
        " JOIN information_schema.tables t USING (table_schema, table_name)"
        " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'"
        " AND c.data_type = ANY(%s) ORDER BY c.table_name, c.ordinal_position",
        [list(TEXT_TYPES)],
    ).fetchall()
    return [
        (table, Column(name, "json" if kind in ("json", "jsonb") else "serialized"))
        for table, name, kind in rows
        if name not in SKIP_COLUMNS and not name.endswith("_id")
    ]


def rewrite_dagster_records(
    conn: psycopg.Connection,
    rewrite: Rewrite,
    *,
    batch: int,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> RecordsReport:
    """Apply `rewrite` to every string in the instance's records (see the module docstring).
    `conn`: an autocommit connection to the instance's database."""
    say = progress or (lambda _m: None)
    by_table: dict[str, list[Column]] = {}
    for table, column in record_columns(conn):
        by_table.setdefault(table, []).append(column)
    scanned: dict[str, int] = {}
    rewritten: dict[str, int] = {}
    for table, columns in by_table.items():
        total = _count(conn, table)
        result = rewrite_table(
            conn,
            table,
            columns,
            rewrite,
            batch=batch,
            dry_run=dry_run,
            keep_keys=KEEP_KEYS,
            progress=(lambda n, t=table, total=total: say(f"  dagster {t}: {n}/{total} rows"))
            if total > batch
            else None,
        )
        scanned[table] = result.scanned
        rewritten[table] = result.rewritten
    return RecordsReport(scanned, rewritten)


def _count(conn: psycopg.Connection, table: str) -> int:
    from psycopg import sql

    query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
    return int(conn.execute(query).fetchone()[0])  # type: ignore[index]
