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
    READER_ROLE,
    DatabaseUrls,
    build_url,
    connect_or_explain,
    sql_ident,
)
from memory_pipeline.db.reader import write_reader_url
from memory_pipeline.errors import UserError

PASSWORD_BYTES = 32  # 43 URL-safe characters


def set_reader_password(urls: DatabaseUrls, memory_home: Path) -> tuple[str, Path]:
    """Set a new generated password for memory_reader; store and return its URL (and file)."""
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    with connect_or_explain(urls.app, urls.embedded) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [READER_ROLE]).fetchone():
            raise UserError(
                "role memory_reader does not exist yet; run `memory-pipeline db migrate` first "
                "(migration 011 creates it)"
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
