"""`memory-pipeline dream run / list / show / reject / approve` as a user or an agent types them."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline_tests.dream.helpers import reversed_decisions


@pytest.fixture
def dream_cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path))
    monkeypatch.delenv("MEMORY_DREAM_MODEL", raising=False)
    runner = CliRunner()

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(app, ["dream", *args], catch_exceptions=False)

    return invoke


def test_dream_commands(dream_cli, conn: psycopg.Connection, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    older, _ = reversed_decisions(conn)
    assert "no dream runs yet" in dream_cli("list").output

    ran = dream_cli("run", "--type", "session_start")
    assert ran.exit_code == 0, ran.output
    assert "dream cycle (session_start, offline-rules)" in ran.output
    assert "1 superseded" in ran.output
    run_id = conn.execute("SELECT id::text FROM dream_cycle_runs").fetchone()[0]  # type: ignore[index]
    assert (tmp_path / "dream").is_dir()

    listed = dream_cli("list").output
    assert run_id[:8] in listed and "session_start" in listed and "1 superseded" in listed
    shown = dream_cli("show", run_id[:8]).output
    assert shown.startswith("# Dream cycle") and older in shown

    rejected = dream_cli("reject", older, "--reason", "still on Redis")
    assert rejected.exit_code == 0 and f"restored {older}" in rejected.output
    assert conn.execute("SELECT status FROM memories WHERE id = %s", [older]).fetchone() == (
        "active",
    )

    again = dream_cli("run")  # user_triggered by default; the rejection holds
    assert "user_triggered" in again.output and "0 superseded" in again.output
    assert "nothing waits for approval" in dream_cli("approve").output


def test_dream_command_errors_are_one_line(dream_cli) -> None:  # type: ignore[no-untyped-def]
    from memory_pipeline.errors import UserError

    with pytest.raises(UserError, match="--type must be one of"):
        dream_cli("run", "--type", "scheduled")
    with pytest.raises(UserError, match="no dream run"):
        dream_cli("show", "abcdef")
    with pytest.raises(UserError, match="is not a memory id"):
        dream_cli("reject", "nope", "--reason", "x")
