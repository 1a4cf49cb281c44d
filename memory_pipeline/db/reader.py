"""The stored connection URL of the read-only role `memory_reader` (`MEMORY_HOME/reader-url`).

On a server of yours, `memory_reader` needs a password (the embedded server trusts its own Unix
socket). `memory-pipeline db reader-password` sets one and stores the resulting URL here, mode
0600, so search, context and MCP find it without `MEMORY_READER_URL` in every agent's
configuration. The environment variable still wins. The file names its server and database, and
is used only while `DATABASE_URL` points at that same database: switching servers never sends
this password elsewhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.errors import UserError

READER_URL_FILE = "reader-url"
_SAME_DATABASE = ("host", "hostaddr", "port", "dbname")
_DEFAULTS = {"host": "localhost", "port": "5432"}


def reader_url_path(memory_home: Path) -> Path:
    return memory_home / READER_URL_FILE


def stored_reader_url(memory_home: Path, app_params: dict[str, str]) -> str | None:
    """The stored reader URL if there is one for the database of `app_params`, else None."""
    path = reader_url_path(memory_home)
    if not path.exists() and not path.is_symlink():
        return None
    url = _read_private(path)
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(url).items()}
    except psycopg.ProgrammingError:
        raise UserError(
            f"{path} does not hold a connection URL; run `memory-pipeline db reader-password` "
            "to write it again"
        ) from None
    return url if same_database(params, app_params) else None


def same_database(a: dict[str, str], b: dict[str, str]) -> bool:
    return all(a.get(k, _DEFAULTS.get(k)) == b.get(k, _DEFAULTS.get(k)) for k in _SAME_DATABASE)


def write_reader_url(memory_home: Path, url: str) -> Path:
    """Store `url` atomically with mode 0600 (never readable by others, even for a moment)."""
    memory_home.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = reader_url_path(memory_home)
    tmp = path.with_name(f".{READER_URL_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(url + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _read_private(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise UserError(
            f"cannot read {path}: {exc.strerror}; remove it and run "
            "`memory-pipeline db reader-password`"
        ) from exc
    with os.fdopen(fd) as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise UserError(
                f"{path} is not a regular file of yours; remove it and run "
                "`memory-pipeline db reader-password`"
            )
        if info.st_mode & 0o077:
            raise UserError(
                f"{path} holds a password and is accessible to group or others (mode "
                f"{stat.S_IMODE(info.st_mode):o}); run `chmod 600 {path}`"
            )
        return fh.read().strip()
