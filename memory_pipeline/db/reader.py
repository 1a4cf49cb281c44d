"""The stored connection URLs of the read-only role `memory_reader` (`MEMORY_HOME/reader-url`).

On a server of yours, `memory_reader` needs a password (the embedded server trusts its own Unix
socket). `memory-pipeline db reader-password` sets one and stores the resulting URL here, mode
0600, so search, context and MCP find it without `MEMORY_READER_URL` in every agent's
configuration. The environment variable still wins.

The file holds one URL per line, one line per database (server and database name): a call for
another database adds its line instead of overwriting the first one's. memory_reader is one role
per server, so a new password also goes into the lines of that server's other databases. A URL
is used only while `DATABASE_URL` points at its database: switching servers never sends a
password elsewhere. The format before issue 31 (a single URL) is the one-line case of this one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.errors import UserError

READER_URL_FILE = "reader-url"
_SAME_SERVER = ("host", "hostaddr", "port")
_SAME_DATABASE = (*_SAME_SERVER, "dbname")
_DEFAULTS = {"host": "localhost", "port": "5432"}


def reader_url_path(memory_home: Path) -> Path:
    return memory_home / READER_URL_FILE


def _params(url: str) -> dict[str, str] | None:
    try:
        return {k: str(v) for k, v in conninfo_to_dict(url).items()}
    except psycopg.ProgrammingError:
        return None


def _lines(text: str) -> list[tuple[int, str]]:
    """(line number, URL) of every line that holds something (blank and # lines skipped)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            out.append((number, line))
    return out


def stored_reader_url(memory_home: Path, app_params: dict[str, str]) -> str | None:
    """The stored reader URL for the database of `app_params`, else None."""
    path = reader_url_path(memory_home)
    if not path.exists() and not path.is_symlink():
        return None
    for number, url in _lines(_read_private(path)):
        params = _params(url)
        if params is None:
            raise UserError(
                f"{path} line {number} does not hold a connection URL; remove the line or run "
                "`memory-pipeline db reader-password` to write it again"
            )
        if same_database(params, app_params):
            return url
    return None


def _same(keys: tuple[str, ...], a: dict[str, str], b: dict[str, str]) -> bool:
    return all(a.get(k, _DEFAULTS.get(k)) == b.get(k, _DEFAULTS.get(k)) for k in keys)


def same_database(a: dict[str, str], b: dict[str, str]) -> bool:
    return _same(_SAME_DATABASE, a, b)


def _with_password(url: str, params: dict[str, str], password: str) -> str:
    from memory_pipeline.db.connection import build_url  # connection imports this module

    return build_url({**params, "password": password})


def merged_urls(old: str, url: str) -> list[str]:
    """The lines of a reader-url file holding `old` once `url` is stored: `url` in place of its
    database's line (or last), the other databases' lines kept, those of the same server and
    role given its password (one role per server has one password). Unreadable lines go."""
    new = _params(url) or {}
    lines: list[str] = []
    placed = False
    for _, line in _lines(old):
        params = _params(line)
        if params is None:
            continue
        if same_database(params, new):
            if not placed:
                lines.append(url)
                placed = True
            continue
        if (
            _same(_SAME_SERVER, params, new)
            and params.get("user") == new.get("user")
            and "password" in new
        ):
            line = _with_password(line, params, new["password"])
        lines.append(line)
    if not placed:
        lines.append(url)
    return lines


def write_reader_url(memory_home: Path, url: str) -> Path:
    """Store `url` for its database (the other databases' URLs kept), atomically with mode 0600
    (never readable by others, even for a moment)."""
    memory_home.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = reader_url_path(memory_home)
    lines = merged_urls(_read_for_update(path), url)
    tmp = path.with_name(f".{READER_URL_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write("".join(line + "\n" for line in lines))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _read_for_update(path: Path) -> str:
    """The current file's text, or "" when there is none we may keep (missing, a symlink, not
    ours: the write replaces it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, errors="replace") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return ""
        return fh.read()


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
