"""The embedded server's life cycle beyond start and stop."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import psycopg

from memory_pipeline.db.embedded import EmbeddedServer


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
