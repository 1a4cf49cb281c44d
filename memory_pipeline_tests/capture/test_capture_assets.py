"""Capture through Dagster: the partitioned asset and backfills over ranges (the sensors and the
catch-up: test_sensor.py)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from memory_pipeline.capture.definitions import captured_tasks
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import demo_roots
from memory_pipeline.jobs import RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline.resources import DatabaseResource, SourcesResource

DEMO_CODEX = demo_roots().home("codex")
RENAMED = "01a0d354-3d86-72f0-bc4b-5657df927ed1"  # "perf spike" -> "logslice: reader performance"


def rollout(uuid_part: str) -> Path:
    (path,) = DEMO_CODEX.glob(f"sessions/**/rollout-*{uuid_part}*.jsonl")
    return path


def codex_home(tmp_path: Path, *uuid_parts: str, lines: int | None = None) -> Path:
    """A CODEX_HOME holding copies of demo rollouts (optionally only their first lines)."""
    home = tmp_path / "codex"
    for part in uuid_parts:
        src = rollout(part)
        dest = home / src.relative_to(DEMO_CODEX)
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text().splitlines(keepends=True)
        dest.write_text("".join(text if lines is None else text[:lines]))
    return home


def sources(home: Path, tmp_path: Path) -> SourcesResource:
    return SourcesResource.of(
        codex_home=str(home),
        claude_home=str(tmp_path / "none"),
        import_dir=str(tmp_path / "none"),
        kind="real",
    )


def materialize(db_url: str, src: SourcesResource, partition: str) -> dict[str, object]:
    result = dg.materialize(
        [captured_tasks],
        partition_key=partition,
        resources={"db": DatabaseResource(url=db_url), "sources": src},
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("captured_tasks")
    return {k: v.value for k, v in mat.metadata.items()}


def table_state(conn: psycopg.Connection) -> tuple[list[tuple], list[tuple]]:
    return (
        conn.execute("SELECT * FROM captured_tasks ORDER BY id").fetchall(),
        conn.execute("SELECT * FROM agent_turns ORDER BY id").fetchall(),
    )


def test_partition_run_reports_counts_and_rerun_changes_nothing(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, RENAMED, "01a0d21f")  # two threads started on 2026-09-24
    meta = materialize(db_url, sources(home, tmp_path), "2026-09-24")
    assert meta["tasks_captured"] == 2 and meta["turns_appended"] > 0
    assert meta["sources"] == "real"
    before = table_state(conn)
    again = materialize(db_url, sources(home, tmp_path), "2026-09-24")
    assert again["tasks_captured"] == 0 and again["turns_appended"] == 0
    assert again["drift_ignored"] == 0
    assert table_state(conn) == before
    other_day = materialize(db_url, sources(home, tmp_path), "2026-09-25")
    assert other_day["files_parsed"] == 0


def test_growth_appends_and_rename_refreshes_the_title(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, RENAMED, lines=25)
    first = materialize(db_url, sources(home, tmp_path), "2026-09-24")
    turns_before = conn.execute("SELECT id, ordinal FROM agent_turns ORDER BY ordinal").fetchall()
    assert first["turns_appended"] == len(turns_before) >= 1
    full = codex_home(tmp_path / "full", RENAMED)
    dest = next(home.glob("sessions/**/*.jsonl"))
    shutil.copyfile(next(full.glob("sessions/**/*.jsonl")), dest)
    shutil.copyfile(DEMO_CODEX / "session_index.jsonl", home / "session_index.jsonl")
    second = materialize(db_url, sources(home, tmp_path), "2026-09-24")
    assert second["turns_appended"] > 0 and second["drift_ignored"] == 0
    assert second["renames"] == 1
    turns_after = conn.execute("SELECT id, ordinal FROM agent_turns ORDER BY ordinal").fetchall()
    assert turns_after[: len(turns_before)] == turns_before
    title = conn.execute("SELECT title, title_source FROM captured_tasks").fetchone()
    assert title == ("logslice: reader performance", "codex:session_index")


def test_bad_files_are_recorded_skips_and_the_run_goes_on(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, RENAMED)
    day_dir = next(home.glob("sessions/*/*/*"))
    garbage = day_dir / "rollout-2026-09-24T01-00-00-01a0d354-0000-7000-8000-000000000000.jsonl"
    garbage.write_bytes(b"\x00\xff\xfe not json at all\n" * 10)
    (day_dir / "rollout-2026-09-24T02-00-00-01a0d354-0000-7000-8000-000000000001.jsonl").write_text(
        ""
    )
    report = capture_window(
        conn, sources(home, tmp_path).connectors(), date(2026, 9, 24), date(2026, 9, 25)
    )
    assert report.tasks_captured == 1
    reasons = {r[0] for r in conn.execute("SELECT reason FROM capture_skips WHERE kind = 'file'")}
    assert reasons == {"binary", "empty_file", "not_a_transcript"}


def test_range_backfill_is_one_idempotent_run(db_url, conn, tmp_path, dagster_home) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED, "01a0f3af")  # 09-21, 09-24, 09-30
    job = dg.define_asset_job("capture_only", selection=[captured_tasks])
    defs = dg.Definitions(
        assets=[captured_tasks],
        jobs=[job],
        resources={"db": DatabaseResource(url=db_url), "sources": sources(home, tmp_path)},
    )
    tags = {RANGE_START_TAG: "2026-09-20", RANGE_END_TAG: "2026-10-01"}
    instance = dg.DagsterInstance.get()
    first = defs.resolve_job_def("capture_only").execute_in_process(instance=instance, tags=tags)
    assert first.success
    assert conn.execute("SELECT count(*) FROM captured_tasks").fetchone() == (3,)
    before = table_state(conn)
    second = defs.resolve_job_def("capture_only").execute_in_process(instance=instance, tags=tags)
    assert second.success and table_state(conn) == before
    # One materialization per day of the range, recorded in Dagster's PostgreSQL.
    assert len(second.asset_materializations_for_node("captured_tasks")) == 12


@pytest.mark.parametrize("day", ["2019-12-31", "1999-05-01"])
def test_days_before_the_first_partition_belong_to_the_first_partition(day) -> None:  # type: ignore[no-untyped-def]
    from memory_pipeline.partitions import first_day, partition_days

    assert first_day() == date(2020, 1, 1)  # the tests' MEMORY_PARTITION_START
    days = {date.fromisoformat(day), date(2026, 9, 24)}
    assert partition_days(days) == {date(2020, 1, 1), date(2026, 9, 24)}


def test_delegated_tasks_are_reported_in_the_run(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a1404c")  # a `codex exec` run on 2026-10-15
    meta = materialize(db_url, sources(home, tmp_path), "2026-10-15")
    assert meta["tasks_captured"] == 0 and meta["tasks_skipped"] == 1
    assert meta["skipped_by_reason"] == {"codex:exec": 1}
    assert "codex:exec" in meta["skipped_tasks_table"] and "01a1404c" in meta["skipped_tasks_table"]
    row = conn.execute("SELECT reason, ownership, evidence FROM capture_skips").fetchone()
    assert row[0] == "codex:exec" and row[1] == "delegated" and row[2]


def test_an_unanswered_import_is_captured_once_quiet_then_its_answer_beside_it(
    conn, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from memory_pipeline.capture.chat_import import ChatImportConnector
    from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
    from memory_pipeline.semantic.process import process_window

    imports = tmp_path / "imports"
    imports.mkdir()
    export = imports / "chat.jsonl"

    def say(role: str, text: str, ts: str) -> None:
        line = {"task_id": "c1", "role": role, "text": text, "timestamp": ts, "message_id": ts}
        with export.open("a") as fh:
            fh.write(json.dumps(line) + "\n")

    say("user", "Which WAL level does logical replication need?", "2026-09-23T19:00:00Z")
    say("assistant", "wal_level = logical, then restart the server.", "2026-09-23T19:00:20Z")
    say("user", "And how many replication slots should the standby keep?", "2026-09-23T19:05:00Z")
    asked_at = datetime(2026, 9, 23, 19, 5, tzinfo=UTC)
    day, next_day = date(2026, 9, 23), date(2026, 9, 24)

    def capture_at(moment: datetime):  # type: ignore[no-untyped-def]
        chat = ChatImportConnector(imports, quiet_after=timedelta(minutes=30), now=lambda: moment)
        return capture_window(conn, [chat], day, next_day)

    def rows() -> list[tuple]:
        return conn.execute(
            "SELECT ordinal, outcome, unanswered, continues_ordinal FROM agent_turns"
            " ORDER BY ordinal"
        ).fetchall()

    def captured_size() -> int | None:
        return conn.execute("SELECT captured_size FROM source_files").fetchone()[0]

    # Before the quiet period: the question waits, and the file is not marked captured, so the
    # hourly catch-up comes back to it without any change to the file.
    before = capture_at(asked_at + timedelta(minutes=29))
    assert (before.turns_appended, before.unfinished_turns_waiting) == (1, 1)
    assert [r[2] for r in rows()] == [False] and captured_size() is None
    # After it: the question is a turn of its own, marked, and the file is captured.
    after = capture_at(asked_at + timedelta(minutes=30))
    assert (after.turns_appended, after.unanswered_turns) == (1, 1)
    assert rows()[1] == (1, "", True, None)
    assert captured_size() == export.stat().st_size
    # The semantic pass runs over it like any turn: the question is searchable on its own.
    process_window(conn, OfflineRulesBackend(), day, next_day, quiet_minutes=0)
    question = conn.execute(
        "SELECT count(*) FROM memory_provenance p JOIN agent_turns a ON a.id = p.turn_id"
        " WHERE a.unanswered"
    ).fetchone()
    assert question == (1,)
    # The answer arrives later: the stored question stays, the answered turn is appended.
    say("assistant", "Keep one slot per subscriber; drop unused ones.", "2026-09-24T08:00:00Z")
    answered = capture_at(datetime(2026, 9, 24, 9, 0, tzinfo=UTC))
    assert (answered.turns_appended, answered.answers_to_unanswered) == (1, 1)
    assert answered.drift_ignored == 0
    assert rows()[1:] == [(1, "", True, None), (2, rows()[2][1], False, 1)]
    assert rows()[2][1] == "Keep one slot per subscriber; drop unused ones."
    again = capture_at(datetime(2026, 9, 25, tzinfo=UTC))
    assert (again.turns_appended, again.drift_ignored) == (0, 0)
    process_window(conn, OfflineRulesBackend(), day, next_day, quiet_minutes=0)
    answer_prompt = conn.execute(
        "SELECT a.prompt FROM memory_provenance p JOIN agent_turns a ON a.id = p.turn_id"
        " WHERE a.ordinal = 2"
    ).fetchone()
    assert answer_prompt == ("And how many replication slots should the standby keep?",)


def test_the_quiet_setting_reaches_the_chat_import(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from memory_pipeline.settings import Settings

    monkeypatch.setenv("MEMORY_SEMANTIC_QUIET_MINUTES", "7")
    monkeypatch.setenv("MEMORY_SOURCES", "real")
    resource = SourcesResource.from_settings(Settings.from_env())
    chat = resource.connectors()[2]
    assert chat.source == "chat_import" and chat.quiet_after == timedelta(minutes=7)  # type: ignore[attr-defined]
