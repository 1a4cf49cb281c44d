"""The PostgreSQL client programs backups run: which pg_dump and pg_restore, and how to call them.

Which pair, for a server of major version S (tools of major T, a backup written by pg_dump A):
  - pg_dump dumps its own major version and older servers only: T >= S.
  - pg_restore 17 and newer start every restore with `SET transaction_timeout = 0`, a setting
    servers before 17 do not have, so restoring into a 15 or 16 server needs T < 17 (checked
    with pg_restore 18.6 against a PostgreSQL 15.18 server).
  - pg_restore reads archives of its own major version and older only: T >= A for every backup
    it must verify or restore.
So a 15 or 16 server needs its own major's client programs, while 17, 18 and newer take the same
or any newer version. The candidates are MEMORY_PG_DUMP alone when it is set (pg_restore taken
from the same directory), else the bundled PostgreSQL 18 programs and the client programs of any
PostgreSQL installed in the usual places (Debian/Ubuntu, RHEL, Homebrew). The chosen pair is the
server's own major when present, else the oldest newer one, preferring a pair that reads every
backup in the directory. Nothing fits: a one-line error says what to install or set, before any
backup starts.

Passwords never appear on a command line (where `ps` shows them): they go to the child through
PGPASSWORD. The backup key is removed from every child's environment.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory_pipeline.backup.crypto import KEY_ENV_VAR, BackupCryptoError, BackupKey
from memory_pipeline.backup.layout import list_backups
from memory_pipeline.db.embedded import bin_dir
from memory_pipeline.errors import UserError

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")
_CONNECT_TIMEOUT_S = "10"
_STDERR_TAIL_CHARS = 400
# pg_restore from this major on sets transaction_timeout, unknown to older servers.
TRANSACTION_TIMEOUT_MAJOR = 17
# Where PostgreSQL packages put their client programs, one directory per major version.
SYSTEM_TOOL_DIRS = (
    "/usr/lib/postgresql/*/bin",  # Debian, Ubuntu (postgresql-client-N)
    "/usr/pgsql-*/bin",  # RHEL, Fedora (PGDG postgresqlN)
    "/opt/homebrew/opt/postgresql@*/bin",  # Homebrew on Apple silicon
    "/usr/local/opt/postgresql@*/bin",  # Homebrew on Intel
)


@dataclass(frozen=True)
class PgTools:
    pg_dump: Path
    pg_restore: Path
    major: int
    version: str  # e.g. "18.6"
    source: str = "bundled"  # "bundled", "MEMORY_PG_DUMP" or the directory found

    def describe(self) -> str:
        return f"pg_dump/pg_restore {self.version} ({self.source})"


def pg_tools(custom_pg_dump: Path | None) -> PgTools:
    """MEMORY_PG_DUMP's pair when given, else the bundled pair; checked to exist and run."""
    if custom_pg_dump is not None:
        pg_dump = custom_pg_dump
        if not (pg_dump.is_file() and os.access(pg_dump, os.X_OK)):
            raise UserError(
                f"MEMORY_PG_DUMP={pg_dump} is not an executable file; point it at the pg_dump of"
                " your server's major version, or unset it to pick one automatically"
            )
        pg_restore = pg_dump.with_name("pg_restore")
        if not (pg_restore.is_file() and os.access(pg_restore, os.X_OK)):
            raise UserError(
                f"no executable pg_restore next to MEMORY_PG_DUMP ({pg_restore}); restores need"
                " the pg_restore of the same PostgreSQL installation"
            )
        return read_tools(pg_dump, pg_restore, "MEMORY_PG_DUMP")
    return read_tools(bin_dir() / "pg_dump", bin_dir() / "pg_restore", "bundled")


