"""Capture through Dagster: the partitioned asset, the sensor's cursor, backfills over ranges."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from memory_pipeline.capture.definitions import captured_tasks, transcript_sensor
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import demo_roots
from memory_pipeline.jobs import RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline.resources import DatabaseResource, EmbeddingResource, SourcesResource
from memory_pipeline.schedules import hourly_catch_up

DEMO_CODEX = demo_roots().codex_home
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
    return SourcesResource(
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


def test_sensor_requests_the_days_of_changed_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)  # 2026-09-21 and 2026-09-24
    src = sources(home, tmp_path)
    with dg.instance_for_test() as instance:
        first = transcript_sensor(
            dg.build_sensor_context(instance=instance, resources={"sources": src})
        )
        (request,) = first.run_requests
        assert request.tags[RANGE_START_TAG] == "2026-09-21"
        assert request.tags[RANGE_END_TAG] == "2026-09-24"
        cursor = first.cursor
        quiet = transcript_sensor(
            dg.build_sensor_context(instance=instance, cursor=cursor, resources={"sources": src})
        )
        assert not quiet.run_requests and quiet.skip_reason is not None
        grown = next(home.glob(f"sessions/**/*{RENAMED}.jsonl"))
        stat = grown.stat()
        os.utime(grown, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        third = transcript_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=quiet.cursor, resources={"sources": src}
            )
        )
        (request,) = third.run_requests
        assert request.partition_key == "2026-09-24"
        assert json.loads(third.cursor)["mtime_ns"] > json.loads(cursor)["mtime_ns"]


@pytest.mark.parametrize("day", ["2019-12-31"])
def test_days_before_the_first_partition_are_not_requested(tmp_path, day) -> None:  # type: ignore[no-untyped-def]
    from memory_pipeline.capture.changes import partition_days

    assert partition_days({date.fromisoformat(day), date(2026, 9, 24)}) == {date(2026, 9, 24)}


def test_delegated_tasks_are_reported_in_the_run(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a1404c")  # a `codex exec` run on 2026-10-15
    meta = materialize(db_url, sources(home, tmp_path), "2026-10-15")
    assert meta["tasks_captured"] == 0 and meta["tasks_skipped"] == 1
    assert meta["skipped_by_reason"] == {"codex:exec": 1}
    assert "codex:exec" in meta["skipped_tasks_table"] and "01a1404c" in meta["skipped_tasks_table"]
    row = conn.execute("SELECT reason, ownership, evidence FROM capture_skips").fetchone()
    assert row[0] == "codex:exec" and row[1] == "delegated" and row[2]


def test_sensor_requests_the_day_of_a_renamed_thread(tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    src = sources(home, tmp_path)
    with dg.instance_for_test() as instance:
        first = transcript_sensor(
            dg.build_sensor_context(instance=instance, resources={"sources": src})
        )
        # A rename touches only session_index.jsonl, never the rollout.
        now = datetime.now(UTC).isoformat()
        entry = {"id": RENAMED, "thread_name": "reader perf", "updated_at": now}
        (home / "session_index.jsonl").write_text(json.dumps(entry) + "\n")
        renamed = transcript_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=first.cursor, resources={"sources": src}
            )
        )
        (request,) = renamed.run_requests
        assert request.partition_key == "2026-09-24"
        again = transcript_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=renamed.cursor, resources={"sources": src}
            )
        )
        assert not again.run_requests


def test_hourly_catch_up_requests_what_the_sensor_missed(db_url, conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = codex_home(tmp_path, "01a0c2e9", RENAMED)
    src = sources(home, tmp_path)
    resources = {
        "db": DatabaseResource(url=db_url),
        "sources": src,
        "embedding": EmbeddingResource(space="local:all-minilm-l6-v2:384", ollama_host="x"),
    }
    tick = datetime(2026, 11, 30, 12, 7, tzinfo=UTC)

    def catch_up() -> dg.RunRequest | dg.SkipReason:
        return hourly_catch_up(
            dg.build_schedule_context(scheduled_execution_time=tick, resources=resources)
        )

    never_captured = catch_up()
    assert never_captured.tags[RANGE_START_TAG] == "2026-09-21"  # type: ignore[union-attr]
    capture_window(conn, src.connectors(), date(2026, 9, 21), date(2026, 9, 25))
    # Captured but not yet through the semantic pass: the same days are still pending.
    assert catch_up().tags[RANGE_END_TAG] == "2026-09-24"  # type: ignore[union-attr]
    conn.execute(
        "INSERT INTO semantic_cursors (task_id, last_ordinal)"
        " SELECT id, turn_count - 1 FROM captured_tasks"
    )
    assert isinstance(catch_up(), dg.SkipReason)
    grown = next(home.glob("sessions/**/*01a0c2e9*.jsonl"))
    grown.write_text(grown.read_text() + "\n")
    assert catch_up().partition_key == "2026-09-21"  # type: ignore[union-attr]
