"""A dream run whose process was killed mid-way is marked failed at the next start: the next
dream run (the CLI's, or the Dagster asset's: both run `run_dream_cycle`), `dream list`, and
`memory-pipeline run` / `ui` (runs.clear_interrupted_work). A real process is SIGKILLed while its
Thinker waits for the (fake) model; nothing of its work was stored."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline.dream.store import CYCLE_LOCK
from memory_pipeline.runs import clear_interrupted_work
from memory_pipeline.settings import Settings
from memory_pipeline_tests.conftest import drop_database
from memory_pipeline_tests.dream.helpers import reversed_decisions, run
from memory_pipeline_tests.support.fake_ollama import (
    DEFAULT_CHAT_MODEL,
    Delay,
    FakeOllama,
    running_fake_ollama,
)
from memory_pipeline_tests.support.pipeline_home import wait_until

CLI = str(Path(sys.executable).parent / "memory-pipeline")


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with running_fake_ollama() as fake:
        yield fake


@pytest.fixture
def env(db_url: str, tmp_path: Path, admin_url: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    values = {
        "DATABASE_URL": db_url,
        "MEMORY_HOME": str(tmp_path / "home"),
        "MEMORY_SOURCES": "real",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    for key in ("MEMORY_DREAM_MODEL", "MEMORY_SEMANTIC_MODEL", "DAGSTER_HOME"):
        monkeypatch.delenv(key, raising=False)
    yield dict(os.environ)
    drop_database(admin_url, f"{conninfo_to_dict(db_url)['dbname']}_dagster")


def lock_free(db_url: str) -> bool:
    with psycopg.connect(db_url, autocommit=True) as other:
        got = other.execute("SELECT pg_try_advisory_lock(%s)", (CYCLE_LOCK,)).fetchone()
        if got and got[0]:
            other.execute("SELECT pg_advisory_unlock(%s)", (CYCLE_LOCK,))
            return True
    return False


def killed_dream_run(
    conn: psycopg.Connection, db_url: str, ollama: FakeOllama, env: dict[str, str], tmp: Path
) -> str:
    """`memory-pipeline dream run` SIGKILLed while its Thinker waits for the model."""
    reversed_decisions(conn)
    ollama.script_chat(Delay(600))
    child_env = {**env, "MEMORY_DREAM_MODEL": DEFAULT_CHAT_MODEL, "OLLAMA_HOST": ollama.host}
    with open(tmp / "dream.log", "wb") as log:
        proc = subprocess.Popen(
            [CLI, "dream", "run"],
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(lambda: ollama.chat_requests, 120, "the dream run to ask the model")
        (run_id, status) = conn.execute("SELECT id::text, status FROM dream_cycle_runs").fetchone()  # type: ignore[misc]
        assert status == "running"
        assert not lock_free(db_url)  # the cycle holds its lock while it runs
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # The server ends the dead client's session, and with it the cycle's lock.
    wait_until(lambda: lock_free(db_url), 30, "the killed run's session to end")
    return run_id


def row(conn: psycopg.Connection, run_id: str) -> tuple[str, str]:
    return conn.execute(  # type: ignore[return-value]
        "SELECT status, error FROM dream_cycle_runs WHERE id = %s", [run_id]
    ).fetchone()


def test_a_killed_dream_run_is_marked_failed_at_the_next_start(  # type: ignore[no-untyped-def]
    conn, db_url, ollama, env, tmp_path
) -> None:
    run_id = killed_dream_run(conn, db_url, ollama, env, tmp_path)
    # Nothing of its work was stored: the run stores everything in one transaction.
    assert conn.execute("SELECT count(*) FROM dream_cycle_candidates").fetchone() == (0,)

    report = run(conn, tmp_path)  # the next run: what the Dagster asset and `dream run` call
    assert report.interrupted_runs == [run_id]
    status, error = row(conn, run_id)
    assert status == "failed" and error.startswith("interrupted") and "\n" not in error
    assert row(conn, report.run_id)[0] == "completed" and report.superseded == 1

    listed = CliRunner().invoke(app, ["dream", "list"], catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    (line,) = [ln for ln in listed.output.splitlines() if ln.startswith(run_id[:8])]
    assert " failed " in line and "interrupted" in line, listed.output


def test_dream_list_marks_a_dead_run_failed(conn, db_url, env) -> None:  # type: ignore[no-untyped-def]
    """`dream list` is a start too: a run left `running` while nobody holds the cycle's lock
    (its session ended with its process) is shown failed, with one line saying so."""
    conn.execute("INSERT INTO dream_cycle_runs (run_type, status) VALUES ('scheduled', 'running')")
    listed = CliRunner().invoke(app, ["dream", "list"], catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    assert "was left running by a process that ended: marked failed" in listed.output
    (line,) = [ln for ln in listed.output.splitlines() if "scheduled" in ln]
    assert " failed " in line and "failed: interrupted" in line, listed.output


def test_memory_pipeline_run_marks_a_dead_run_failed(conn, db_url, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What `run` and `ui` call before they start anything; a run still in progress (its
    session holds the cycle's lock) is left alone."""
    with psycopg.connect(db_url, autocommit=True) as live:
        live.execute("SELECT pg_advisory_lock(%s)", (CYCLE_LOCK,))
        live.execute(
            "INSERT INTO dream_cycle_runs (run_type, status) VALUES ('scheduled', 'running')"
        )
        said: list[str] = []
        assert clear_interrupted_work(Settings.from_env(), db_url, said.append) == []
        assert conn.execute("SELECT status FROM dream_cycle_runs").fetchone() == ("running",)
        pid = live.info.backend_pid
    # Its process died (the session ended): the next start fails it, with one line. The server
    # drops the session's locks when its backend exits, a moment after the client closed.
    gone = "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s"
    wait_until(lambda: conn.execute(gone, [pid]).fetchone()[0], 30, "the session's backend to exit")
    cleared = clear_interrupted_work(Settings.from_env(), db_url, said.append)
    assert len(cleared) == 1 and conn.execute("SELECT status FROM dream_cycle_runs").fetchone() == (
        "failed",
    )
    assert len(said) == 1 and "dream run" in said[0] and "marked failed" in said[0]
