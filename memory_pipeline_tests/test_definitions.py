"""The Dagster code location loads, and its runs are recorded in Dagster's PostgreSQL database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import psycopg
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.db.migrate import discover
from memory_pipeline.definitions import defs
from memory_pipeline.resources import DatabaseResource
from memory_pipeline.settings import REPO_ROOT


def test_definitions_load_and_every_asset_is_described() -> None:
    dg.Definitions.validate_loadable(defs)
    specs = list(defs.resolve_all_asset_specs())
    assert specs, "the graph has no assets"
    for spec in specs:
        assert spec.description and len(spec.description) > 40, spec.key
        assert spec.group_name != "default", f"{spec.key} has no stage group"


def test_workspace_yaml_loads_the_code_location(dagster_home: Path) -> None:
    env = {**os.environ}
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "dagster"),
            "definitions",
            "validate",
            "-w",
            str(REPO_ROOT / "workspace.yaml"),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "memory_pipeline" in proc.stdout + proc.stderr


def test_a_materialization_lands_in_dagsters_postgres(dagster_home: Path, db_url: str) -> None:
    instance = dg.DagsterInstance.get()
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    result = dg.materialize(
        [defs.get_assets_def("memory_database")],
        instance=instance,
        resources={"db": DatabaseResource(url=db_url)},
    )
    assert result.success
    dagster_db = conninfo_to_dict(os.environ["DAGSTER_PG_URL"].replace("+psycopg2", ""))
    with psycopg.connect(**dagster_db) as conn:
        rows = conn.execute(
            "SELECT asset_key FROM event_logs WHERE run_id = %s"
            " AND dagster_event_type = 'ASSET_MATERIALIZATION'",
            [result.run_id],
        ).fetchall()
        runs = conn.execute("SELECT status FROM runs WHERE run_id = %s", [result.run_id])
        assert runs.fetchone() == ("SUCCESS",)
    assert rows == [('["memory_database"]',)]
    event = instance.get_latest_materialization_event(dg.AssetKey("memory_database"))
    assert event is not None
    metadata = event.asset_materialization.metadata  # type: ignore[union-attr]
    assert metadata["schema_version"].value == discover()[-1].version
