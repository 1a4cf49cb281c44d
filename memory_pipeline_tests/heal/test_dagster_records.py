"""Dagster's records on PostgreSQL: every string that quotes a secret is rewritten, and Dagster
still reads the records (the JSON it serialized stays valid, same shape)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import psycopg

from memory_pipeline import tuning
from memory_pipeline.dagster_records import dagster_psycopg_url, rewrite_dagster_records
from memory_pipeline_tests.test_secret_sweep import dump_sql

SECRET = "dop_v1_" + "4f9a1c0e7b2d83a5f6c4e1b0a9d8c7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0"


def mask(text: str) -> str:
    return text.replace(SECRET, "[REDACTED:digitalocean_token]")


def test_materialization_metadata_and_logs_are_rewritten_and_still_readable(
    dagster_home: Path, dagster_pg_url: str
) -> None:
    instance = dg.DagsterInstance.get()
    key = dg.AssetKey("dream_cycle")

    @dg.asset(name="dream_cycle")
    def asset(context) -> dg.MaterializeResult:  # type: ignore[no-untyped-def]
        context.log.info(f"the digest quotes DO_TOKEN={SECRET}")
        return dg.MaterializeResult(
            metadata={
                "digest": dg.MetadataValue.md(f"# Dream\n- token {SECRET} in a memory"),
                "new_memories": dg.MetadataValue.json({"titles": [f"rotate {SECRET}"]}),
                "count": 3,
            }
        )

    result = dg.materialize([asset], instance=instance)
    assert result.success
    url = dagster_psycopg_url(dagster_pg_url)
    assert SECRET.encode() in dump_sql(url)  # the event log, the latest materialization...

    with psycopg.connect(url, autocommit=True) as conn:
        report = rewrite_dagster_records(conn, mask, batch=tuning.HEAL_BATCH_ROWS)
        assert report.rewritten["event_logs"] >= 2  # the log line and the materialization
        assert report.total_rewritten >= 3  # and asset_keys' copy of the latest one
        assert SECRET.encode() not in dump_sql(url)
        again = rewrite_dagster_records(conn, mask, batch=tuning.HEAL_BATCH_ROWS)
    assert again.total_rewritten == 0

    instance = dg.DagsterInstance.get()
    event = instance.get_latest_materialization_event(key)
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    assert metadata["digest"].value == "# Dream\n- token [REDACTED:digitalocean_token] in a memory"
    assert metadata["new_memories"].value == {"titles": ["rotate [REDACTED:digitalocean_token]"]}
    assert metadata["count"].value == 3
    logs = instance.all_logs(result.run_id)
    assert any("DO_TOKEN=[REDACTED:digitalocean_token]" in e.user_message for e in logs)
