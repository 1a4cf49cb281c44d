"""Scratch databases of backups: claimed while in use, found again when the process that made
one died.

Two kinds: `verify_backup` restores into `<db>_verify_<8 hex>` and drops it in a `finally`;
`restore_backup` restores into a staging database `<target>_restore_<8 hex>` and renames it over
its target once it matched the manifest, or drops it (in a `finally`). A process that is killed
(SIGKILL, the OOM killer, a reboot) runs no `finally`: its scratch database stays, holding a full
copy of the data (forgotten memories included) until someone drops it. So the process holds a
session-level advisory lock named after its scratch database, in our own database (the one its
connection names), from before it creates it until after it is dropped or renamed. The server
releases the lock when the session ends, whatever ended the process. A scratch database whose
lock nobody holds was left by a process that is gone: the next start (`memory-pipeline run`,
`ui`, the next verification, i.e. `backup now`, `backup verify` and the nightly check, and the
next `backup restore`) drops it and says so, and `db check` lists it. One a live process is
using (its lock is held, on this machine or another) is never touched.

A staging database is named after its target, which may be any database, so the name alone does
not say it is ours: a restore marks it, right after creating it and before any data is in it,
with a comment naming the database that holds its lock (`staging_marker`). Only databases of the
pattern with our marker are candidates.
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
RESTORE_PURPOSE = "restore"
_SUFFIX = re.compile(r"^[0-9a-f]{8}$")
_STAGING = re.compile(rf"^.+_{RESTORE_PURPOSE}_[0-9a-f]{{8}}$")


def scratch_prefix(dbname: str, purpose: str = VERIFY_PURPOSE) -> str:
    """What every scratch database of `dbname` for `purpose` is called, before its 8 hex."""
    return f"{dbname[:40]}_{purpose}_"


def staging_marker(lock_database: str) -> str:
    """The comment a restore puts on its staging database: ours, and where its lock is."""
    return f"memory-pipeline restore staging; its lock is in database {lock_database}"


def is_staging(name: str) -> bool:
    return bool(_STAGING.match(name))


@contextmanager
def claimed(admin: psycopg.Connection, name: str) -> Iterator[None]:
    """Hold `name`'s lock in `admin`'s session (an autocommit connection to our database).

    A session that ended meanwhile released it (a restore over the database the session is in
    ends the session when it replaces that database)."""
    admin.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [SCRATCH_LOCK, name])
    try:
        yield
    finally:
        try:
            admin.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [SCRATCH_LOCK, name])
        except psycopg.OperationalError:
            if not (admin.closed or admin.broken):
                raise


def mark_staging(admin: psycopg.Connection, name: str, lock_database: str) -> None:
    admin.execute(
        sql.SQL("COMMENT ON DATABASE {} IS {}").format(
            sql.Identifier(name), sql.Literal(staging_marker(lock_database))
        )
    )


def _candidates(conn: psycopg.Connection) -> list[str]:
    """Our verifications' scratch databases, and the restore staging databases marked ours."""
    prefix = scratch_prefix(conn.info.dbname)
    rows = conn.execute(
        "SELECT datname, left(datname, %s) = %s, shobj_description(oid, 'pg_database') = %s"
        " FROM pg_database ORDER BY datname",
        [len(prefix), prefix, staging_marker(conn.info.dbname)],
    ).fetchall()
    return [
        name
        for name, verify, staging in rows
        if (verify and _SUFFIX.match(name[len(prefix) :])) or (staging and is_staging(name))
    ]


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


def left_by(name: str) -> str:
    """Who leaves a scratch database of this name behind."""
    return "a backup restore" if is_staging(name) else "a backup verification"


def dropped_line(name: str) -> str:
    kind = "staging" if is_staging(name) else "scratch"
    return (
        f"dropped {kind} database {name}, left by {left_by(name)} whose process was killed "
        "(it held a copy of the data)"
    )
