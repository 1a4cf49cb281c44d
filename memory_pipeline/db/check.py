"""What the pipeline's role needs on a PostgreSQL server, checked one requirement at a time.

The application role needs no superuser: `LOGIN`, `CREATEDB` (our databases if missing, and the
scratch databases that prove each backup restores) and `CREATEROLE` (migration 011 creates the
read-only role `memory_reader`; `db reader-password` sets its password). What only a superuser can
do is done once by an administrator: `CREATE EXTENSION vector` in our database (or in
`template1`, which new databases copy) and in `template1` for the scratch databases, because
pgvector is not a trusted extension.

`memory-pipeline db check` prints every requirement, one line each, with the exact SQL that fixes
a missing one. `require` is what the commands call before they start: it raises the first missing
requirement as a one-line UserError, before anything is created or migrated. Every check only
reads the catalogs; none changes the server.

Scopes: "server" (reach it, version, pgvector, our two databases), "migrate" (what pending
migrations need), "backup" (scratch databases for the restore check), "serving" (the read-only
role can log in).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import psycopg
from psycopg.conninfo import make_conninfo

from memory_pipeline.db.connection import (
    MIN_SERVER_VERSION,
    DatabaseUrls,
    connect_or_explain,
    is_missing_database,
    raise_unreachable,
    sql_ident,
)
from memory_pipeline.db.failures import classify
from memory_pipeline.db.migrate import discover
from memory_pipeline.errors import UserError

Scope = Literal["server", "migrate", "backup", "serving"]
ALL_SCOPES: tuple[Scope, ...] = ("server", "migrate", "backup", "serving")
MIN_PGVECTOR = (0, 8)
READER_MIGRATION = "011"


@dataclass(frozen=True)
class Check:
    scope: Scope
    name: str
    ok: bool
    detail: str  # what was found, as a clause a user reads
    fix: str = ""  # what to run when it is missing
    blocking: bool = True  # False: reported, but `require` lets the command start
    problem: str = "MISSING"  # what a failed line starts with

    @property
    def message(self) -> str:
        return f"{self.detail}; {self.fix}" if self.fix and not self.ok else self.detail

    def line(self) -> str:
        return f"{'ok' if self.ok else self.problem:<8} {self.name}: {self.message}"


@dataclass
class Facts:
    """What the catalogs say about this role and server (gathered once, read by the checks)."""

    role: str
    superuser: bool
    createrole: bool
    createdb: bool
    server_version: int
    vector_default: str | None  # pgvector's default version on the server, None: not installed
    vector_trusted: bool
    app_db: str
    app_db_exists: bool
    dagster_db: str
    dagster_db_exists: bool
    vector_installed: str | None = None  # in our database
    public_create: bool = True  # CREATE on schema public of our database
    applied: set[str] = field(default_factory=set)  # migration versions applied
    pending: list[str] = field(default_factory=list)  # filenames not applied yet
    reader_exists: bool = False
    reader_admin: bool = False  # may ALTER memory_reader (password, settings)
    template1_vector: bool | None = None  # None: not looked (not needed) or not readable
    # Scratch databases of backup verifications and restores whose process is gone
    # (backup/scratch.py); None: not looked.
    abandoned_scratch: list[str] | None = None

    @property
    def can_create_vector(self) -> bool:
        return self.superuser or self.vector_trusted


def require(urls: DatabaseUrls, scopes: Iterable[Scope]) -> None:
    """Raise the first missing requirement of `scopes` as one line; return when all are met.

    What migrations need blocks only while migrations are pending: an up-to-date schema needs
    nothing more of the role until the next migration.
    """
    for check in run_checks(urls, scopes):
        if not check.ok and check.blocking:
            raise UserError(f"{check.message} (`memory-pipeline db check` lists every requirement)")


def run_checks(urls: DatabaseUrls, scopes: Iterable[Scope] = ALL_SCOPES) -> list[Check]:
    """Every requirement of `scopes`, in order. A server that cannot be reached raises."""
    wanted = set(scopes)
    backup = "backup" in wanted
    return evaluate(gather(urls, need_template1=backup, need_scratch=backup), urls, wanted)


def evaluate(facts: Facts, urls: DatabaseUrls, scopes: Iterable[Scope] = ALL_SCOPES) -> list[Check]:
    """The requirements of `scopes` judged on gathered facts."""
    wanted = set(scopes)
    checks: list[Check] = []
    if "server" in wanted:
        checks += _server_checks(facts)
    if "migrate" in wanted:
        # A database still to be created gets every migration: its pgvector is a "server"
        # check (template1), the schema is its owner's, and 011 needs the reader role.
        checks += (
            _migrate_checks(facts)
            if facts.app_db_exists
            else [_reader_role_check(facts, "migrate")]
        )
    if "backup" in wanted:
        checks += _backup_checks(facts)
    if "serving" in wanted and facts.app_db_exists:
        checks += _serving_checks(facts, urls.reader, urls.embedded)
    return checks


# --- gathering --------------------------------------------------------------------------------


def gather(urls: DatabaseUrls, *, need_template1: bool = True, need_scratch: bool = True) -> Facts:
    """Read every fact the checks use; a connection failure is a one-line UserError."""
    app_db = urls.app_dbname
    try:
        conn = psycopg.connect(urls.app, autocommit=True, connect_timeout=5)
        app_exists = True
    except psycopg.OperationalError as exc:
        if not is_missing_database(exc):
            raise_unreachable(exc, urls.embedded)
        conn = connect_or_explain(make_conninfo(urls.app, dbname="postgres"), urls.embedded)
        app_exists = False
    with conn:
        facts = _role_and_server(conn, urls, app_db, app_exists)
        if app_exists:
            _database_facts(conn, facts)
            if need_scratch:
                from memory_pipeline.backup.scratch import find_abandoned

                facts.abandoned_scratch = find_abandoned(conn)
    needs_template = not facts.can_create_vector and (need_template1 or not facts.app_db_exists)
    if facts.vector_default and needs_template:
        facts.template1_vector = _template1_has_vector(urls.app)
    return facts


def _role_and_server(
    conn: psycopg.Connection, urls: DatabaseUrls, app_db: str, app_exists: bool
) -> Facts:
    row = conn.execute(
        "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles"
        " WHERE rolname = current_user"
    ).fetchone()
    assert row is not None
    vector = conn.execute(
        "SELECT a.default_version, coalesce(v.trusted, false) FROM pg_available_extensions a"
        " LEFT JOIN pg_available_extension_versions v"
        " ON v.name = a.name AND v.version = a.default_version WHERE a.name = 'vector'"
    ).fetchone()
    dagster_db = urls.dagster_dbname
    dagster_exists = conn.execute(
        "SELECT 1 FROM pg_database WHERE datname = %s", [dagster_db]
    ).fetchone()
    reader = conn.execute("SELECT rolname FROM pg_roles WHERE rolname = 'memory_reader'").fetchone()
    reader_admin = False
    if reader is not None:
        admin = conn.execute("SELECT pg_has_role('memory_reader', 'MEMBER WITH ADMIN OPTION')")
        reader_admin = bool(admin.fetchone()[0])  # type: ignore[index]
    version = conn.info.server_version
    superuser, createrole = bool(row[1]), bool(row[2])
    return Facts(
        role=str(row[0]),
        superuser=superuser,
        createrole=createrole,
        createdb=bool(row[3]),
        server_version=version,
        vector_default=vector[0] if vector else None,
        vector_trusted=bool(vector[1]) if vector else False,
        app_db=app_db,
        app_db_exists=app_exists,
        dagster_db=dagster_db,
        dagster_db_exists=dagster_exists is not None,
        reader_exists=reader is not None,
        # Before 16, CREATEROLE alone may alter any role that is not a superuser; from 16 on it
        # also needs ADMIN OPTION on the role (which the role that created it has).
        reader_admin=superuser or (createrole and (version < 160000 or reader_admin)),
    )


def _database_facts(conn: psycopg.Connection, facts: Facts) -> None:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    facts.vector_installed = row[0] if row else None
    create = conn.execute("SELECT has_schema_privilege('public', 'CREATE')").fetchone()
    facts.public_create = bool(create and create[0])
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if exists and exists[0]:
        rows = conn.execute("SELECT version FROM schema_migrations").fetchall()
        facts.applied = {r[0] for r in rows}
    facts.pending = [m.filename for m in discover() if m.version not in facts.applied]


def _template1_has_vector(app_url: str) -> bool | None:
    """Whether template1 has pgvector; None if this role cannot connect to it."""
    try:
        with psycopg.connect(
            make_conninfo(app_url, dbname="template1"), autocommit=True, connect_timeout=5
        ) as conn:
            row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
            return row is not None
    except psycopg.OperationalError:
        return None


# --- the requirements -------------------------------------------------------------------------


def _admin_runs(sql: str, database: str) -> str:
    return f"an administrator runs once: psql -d {database} -c '{sql}'"


def _server_checks(f: Facts) -> list[Check]:
    major = f.server_version // 10000
    checks = [
        Check(
            "server",
            "server version",
            f.server_version >= MIN_SERVER_VERSION,
            f"PostgreSQL {major}"
            if f.server_version >= MIN_SERVER_VERSION
            else f"PostgreSQL {major} is too old; memory-pipeline needs 15 or newer",
        )
    ]
    if f.vector_default is None:
        checks.append(
            Check(
                "server",
                "pgvector",
                False,
                "pgvector is missing on this PostgreSQL server",
                "install it (https://github.com/pgvector/pgvector#installation) or unset "
                "DATABASE_URL to use the embedded server, which ships it",
            )
        )
        return checks
    new_enough = _version_tuple(f.vector_default) >= MIN_PGVECTOR
    checks.append(
        Check(
            "server",
            "pgvector",
            new_enough,
            f"pgvector {f.vector_default} is installed on the server"
            if new_enough
            else f"pgvector {f.vector_default} is older than 0.8",
            "install pgvector 0.8 or newer on the server, then ALTER EXTENSION vector UPDATE "
            "in each database that has it",
        )
    )
    role = sql_ident(f.role)
    for name, exists in ((f.app_db, f.app_db_exists), (f.dagster_db, f.dagster_db_exists)):
        if exists:
            checks.append(Check("server", f"database {name}", True, "exists"))
        else:
            checks.append(
                Check(
                    "server",
                    f"database {name}",
                    f.createdb or f.superuser,
                    f"database {name} does not exist"
                    + ("; this role creates it" if f.createdb or f.superuser else ""),
                    f"an administrator runs once: CREATE DATABASE {sql_ident(name)} OWNER {role}; "
                    f"(or ALTER ROLE {role} CREATEDB;)",
                )
            )
    if not f.app_db_exists and not f.can_create_vector:
        checks.append(_new_database_vector(f))
    return checks


def _new_database_vector(f: Facts) -> Check:
    ok = bool(f.template1_vector)
    return Check(
        "server",
        f"pgvector in the new database {f.app_db}",
        ok,
        "template1 has pgvector, so the new database gets it"
        if ok
        else f"database {f.app_db} would be created without pgvector, which role {f.role} may "
        "not create (pgvector is not a trusted extension)",
        _admin_runs("CREATE EXTENSION vector", "template1"),
    )


def _migrate_checks(f: Facts) -> list[Check]:
    role = sql_ident(f.role)
    pending = bool(f.pending)
    checks = [
        Check(
            "migrate",
            "migrations",
            True,
            f"{len(f.pending)} pending ({f.pending[0]} first); `memory-pipeline run` or "
            "`db migrate` applies them"
            if f.pending
            else f"schema up to date ({len(f.applied)} applied)",
        )
    ]
    if f.vector_installed:
        checks.append(
            Check(
                "migrate",
                f"pgvector in database {f.app_db}",
                True,
                f"vector {f.vector_installed} is enabled",
            )
        )
    else:
        checks.append(
            Check(
                "migrate",
                f"pgvector in database {f.app_db}",
                f.can_create_vector,
                "migration 001 enables it"
                if f.can_create_vector
                else f"pgvector is not enabled in database {f.app_db}, and role {f.role} may not "
                "enable it (pgvector is not a trusted extension; only a superuser may)",
                _admin_runs("CREATE EXTENSION vector", f.app_db),
                blocking=pending,
            )
        )
    checks.append(
        Check(
            "migrate",
            f"schema public of {f.app_db}",
            f.public_create,
            "this role may create tables in it"
            if f.public_create
            else f"role {f.role} may not create tables in schema public of {f.app_db}",
            f"an administrator runs once in database {f.app_db}: "
            f"GRANT CREATE ON SCHEMA public TO {role}; (or ALTER DATABASE {sql_ident(f.app_db)} "
            f"OWNER TO {role};)",
            blocking=pending,
        )
    )
    if READER_MIGRATION not in f.applied:
        checks.append(_reader_role_check(f, "migrate"))
    return checks


def _reader_role_check(f: Facts, scope: Scope) -> Check:
    role = sql_ident(f.role)
    if not f.reader_exists:
        ok = f.superuser or f.createrole
        return Check(
            scope,
            "role memory_reader",
            ok,
            "migration 011 creates it (CREATEROLE)"
            if ok
            else f"role memory_reader does not exist and role {f.role} may not create roles",
            f"an administrator runs once: ALTER ROLE {role} CREATEROLE;",
            blocking=scope == "migrate",
        )
    return Check(
        scope,
        "role memory_reader",
        f.reader_admin,
        "exists, and this role manages it"
        if f.reader_admin
        else f"role memory_reader exists but role {f.role} may not alter it",
        f"an administrator runs once: ALTER ROLE {role} CREATEROLE; GRANT memory_reader TO "
        f"{role} WITH ADMIN OPTION;",
        blocking=scope == "migrate",
    )


def _backup_checks(f: Facts) -> list[Check]:
    role = sql_ident(f.role)
    checks = [
        Check(
            "backup",
            "CREATEDB",
            f.createdb or f.superuser,
            "this role may create the scratch databases that prove each backup restores"
            if f.createdb or f.superuser
            else f"role {f.role} may not create databases, so no backup can be verified",
            f"an administrator runs once: ALTER ROLE {role} CREATEDB;",
        )
    ]
    if f.can_create_vector:
        detail = "scratch databases are created from template0 and get pgvector from this role"
        ok = True
    elif f.template1_vector:
        detail = "template1 has pgvector, so scratch databases get it"
        ok = True
    elif f.template1_vector is None and f.vector_default:
        detail = f"role {f.role} cannot read template1 to see whether it has pgvector"
        ok = False
    else:
        detail = (
            "template1 lacks pgvector, which role "
            f"{f.role} may not enable in a scratch database (not a trusted extension)"
        )
        ok = False
    checks.append(
        Check(
            "backup",
            "pgvector in scratch databases",
            ok,
            detail,
            _admin_runs("CREATE EXTENSION vector", "template1"),
        )
    )
    from memory_pipeline.backup.scratch import is_staging, left_by

    for name in f.abandoned_scratch or ():
        staging = is_staging(name)
        again = "backup restore" if staging else "backup verify"
        checks.append(
            Check(
                "backup",
                f"{'staging' if staging else 'scratch'} database {name}",
                False,
                f"left by {left_by(name)} whose process was killed; it holds a copy of the data",
                f"`memory-pipeline run` (or the next `memory-pipeline {again}`) drops it; or "
                f"psql -c 'DROP DATABASE {sql_ident(name)}'",
                blocking=False,
                problem="LEFTOVER",
            )
        )
    return checks


def _serving_checks(f: Facts, reader_url: str, embedded: bool) -> list[Check]:
    if READER_MIGRATION not in f.applied:
        return [
            Check(
                "serving",
                "memory_reader login",
                False,
                "migration 011 (the read-only role) is not applied yet",
                "run `memory-pipeline db migrate`",
                blocking=False,
            )
        ]
    checks = [_reader_role_check(f, "serving")]
    try:
        with psycopg.connect(reader_url, connect_timeout=5):
            pass
        checks.append(Check("serving", "memory_reader login", True, "search and MCP can connect"))
    except psycopg.OperationalError as exc:
        failure = classify(exc)
        fix = (
            "run `memory-pipeline db reader-password` (or set MEMORY_READER_URL with its password)"
            if failure.kind == "auth" and not embedded
            else "check MEMORY_READER_URL"
        )
        checks.append(
            Check(
                "serving",
                "memory_reader login",
                False,
                f"memory_reader cannot log in ({failure.detail})",
                fix,
                blocking=False,
            )
        )
    return checks


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)
