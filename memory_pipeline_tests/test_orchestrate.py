"""`memory-pipeline run`'s plan: a failed dream cycle or briefing push does not cost the backup.

The jobs here are stand-ins with the real jobs' names, run by the real `materialize_all` on a
Dagster instance on PostgreSQL; what is tested is the order and what a failure stops.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

import memory_pipeline.definitions
from memory_pipeline import orchestrate
from memory_pipeline.errors import UserError
from memory_pipeline.jobs import DREAM_JOB, INGEST_JOB, PARTITION_TAG
from memory_pipeline.settings import Settings

RAN: list[str] = []


def _job(name: str, fails: bool = False) -> dg.JobDefinition:
    @dg.op(name=f"{name}_step")
    def step() -> None:
        RAN.append(name)
        if fails:
            raise RuntimeError("SMTP server refused the connection")

    @dg.job(name=name)
    def job() -> None:
        step()

    return job


@pytest.fixture
def plan(monkeypatch: pytest.MonkeyPatch, dagster_home: Path):  # type: ignore[no-untyped-def]
    RAN.clear()

    def use(failing: str) -> dg.DagsterInstance:
        names = [INGEST_JOB, "maintenance_job", DREAM_JOB, "backup_job"]
        defs = dg.Definitions(jobs=[_job(n, fails=n == failing) for n in names])
        monkeypatch.setattr(memory_pipeline.definitions, "defs", defs)
        monkeypatch.setattr(orchestrate, "_plan", lambda *a, **k: [(n, {}) for n in names])
        return dg.DagsterInstance.get()

    return use


def test_a_failed_dream_job_still_runs_the_backup_then_reports_the_failure(plan) -> None:  # type: ignore[no-untyped-def]
    instance = plan(failing=DREAM_JOB)
    lines: list[str] = []
    with pytest.raises(UserError, match=r"dream_job failed \(dream_job_step: .*SMTP server"):
        orchestrate.materialize_all(instance, Settings.from_env(), progress=lines.append)
    assert RAN == [INGEST_JOB, "maintenance_job", DREAM_JOB, "backup_job"]
    assert any("dream_job failed" in line for line in lines)


def test_a_failed_ingest_stops_the_run_before_anything_else(plan) -> None:  # type: ignore[no-untyped-def]
    instance = plan(failing=INGEST_JOB)
    with pytest.raises(UserError, match="ingest_job failed"):
        orchestrate.materialize_all(instance, Settings.from_env(), progress=lambda _: None)
    assert RAN == [INGEST_JOB]


def test_a_failed_step_shows_one_line_not_dagsters_traceback(plan, capfd) -> None:  # type: ignore[no-untyped-def]
    """Dagster's console logger printed the step's stack trace before our one-line error (seen
    on Ctrl-C in `memory-pipeline run`); the logs stay in the run, for the Dagster UI."""
    instance = plan(failing=INGEST_JOB)
    with pytest.raises(UserError, match="ingest_job failed"):
        orchestrate.materialize_all(instance, Settings.from_env(), progress=lambda _: None)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Stack Trace" not in out + err
    assert "STEP_FAILURE" not in out + err


def test_a_run_over_unreadable_files_only_still_captures_to_record_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A transcript with no readable task has no task day; `run` planned no ingest at all then,
    so the file skip that capture records for it (capture/unreadable.py) was never written and
    the user saw nothing. The plan now ingests today's partition, whose capture looks at every
    file."""
    garbage = tmp_path / "imports" / "export.jsonl"
    garbage.parent.mkdir(parents=True)
    garbage.write_bytes(b"\x00\xff not json at all\n" * 50)
    monkeypatch.setenv("MEMORY_SOURCES", "real")
    monkeypatch.setenv("MEMORY_IMPORT_DIR", str(garbage.parent))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    plan = dict(orchestrate._plan(Settings.from_env()))
    today = datetime.now(UTC).date().isoformat()
    assert plan[INGEST_JOB] == {PARTITION_TAG: today}
