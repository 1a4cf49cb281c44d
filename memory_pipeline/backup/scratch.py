"""Scratch databases of backup verification: claimed while in use, found again when the process
that made one died.

`verify_backup` restores into `<db>_verify_<8 hex>` and drops it in a `finally`, but a process
that is killed (SIGKILL, the OOM killer, a reboot) runs no `finally`: its scratch database stays,
holding a full copy of the data (forgotten memories included) until someone drops it. So a
verification holds a session-level advisory lock named after its scratch database, in our own
database, from before it creates it until after it dropped it. The server releases the lock when
the session ends, whatever ended the process. A scratch database whose lock nobody holds was left
by a process that is gone: the next start (`memory-pipeline run`, `ui`, the next verification,
i.e. `backup now`, `backup verify` and the nightly check) drops it and says so, and `db check`
lists it. One a live verification is using (its lock is held, on this machine or another) is
never touched.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

from memory_pipeline.db.connection import CONNECT_TIMEOUT_S

# First key of the two-key advisory lock a verification holds (the second is hashtext(name)).
SCRATCH_LOCK = int.from_bytes(hashlib.sha256(b"memory-pipeline:scratch").digest()[:4], "big") >> 1
VERIFY_PURPOSE = "verify"
_SUFFIX = re.compile(r"^[0-9a-f]{8}$")


def scratch_prefix(dbname: str, purpose: str = VERIFY_PURPOSE) -> str:
    """What every scratch database of `dbname` for `purpose` is called, before its 8 hex."""
    return f"{dbname[:40]}_{purpose}_"


@contextmanager
def claimed(admin: psycopg.Connection, name: str) -> Iterator[None]:
    """Hold `name`'s lock in `admin`'s session (an autocommit connection to our database)."""
    admin.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [SCRATCH_LOCK, name])
    try:
        yield
    finally:
        admin.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [SCRATCH_LOCK, name])


def _candidates(conn: psycopg.Connection) -> list[str]:
    prefix = scratch_prefix(conn.info.dbname)
    rows = conn.execute(
        "SELECT datname FROM pg_database WHERE left(datname, %s) = %s ORDER BY datname",
        [len(prefix), prefix],
    ).fetchall()
    return [r[0] for r in rows if _SUFFIX.match(r[0][len(prefix) :])]


def _unclaimed(conn: psycopg.Connection, name: str) -> bool:
    """Whether nobody holds `name`'s lock; when so, this session holds it now (release it)."""
    row = conn.execute(
        "SELECT pg_try_advisory_lock(%s, hashtext(%s))", [SCRATCH_LOCK, name]
    ).fetchone()
    return bool(row and row[0])


def _release(conn: psycopg.Connection, name: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [SCRATCH_LOCK, name])


def find_abandoned(conn: psycopg.Connection) -> list[str]:
    """Scratch databases of `conn`'s database whose verification process is gone (read only:
    the lock is taken and released at once)."""
    found = []
    for name in _candidates(conn):
        if _unclaimed(conn, name):
            _release(conn, name)
            found.append(name)
    return found


def abandoned_scratch_databases(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        return find_abandoned(conn)


def drop_abandoned(conn: psycopg.Connection) -> list[str]:
    """Drop every scratch database of `conn`'s database left by a process that is gone; returns
    their names. Each is dropped while this session holds its lock."""
    dropped = []
    for name in _candidates(conn):
        if not _unclaimed(conn, name):
            continue  # a verification is using it
        try:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            dropped.append(name)
        except psycopg.errors.InsufficientPrivilege:
            continue  # another role's database of that name: `db check` still lists it
        finally:
            _release(conn, name)
    return dropped


def drop_abandoned_scratch_databases(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        return drop_abandoned(conn)


def dropped_line(name: str) -> str:
    return (
        f"dropped scratch database {name}, left by a backup verification whose process was "
        "killed (it held a copy of the data)"
    )