def read_tools(pg_dump: Path, pg_restore: Path, source: str) -> PgTools:
    """The pair's version, from `pg_dump --version`."""
    try:
        out = subprocess.run(
            [str(pg_dump), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"cannot run {pg_dump}: {exc}") from exc
    major, version = parse_version(out, str(pg_dump))
    return PgTools(pg_dump, pg_restore, major, version, source)


def parse_version(text: str, program: str = "pg_dump") -> tuple[int, str]:
    """(major, "major.minor") from `pg_dump --version` output, e.g. "pg_dump (PostgreSQL) 15.4"."""
    match = _VERSION.search(text)
    if not match:
        raise UserError(f"{program} --version printed {text.strip()!r}, not a PostgreSQL version")
    major = int(match.group(1))
    return major, f"{major}.{match.group(2)}" if match.group(2) else str(major)


def candidate_tools(custom_pg_dump: Path | None) -> list[PgTools]:
    """MEMORY_PG_DUMP's pair alone when set; else the bundled pair and every installed one."""
    if custom_pg_dump is not None:
        return [pg_tools(custom_pg_dump)]
    found = [pg_tools(None)]
    for pattern in SYSTEM_TOOL_DIRS:
        for directory in sorted(glob.glob(pattern)):
            dump, restore = Path(directory) / "pg_dump", Path(directory) / "pg_restore"
            if not all(p.is_file() and os.access(p, os.X_OK) for p in (dump, restore)):
                continue
            try:
                found.append(read_tools(dump, restore, directory))
            except UserError:
                continue  # a broken installation is not a candidate
    return found


def dumps(tools_major: int, server_major: int) -> bool:
    return tools_major >= server_major


def restores_into(tools_major: int, server_major: int) -> bool:
    return server_major >= TRANSACTION_TIMEOUT_MAJOR or tools_major < TRANSACTION_TIMEOUT_MAJOR


def reads(tools_major: int, archive_major: int) -> bool:
    return tools_major >= archive_major


def select_tools(
    candidates: list[PgTools],
    server_major: int,
    archive_majors: Iterable[int] = (),
    *,
    custom: bool = False,
) -> PgTools:
    """The pair for a server of `server_major` that reads archives of `archive_majors` if any can.

    Raises a one-line UserError when no candidate can both dump and restore this server.
    """
    archives = set(archive_majors)
    usable = [
        t
        for t in candidates
        if dumps(t.major, server_major) and restores_into(t.major, server_major)
    ]
    if not usable:
        raise UserError(tools_advice(candidates, server_major, custom=custom))
    readers = [t for t in usable if all(reads(t.major, a) for a in archives)]
    pool = readers or usable
    return min(pool, key=lambda t: (t.major != server_major, t.major, t.source != "bundled"))


def wanted_majors(server_major: int) -> str:
    """The client majors that fit a server, in words."""
    if server_major >= TRANSACTION_TIMEOUT_MAJOR:
        return f"{server_major} or newer"
    newest = TRANSACTION_TIMEOUT_MAJOR - 1
    return str(server_major) if server_major == newest else f"{server_major} to {newest}"


def tools_advice(candidates: list[PgTools], server_major: int, *, custom: bool = False) -> str:
    """What to install or set when no candidate fits a server of `server_major`."""
    found = ", ".join(sorted({f"{t.major} ({t.source})" for t in candidates})) or "none"
    if custom:
        tool = candidates[0]
        if not dumps(tool.major, server_major):
            why = "and pg_dump cannot dump a newer server"
        else:
            why = (
                f"and pg_restore {tool.major} cannot restore into a server older than "
                f"{TRANSACTION_TIMEOUT_MAJOR} (it sets transaction_timeout)"
            )
        return (
            f"the PostgreSQL server is version {server_major} but {tool.pg_dump} is version "
            f"{tool.major}, {why}: set MEMORY_PG_DUMP to a pg_dump {wanted_majors(server_major)}"
            " (pg_restore is taken from the same directory)"
        )
    install = (
        f"install PostgreSQL {server_major}'s client programs (Debian/Ubuntu: apt install "
        f"postgresql-client-{server_major}; RHEL: dnf install postgresql{server_major}; macOS: "
        f"brew install postgresql@{server_major}), which are then found, or set MEMORY_PG_DUMP "
        f"to that pg_dump"
    )
    if server_major < TRANSACTION_TIMEOUT_MAJOR:
        why = (
            f"pg_restore {TRANSACTION_TIMEOUT_MAJOR} and newer cannot restore into it (they set "
            "transaction_timeout) and older pg_dump cannot dump it"
        )
    else:
        why = "pg_dump cannot dump a server newer than itself"
    return (
        f"the PostgreSQL server is version {server_major}, which needs pg_dump/pg_restore "
        f"{wanted_majors(server_major)} ({why}); found: {found}; {install}"
    )


def check_server_version(tools: PgTools, server_version: int) -> None:
    """Refuse a server these tools cannot dump and restore (before pg_dump says it less clearly)."""
    server_major = server_version // 10000
    if not (dumps(tools.major, server_major) and restores_into(tools.major, server_major)):
        raise UserError(tools_advice([tools], server_major, custom=True))


def archive_major(pg_dump_version: str) -> int:
    """The major version of the pg_dump that wrote a backup ("18.6" -> 18)."""
    return int(pg_dump_version.split(".", 1)[0])


def unreadable_note(tools: PgTools, backup_id: str, archive: int, server_major: int) -> str:
    """Why `tools` cannot restore a backup written by pg_dump `archive`, and what can."""
    if archive >= TRANSACTION_TIMEOUT_MAJOR and server_major < TRANSACTION_TIMEOUT_MAJOR:
        where = (
            f"no pg_restore can put it into this PostgreSQL {server_major} server (pg_restore "
            f"{archive} sets transaction_timeout); restore it into a PostgreSQL "
            f"{TRANSACTION_TIMEOUT_MAJOR}+ server, with MEMORY_PG_DUMP pointing at pg_dump "
            f"{archive} or newer"
        )
    else:
        where = f"set MEMORY_PG_DUMP to a pg_dump {archive} or newer (pg_restore beside it)"
    return (
        f"backup {backup_id} was written by pg_dump {archive}, which {tools.describe()} cannot "
        f"read; {where}"
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


def backup_archive_majors(backup_dir: Path, key: BackupKey) -> dict[str, int]:
    """backup id -> major version of the pg_dump that wrote it, for every readable backup.

    Backups whose manifest does not open (another key, damage) are left out: they are reported
    where they are read, not here.
    """
    try:
        infos = list_backups(backup_dir, key)
    except (BackupCryptoError, UserError, OSError):
        return {}
    return {
        i.id: archive_major(i.manifest.pg_dump_version) for i in infos if i.manifest is not None
    }


def choose_tools(
    custom_pg_dump: Path | None, server_version: int, archive_majors: Iterable[int] = ()
) -> PgTools:
    """The pair for this server (see the module docstring), or a one-line UserError."""
    return select_tools(
        candidate_tools(custom_pg_dump),
        server_version // 10000,
        archive_majors,
        custom=custom_pg_dump is not None,
    )


def tools_check(
    custom_pg_dump: Path | None, server_version: int, archives: dict[str, int]
) -> tuple[bool, str]:
    """(ok, one line) for `memory-pipeline db check`: the pair chosen, or what to install."""
    server_major = server_version // 10000
    try:
        tools = choose_tools(custom_pg_dump, server_version, archives.values())
    except UserError as exc:
        return False, f"{'MISSING':<8} dump tools: {exc}"
    unreadable = sorted(b for b, a in archives.items() if not reads(tools.major, a))
    line = f"{'ok':<8} dump tools: {tools.describe()} for PostgreSQL {server_major}"
    if unreadable:
        note = unreadable_note(tools, unreadable[0], archives[unreadable[0]], server_major)
        line += f"; {len(unreadable)} older backup(s) cannot be verified here: {note}"
    return True, line
