"""`memory-pipeline forget` as a user runs it: by id, --dry-run, --query (asks, or --yes),
--task for a task never captured, --log, and one-line errors."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner, Result

from memory_pipeline.cli import app
from memory_pipeline.errors import UserError
from memory_pipeline.forget.audit import AUDIT_KEY_FILE, audit_key
from memory_pipeline.forget.select import query_hmac
from memory_pipeline_tests.forget.data import World, build


@pytest.fixture
def world(
    conn: psycopg.Connection, db_url: str, dagster_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> World:
    """The hand-made data, and the pipeline's environment pointing at its database."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("DAGSTER_PG_URL", dagster_pg_url)
    return build(conn)


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, ["forget", *args], input=stdin)


def memories(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])  # type: ignore[index]


def test_dry_run_then_forget_by_id_then_the_log(conn: psycopg.Connection, world: World) -> None:
    before = memories(conn)
    dry = run(world.decision_a, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "dry run, nothing changed; this would forget: 2 memories, 0 turns, 0 tasks" in dry.stdout
    assert "FORGETME decision" in dry.stdout and "FORGETME dream" in dry.stdout
    assert memories(conn) == before

    done = run(world.decision_a)
    assert done.exit_code == 0, done.output
    assert "forgot: 2 memories" in done.stdout and "audit entry" in done.stdout
    assert "older backups still hold what was forgotten" in done.stderr
    assert memories(conn) == before - 2

    log = run("--log")
    assert log.exit_code == 0, log.output
    assert f"memory_ids=[{world.decision_a}]" in log.stdout
    assert "forgot 2 memories, 0 turns, 0 tasks" in log.stdout
    assert "FORGETME" not in log.stdout  # the audit keeps no forgotten content


def test_a_query_shows_its_matches_and_asks_first(conn: psycopg.Connection, world: World) -> None:
    before = memories(conn)
    refused = run("--query", "FORGETME decision", stdin="n\n")
    assert isinstance(refused.exception, UserError)
    assert "not confirmed, nothing was forgotten" in str(refused.exception)
    assert "FORGETME decision" in refused.stdout  # the matches were shown
    assert memories(conn) == before

    confirmed = run("--query", "FORGETME decision", stdin="y\n")
    assert confirmed.exit_code == 0, confirmed.output
    assert memories(conn) < before
    (selector,) = conn.execute("SELECT selector FROM forget_audit").fetchone()  # type: ignore[misc]
    assert "query" not in selector and "query_sha256" not in selector
    # A keyed hash: the bare sha256 of a guessed word confirms nothing; the key is the home's.
    keyed = selector["query_hmac_sha256"]
    assert keyed != hashlib.sha256(b"FORGETME decision").hexdigest()
    key = Path(os.environ["MEMORY_HOME"]) / AUDIT_KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert keyed == query_hmac(audit_key(key.parent), "FORGETME decision")


def test_a_task_never_captured_is_tombstoned(conn: psycopg.Connection, world: World) -> None:
    result = run("--task", "codex:019a-not-yet", "--yes")
    assert result.exit_code == 0, result.output
    assert "(not captured; tombstoned so it never is)" in result.stdout
    rows = conn.execute("SELECT source, native_id FROM forgotten_tasks").fetchall()
    assert rows == [("codex", "019a-not-yet")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "say what to forget"),
        (("not-a-uuid",), "is not a memory id"),
        (("--task", "slack:x"), "write SOURCE:NATIVE_ID"),
        (("--query", "  "), "--query is empty"),
    ],
)
def test_bad_input_is_one_line_saying_what_to_do(args: tuple[str, ...], message: str) -> None:
    # Refused before any database is touched.
    result = run(*args)
    assert isinstance(result.exception, UserError), result.output
    assert message in str(result.exception) and "\n" not in str(result.exception)
