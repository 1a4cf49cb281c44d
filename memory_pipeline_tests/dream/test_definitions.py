"""The Dagster side: the asset in dream_job, the noon schedule in the user's zone, the
post_learn sensor's threshold, and a materialization that records its run type and digest."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import psycopg

from memory_pipeline.dream import definitions as dream_defs
from memory_pipeline.dream.definitions import RUN_TYPE_TAG, noon_schedule, post_learn_request
from memory_pipeline.jobs import dream_job
from memory_pipeline.resources import DatabaseResource, EmbeddingResource, SemanticResource
from memory_pipeline_tests.dream.helpers import mem, reversed_decisions


def test_noon_schedule_runs_in_the_users_zone() -> None:
    schedule = noon_schedule("Europe/Berlin")
    assert schedule.cron_schedule == "0 12 * * *"
    assert schedule.execution_timezone == "Europe/Berlin"
    assert noon_schedule("Not/AZone").execution_timezone == "UTC"
    when = datetime(2026, 11, 30, 11, 0, tzinfo=UTC)  # 12:00 in Berlin
    run = schedule(dg.build_schedule_context(scheduled_execution_time=when))
    assert isinstance(run, dg.RunRequest)
    assert run.partition_key == "2026-11-30" and run.tags[RUN_TYPE_TAG] == "scheduled"


def test_post_learn_sensor_waits_for_n_new_memories(conn: psycopg.Connection) -> None:
    instance = dg.DagsterInstance.ephemeral()
    now = datetime(2026, 11, 30, tzinfo=UTC)
    mem(conn, "one", "x")
    first = post_learn_request(conn, instance, 2, now)
    assert first == "1 new memories since the last dream run; waiting for 2"
    mem(conn, "two", "x")
    request = post_learn_request(conn, instance, 2, now)
    assert isinstance(request, dg.RunRequest)
    assert request.tags[RUN_TYPE_TAG] == "post_learn" and request.partition_key == "2026-11-30"
    # A run counts what it saw: afterwards the count starts again.
    conn.execute("INSERT INTO dream_cycle_runs (run_type, memories_seen) VALUES ('post_learn', 2)")
    assert post_learn_request(conn, instance, 2, now) == (
        "0 new memories since the last dream run; waiting for 2"
    )


def test_dream_job_materializes_with_its_run_type(
    conn: psycopg.Connection, db_url: str, tmp_path: Path
) -> None:
    older, _ = reversed_decisions(conn)
    from memory_pipeline.definitions import defs

    job = defs.resolve_job_def(dream_job.name)
    assert dg.AssetKey("dream_cycle") in job.asset_layer.executable_asset_keys
    result = dg.materialize(
        [dream_defs.dream_cycle],
        partition_key="2026-11-30",
        tags={RUN_TYPE_TAG: "scheduled"},
        resources={
            "db": DatabaseResource(url=db_url),
            "embedding": EmbeddingResource(
                space="local:all-minilm-l6-v2:384", ollama_host="http://127.0.0.1:9"
            ),
            "dream": dream_defs.DreamResource(
                memory_home=str(tmp_path), ollama_host="http://127.0.0.1:9"
            ),
            "semantic": SemanticResource(ollama_host="http://127.0.0.1:9"),
        },
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("dream_cycle")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["run_type"] == "scheduled" and meta["backend"] == "offline-rules"
    assert meta["memories_superseded"] == 1 and "digest" not in meta  # no memory text
    assert meta["relationships_scanned"] == meta["memories_created"]  # its new ones, linked
    assert "Superseded memories" in Path(str(meta["digest_path"])).read_text()
    assert conn.execute("SELECT run_type FROM dream_cycle_runs").fetchall() == [("scheduled",)]
    assert conn.execute("SELECT status FROM memories WHERE id = %s", [older]).fetchone() == (
        "superseded",
    )
