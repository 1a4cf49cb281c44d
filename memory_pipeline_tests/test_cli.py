"""The `memory-pipeline` command as a user runs it: real processes, real servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline_tests.conftest import create_database, drop_database

CLI = str(Path(sys.executable).parent / "memory-pipeline")


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300):
    return subprocess.run(
        [CLI, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def fresh_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    yield home
    EmbeddedServer(home / "pgdata").stop()


def test_two_starts_at_once_share_one_server(fresh_home: Path) -> None:
    env = {**os.environ, "MEMORY_HOME": str(fresh_home)}
    procs = [
        subprocess.Popen([CLI, "db", "start"], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    postmasters = subprocess.run(
        ["pgrep", "-f", f"postgres -D {fresh_home / 'pgdata'}"], capture_output=True, text=True
    ).stdout.split()
    assert len(postmasters) == 1
    status = cli("db", "status", env={"MEMORY_HOME": str(fresh_home)})
    assert "state: running" in status.stdout and "pending migrations: none" in status.stdout
    stop = cli("db", "stop", env={"MEMORY_HOME": str(fresh_home)})
    assert stop.returncode == 0 and "stopped" in stop.stderr
    assert "state: stopped" in cli("db", "status", env={"MEMORY_HOME": str(fresh_home)}).stdout


def test_data_directory_owned_by_someone_else(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "pgdata").mkdir(parents=True)
    os.chown(home / "pgdata", 65534, 65534)  # nobody
    result = cli("db", "start", env={"MEMORY_HOME": str(home)})
    assert result.returncode == 2
    assert result.stderr.startswith("error: data directory")
    assert "is owned by nobody" in result.stderr and len(result.stderr.splitlines()) == 1


def test_unreachable_database_url() -> None:
    result = cli("db", "migrate", env={"DATABASE_URL": "postgresql://someone@127.0.0.1:1/x"})
    assert result.returncode == 2
    assert result.stderr.startswith("error: DATABASE_URL is unreachable")
    assert len(result.stderr.splitlines()) == 1


def test_server_without_pgvector(pg_server: EmbeddedServer, admin_url: str) -> None:
    name = create_database(admin_url)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        # A real server configuration in which no extension is installed: PostgreSQL 18 looks
        # for extension control files only where extension_control_path says.
        conn.execute(f"ALTER DATABASE {name} SET extension_control_path = '/nonexistent'")
    try:
        result = cli("db", "migrate", env={"DATABASE_URL": pg_server.uri(name)})
        assert result.returncode == 2
        assert result.stderr.startswith("error: pgvector is missing")
        assert len(result.stderr.splitlines()) == 1
    finally:
        drop_database(admin_url, name)
        drop_database(admin_url, f"{name}_dagster")


def test_ui_refuses_a_port_in_use() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = cli("ui", "--port", str(port))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: port {port} on 127.0.0.1 is in use")
