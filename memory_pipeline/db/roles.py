"""Giving the read-only role `memory_reader` a password on a server that needs one.

The password is generated here and sent to the server only as a SCRAM verifier (libpq's
PQencryptPasswordConn), so it never appears in the server's statement log. The resulting URL is
stored 0600 under MEMORY_HOME (db/reader.py), where serving finds it.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.db.connection import (
    CONNECT_TIMEOUT_S,
    READER_ROLE,
    DatabaseUrls,
    build_url,
    is_missing_database,
    raise_unreachable,
    sql_ident,
)
from memory_pipeline.db.migrate import applied_checksums
from memory_pipeline.db.reader import write_reader_url
from memory_pipeline.errors import UserError

PASSWORD_BYTES = 32  # 43 URL-safe characters
READER_MIGRATION = "011"  # sql/011_reader_role.sql creates memory_reader and its grants
RUN_FIRST = (
    "run `memory-pipeline run` (or `memory-pipeline db migrate`) first, then "
    "`memory-pipeline db reader-password`"
)


def set_reader_password(urls: DatabaseUrls, memory_home: Path) -> tuple[str, Path]:
    """Set a new generated password for memory_reader; store and return its URL (and file)."""
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    dbname = conninfo_to_dict(urls.app).get("dbname")
    try:
        conn = psycopg.connect(urls.app, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except psycopg.OperationalError as exc:
        if is_missing_database(exc):
            raise UserError(f"database {dbname} does not exist yet; {RUN_FIRST}") from None
        raise_unreachable(exc, urls.embedded)  # its one-line reason
        raise
    with conn:
        found = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER_ROLE]).fetchone()
        if not found or READER_MIGRATION not in applied_checksums(conn):
            raise UserError(
                f"database {dbname} is not set up yet (memory_reader and its grants come with "
                f"its migrations); {RUN_FIRST}"
            )
        verifier = conn.pgconn.encrypt_password(password.encode(), READER_ROLE.encode())
        try:
            conn.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(READER_ROLE), sql.Literal(verifier.decode())
                )
            )
        except psycopg.errors.InsufficientPrivilege as exc:
            role = sql_ident(conn.info.user)
            raise UserError(
                f"role {conn.info.user} may not change memory_reader's password; an "
                f"administrator runs once: ALTER ROLE {role} CREATEROLE; GRANT memory_reader TO "
                f"{role} WITH ADMIN OPTION; (then run this again)"
            ) from exc
    params = {k: str(v) for k, v in conninfo_to_dict(urls.app).items()}
    params.update(user=READER_ROLE, password=password)
    url = build_url(params)
    return url, write_reader_url(memory_home, url)
