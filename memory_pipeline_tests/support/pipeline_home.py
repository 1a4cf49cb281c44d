"""A user's setup for end-to-end tests of `memory-pipeline run` and `ui` as real processes.

One Codex task (six turns, started 2026-09-24) in a CODEX_HOME of its own, a MEMORY_HOME of its
own, and a database of its own on the session's server (DATABASE_URL, so no second PostgreSQL
is started; Dagster's instance goes to `<db>_dagster` beside it). The semantic pass runs at once
(quiet period 0). `env(model=True)` adds a (fake) Ollama model, so a test can hold a run inside
its semantic pass for as long as it likes.

Helpers read Dagster's state the way an operator would: the `runs`, `concurrency_slots` and
`pending_steps` tables of the instance database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil
import psycopg
import pytest

from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline_tests.capture.test_capture_assets import RENAMED, codex_home
from memory_pipeline_tests.conftest import create_database, drop_database
from memory_pipeline_tests.support.fake_ollama import (
    DEFAULT_CHAT_MODEL,
    FakeOllama,
    running_fake_ollama,
)

CLI = str(Path(sys.executable).parent / "memory-pipeline")


@dataclass
class PipelineHome:
    root: Path
    codex: Path
    app_url: str
    dagster_url: str
    transcript: Path
    ollama: FakeOllama
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[IO[bytes]] = field(default_factory=list)

    def env(self, model: bool = False) -> dict[str, str]:
        env = {
            **os.environ,
            "MEMORY_HOME": str(self.root / "home"),
            "DATABASE_URL": self.app_url,
            "MEMORY_SOURCES": "real",
            "CODEX_HOME": str(self.codex),
            "CLAUDE_CONFIG_DIR": str(self.root / "no-claude"),
            "MEMORY_IMPORT_DIR": str(self.root / "imports"),
            "MEMORY_SEMANTIC_QUIET_MINUTES": "0",
            "OLLAMA_HOST": self.ollama.host,
        }
        for key in ("DAGSTER_HOME", "DAGSTER_PG_URL", "MEMORY_SEMANTIC_MODEL"):
            env.pop(key, None)
        if model:
            env["MEMORY_SEMANTIC_MODEL"] = DEFAULT_CHAT_MODEL
        return env

    def start(self, args: list[str], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
        """Start a command in its own session, output to `<root>/<name>.log`."""
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 - closed by the fixture
        proc = subprocess.Popen(
            args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.procs.append(proc)
        self.logs.append(log)
        return proc

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    # --- Dagster's state -------------------------------------------------------------------

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            with psycopg.connect(self.dagster_url) as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.errors.UndefinedTable:  # before Dagster created its schema
            return []
        except psycopg.OperationalError:  # before the database exists
            return []

    def runs(self) -> dict[str, str]:
        """run id -> status, oldest first."""
        rows = self.query("SELECT run_id, status FROM runs ORDER BY create_timestamp")
        return dict(rows)  # type: ignore[arg-type]

    def llm_slot_holders(self) -> set[str]:
        rows = self.query(
            "SELECT run_id FROM concurrency_slots WHERE concurrency_key = 'llm'"
            " AND run_id IS NOT NULL"
        )
        return {r[0] for r in rows}

    def runs_waiting_for_llm(self) -> set[str]:
        rows = self.query(
            "SELECT run_id FROM pending_steps WHERE concurrency_key = 'llm'"
            " AND assigned_timestamp IS NULL"
        )
        return {r[0] for r in rows}

    def sensor_runs(self, sensor: str, tag: str = "dagster/sensor_name") -> dict[str, str]:
        """Runs the sensor requested (not their retries, which carry the same tags); with
        tag="dagster/schedule_name", the runs a schedule of that name requested."""
        rows = self.query(
            "SELECT r.run_id, r.status FROM runs r JOIN run_tags t ON t.run_id = r.run_id"
            " WHERE t.key = %s AND t.value = %s AND NOT EXISTS ("
            "  SELECT 1 FROM run_tags p WHERE p.run_id = r.run_id"
            "  AND p.key = 'dagster/parent_run_id')"
            " ORDER BY r.create_timestamp",
            (tag, sensor),
        )
        return dict(rows)  # type: ignore[arg-type]

    def last_ticks(self, limit: int = 8) -> list[str]:
        """The daemon's newest sensor and schedule ticks, each with its skip reason or error (for
        a failing test's message: what the daemon decided)."""
        rows = self.query(
            "SELECT timestamp, status, tick_body FROM job_ticks ORDER BY id DESC LIMIT %s",
            (limit,),
        )
        lines = []
        for at, status, body in rows:
            try:
                data = json.loads(body)
                name = data.get("instigator_name", "")
                why = data.get("skip_reason") or (data.get("error") or {}).get("message", "")
            except (TypeError, ValueError, AttributeError):
                name, why = "", str(body)
            lines.append(f"{at} {name} {status} {str(why)[:200]}")
        return lines

    def retries_of(self, run_id: str) -> dict[str, str]:
        """Retries of a run (run id -> status)."""
        rows = self.query(
            "SELECT r.run_id, r.status FROM runs r JOIN run_tags t ON t.run_id = r.run_id"
            " WHERE t.key = 'dagster/parent_run_id' AND t.value = %s",
            (run_id,),
        )
        return dict(rows)  # type: ignore[arg-type]

    # --- our database ----------------------------------------------------------------------

    def tasks_and_pending_passes(self) -> tuple[int, int]:
        with psycopg.connect(self.app_url) as conn:
            row = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE coalesce(c.last_ordinal, -1)"
                " < t.turn_count - 1) FROM captured_tasks t"
                " LEFT JOIN semantic_cursors c ON c.task_id = t.id"
            ).fetchone()
        assert row is not None
        return row[0], row[1]


def wait_until(check: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll `check` until it returns something truthy; the timeout only guards against a hang."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def cpu_share(pid: int, seconds: float) -> float:
    """Share of one core the process (and its children) used over `seconds`."""
    proc = psutil.Process(pid)

    def used() -> float:
        total = 0.0
        for p in [proc, *proc.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    before, start = used(), time.monotonic()
    time.sleep(seconds)
    return (used() - before) / (time.monotonic() - start)


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process and everything below it (its children may live in other sessions)."""
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()


@pytest.fixture
def pipeline_home(
    tmp_path: Path, pg_server: EmbeddedServer, admin_url: str
) -> Iterator[PipelineHome]:
    name = create_database(admin_url)
    codex = codex_home(tmp_path, RENAMED)
    (transcript,) = codex.glob("sessions/**/*.jsonl")
    with running_fake_ollama() as fake:
        home = PipelineHome(
            root=tmp_path,
            codex=codex,
            app_url=pg_server.uri(name),
            dagster_url=pg_server.uri(f"{name}_dagster"),
            transcript=transcript,
            ollama=fake,
        )
        try:
            yield home
        finally:
            for proc in home.procs:
                if proc.poll() is None:
                    kill_tree(proc)
            for log in home.logs:
                log.close()
    drop_database(admin_url, f"{name}_dagster")
    drop_database(admin_url, name)
