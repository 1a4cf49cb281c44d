"""The migration runner for `sql/NNN_name.sql`.

Rules: files apply in order, each in its own transaction; a session advisory lock serialises
runners (a second one waits, then finds nothing to do); each applied file's sha256 is stored and
an applied file that was edited afterwards stops everything before anything runs. Schema changes
are new files, never edits.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from memory_pipeline.db.connection import sql_ident
from memory_pipeline.errors import UserError
from memory_pipeline.settings import REPO_ROOT

SQL_DIR = REPO_ROOT / "sql"
# pg_advisory_lock key: any constant unique to this project.
LOCK_KEY = int.from_bytes(hashlib.sha256(b"memory-pipeline:migrations").digest()[:8], "big") >> 1
_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


class MigrationError(UserError):
    pass


@dataclass(frozen=True)
class Migration:
    version: str
    path: Path
    checksum: str

    @property
    def filename(self) -> str:
        return self.path.name


def discover(sql_dir: Path = SQL_DIR) -> list[Migration]:
    if not sql_dir.is_dir():
        raise MigrationError(f"migrations directory {sql_dir} not found; reinstall from the repo")
    found: dict[str, Migration] = {}
    for path in sorted(sql_dir.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name} is not named NNN_lowercase_name.sql")
        version = match.group(1)
        if version in found:
            raise MigrationError(f"two migrations share number {version}")
        found[version] = Migration(version, path, hashlib.sha256(path.read_bytes()).hexdigest())
    if "000" not in found:
        raise MigrationError("sql/000_*.sql (the version table bootstrap) is missing")
    return [found[v] for v in sorted(found)]


def migrate(
    url: str, sql_dir: Path = SQL_DIR, progress: Callable[[str], None] | None = None
) -> list[str]:
    """Apply pending migrations; return the filenames applied (empty when up to date)."""
    migrations = discover(sql_dir)
    applied_now: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        try:
            applied = _applied(conn)
            _check_unchanged(migrations, applied)
            for m in migrations:
                if m.version in applied:
                    continue
                if progress:
                    progress(f"applying {m.filename}")
                try:
                    with conn.transaction():
                        conn.execute(m.path.read_text())  # no parameters: several statements
                        conn.execute(
                            "INSERT INTO schema_migrations (version, filename, checksum)"
                            " VALUES (%s, %s, %s)",
                            [m.version, m.filename, m.checksum],
                        )
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise MigrationError(_privilege_message(m, exc, conn)) from exc
                applied_now.append(m.filename)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
    return applied_now


def pending(url: str, sql_dir: Path = SQL_DIR) -> list[str]:
    migrations = discover(sql_dir)
    with psycopg.connect(url) as conn:
        applied = _applied(conn)
    _check_unchanged(migrations, applied)
    return [m.filename for m in migrations if m.version not in applied]


def applied_checksums(conn: psycopg.Connection) -> dict[str, str]:
    """version -> checksum of every applied migration (the schema version of a database)."""
    return _applied(conn)


def _privilege_message(m: Migration, exc: psycopg.Error, conn: psycopg.Connection) -> str:
    """One line for a migration the role may not apply: what failed and what an admin runs.

    Nothing of the file was applied (its transaction rolled back). `memory-pipeline db check`
    finds these before a migration starts; this covers a server that changed in between.
    """
    reason = (exc.diag.message_primary or str(exc)).strip().splitlines()[0]
    role, database = sql_ident(conn.info.user), conn.info.dbname
    if "extension" in reason:
        fix = f"an administrator runs once: psql -d {database} -c 'CREATE EXTENSION vector'"
    elif "role" in reason:
        fix = f"an administrator runs once: ALTER ROLE {role} CREATEROLE;"
    else:
        fix = (
            f"an administrator runs once in database {database}: "
            f"GRANT CREATE ON SCHEMA public TO {role};"
        )
    return f"{m.filename} was not applied: {reason}; {fix}"


def _applied(conn: psycopg.Connection) -> dict[str, str]:
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return {}
    rows = conn.execute("SELECT version, checksum FROM schema_migrations").fetchall()
    return {version: checksum for version, checksum in rows}


def _check_unchanged(migrations: list[Migration], applied: dict[str, str]) -> None:
    by_version = {m.version: m for m in migrations}
    for version, checksum in sorted(applied.items()):
        m = by_version.get(version)
        if m is None:
            raise MigrationError(
                f"the database has migration {version} applied but sql/ has no such file; "
                "this code is older than the database"
            )
        if m.checksum != checksum:
            raise MigrationError(
                f"sql/{m.filename} was edited after it was applied (checksum {checksum[:12]} "
                f"became {m.checksum[:12]}); restore the file and put the change in a new migration"
            )
