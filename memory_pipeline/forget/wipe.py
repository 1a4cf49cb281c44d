"""After a forget commits: make the deleted text unreadable where PostgreSQL still keeps it.

A DELETE only marks rows dead; their bytes stay in the table's and its indexes' pages (and TOAST)
until the space is reused, and `pg_stats` (readable by every role that may read the table,
`memory_reader` included) keeps the most common values ANALYZE last sampled. So, outside any
transaction (VACUUM cannot run inside one), on every table the forget touched:

1. `VACUUM (FULL, ANALYZE)`: FULL rewrites the table, its TOAST table and its indexes into new
   files holding only live rows, and the old files are truncated at commit. Plain VACUUM is not
   enough: it makes the space reusable, but the dead tuples' bytes stay on the page until a
   later insert happens to overwrite them (the forget tests grep the relation files and find
   them). ANALYZE then replaces the statistics, so `pg_stats` holds no forgotten value.
2. `VACUUM FULL pg_statistic`: ANALYZE updates statistics rows in place, which leaves the old
   ones (with the forgotten values) as dead tuples of that catalog.
3. `CHECKPOINT` (so the rewritten pages reach the files and the old files go) and
   `pg_switch_wal()` then `CHECKPOINT` again, so the WAL segments that hold the deleted rows
   are no longer needed and the server recycles them.

What stays, and is said so: WAL segments are recycled (renamed for reuse) rather than zeroed,
so until they are overwritten the forgotten text can still be found in `pg_wal/` by someone who
reads the server's files (never by a database role of ours); WAL archives, replicas, replication
slots and filesystem snapshots of an external server are out of our reach. On an external server
our role may lack the rights for steps 2 and 3 (superuser, or pg_maintain / pg_checkpoint and
EXECUTE on pg_switch_wal): each step that fails is reported with the SQL an administrator runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
from psycopg import sql
from pydantic import BaseModel, Field

from memory_pipeline import tuning
from memory_pipeline.forget.select import python_regex


class WipeReport(BaseModel):
    tables: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    wal_switched: bool = False
    failures: list[str] = Field(default_factory=list)  # one line each: what to run by hand


def touched_tables(conn: psycopg.Connection, counts: dict[str, int]) -> list[str]:
    """Inside the forget's transaction: the public tables it deleted, updated or inserted rows
    of, whoever did it (the cascade, a trigger such as the passage postings' or a briefing's, an
    unlink, the BM25 statistics' refresh, whose old statistics must go too), from the
    transaction's own statistics (pg_stat_xact_user_tables), with every table the cascade
    counted."""
    rows = conn.execute(
        "SELECT relname FROM pg_stat_xact_user_tables WHERE schemaname = 'public'"
        " AND n_tup_del + n_tup_upd + n_tup_ins > 0"
        " UNION SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
        " AND relkind IN ('r', 'm') AND relname = ANY(%s) ORDER BY 1",
        [sorted({key.split(" (", 1)[0].split(".", 1)[0] for key in counts})],
    ).fetchall()
    return [r[0] for r in rows]


def wipe(conn: psycopg.Connection, tables: list[str]) -> WipeReport:
    """Run the steps above on an autocommit connection; failures are reported, not raised
    (the forget itself has committed)."""
    start = time.monotonic()
    report = WipeReport(tables=tables)
    conn.execute(
        sql.SQL("SET lock_timeout = {}").format(
            sql.Literal(f"{tuning.FORGET_WIPE_LOCK_TIMEOUT_S}s")
        )
    )
    for table in tables:
        _step(
            conn,
            report,
            sql.SQL("VACUUM (FULL, ANALYZE) {}").format(sql.Identifier("public", table)),
        )
    _step(conn, report, sql.SQL("VACUUM FULL pg_catalog.pg_statistic"))
    if _step(conn, report, sql.SQL("CHECKPOINT")):
        report.wal_switched = _step(conn, report, sql.SQL("SELECT pg_switch_wal()"))
        if report.wal_switched:
            _step(conn, report, sql.SQL("CHECKPOINT"))
    conn.execute("RESET lock_timeout")
    report.seconds = time.monotonic() - start
    return report


def _step(conn: psycopg.Connection, report: WipeReport, statement: sql.Composable) -> bool:
    try:
        conn.execute(statement)
    except psycopg.Error as exc:
        text = statement.as_string(conn)
        reason = (exc.diag.message_primary or str(exc)).splitlines()[0]
        report.failures.append(f"{text}: {reason}")
        return False
    return True


# Under MEMORY_HOME, not scanned for a forgotten query: the embedded server's files (the WAL is
# described above), the encrypted backups (`--purge-backups`) and the keyword index (rebuilt).
UNSCANNED = ("pgdata", "backups", "keyword-index")


def files_holding(home: Path, query: str) -> list[Path]:
    """Files under MEMORY_HOME (but UNSCANNED) whose text still holds the query after a forget:
    logs or files another program wrote there, which forget does not own; the user is told."""
    pattern = python_regex(query)
    found = []
    for path in sorted(home.rglob("*")):
        parts = path.relative_to(home).parts
        if parts[0] in UNSCANNED or not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if pattern.search(text):
            found.append(path)
    return found
