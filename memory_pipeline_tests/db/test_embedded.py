"""The embedded server's life cycle beyond start and stop."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from memory_pipeline.db.embedded import SERVER_USER_WHEN_ROOT, EmbeddedServer


def test_a_server_left_on_a_deleted_data_directory_is_replaced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first = EmbeddedServer(home / "pgdata").start()
    shutil.rmtree(home)  # the user deleted MEMORY_HOME while the server ran
    home.mkdir()
    server = EmbeddedServer(home / "pgdata")
    try:
        second = server.start()
        assert second.pid != first.pid and not psutil.pid_exists(first.pid or -1)
        with psycopg.connect(server.uri("postgres")) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


# --- an interrupted first start (issue 10, finding 5) ---------------------------------------

CLI = str(Path(sys.executable).parent / "memory-pipeline")


def db_command(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORY_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [CLI, "db", *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )


def owned_by_the_server_user(path: Path) -> None:
    """As the server would own it (as root, the server runs as `embedded_postgres`, and every
    ancestor lets it through)."""
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER_WHEN_ROOT)
        for p in [path, *path.rglob("*")]:
            os.chown(p, entry.pw_uid, entry.pw_gid)
        for parent in path.parents:
            parent.chmod(parent.stat().st_mode | stat.S_IXOTH)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    yield home
    if (home / "pgdata" / "global" / "pg_control").exists():
        EmbeddedServer(home / "pgdata").stop()


def test_a_first_start_killed_during_initdb_is_redone(home: Path) -> None:
    env = {**os.environ, "MEMORY_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    first = subprocess.Popen(
        [CLI, "db", "start"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not list(home.glob("*/PG_VERSION")) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(first.pid, signal.SIGKILL)  # the CLI, initdb and what initdb runs
    first.wait()
    assert not (home / "pgdata" / "postmaster.pid").exists()  # killed before any server ran

    again = db_command(home, "start")
    assert again.returncode == 0, again.stderr
    with psycopg.connect(EmbeddedServer(home / "pgdata").uri("memory")) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert not list(home.glob(".pgdata-init-*"))  # the unfinished init was removed


def test_a_half_made_data_directory_that_never_ran_is_rebuilt(home: Path) -> None:
    """The state an older version left: PG_VERSION written, initdb killed before pg_control."""
    pgdata = home / "pgdata"
    pgdata.mkdir(mode=0o700)
    (pgdata / "PG_VERSION").write_text("18\n")
    owned_by_the_server_user(pgdata)

    started = db_command(home, "start")
    assert started.returncode == 0, started.stderr
    assert (pgdata / "global" / "pg_control").exists()
    assert "state: running" in db_command(home, "status").stdout


def test_a_damaged_data_directory_that_holds_data_is_never_rebuilt(home: Path) -> None:
    server = EmbeddedServer(home / "pgdata")
    server.start()
    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        conn.execute("CREATE DATABASE precious")
    server.stop()
    (home / "pgdata" / "global" / "pg_control").unlink()  # a disk error, a bad copy
    before = sorted(p.name for p in (home / "pgdata" / "base").iterdir())

    result = db_command(home, "start")
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"error: data directory {home / 'pgdata'} is damaged (missing global/pg_control) and "
        "holds data"
    )
    assert len(result.stderr.splitlines()) == 1
    assert sorted(p.name for p in (home / "pgdata" / "base").iterdir()) == before
