"""The backup asset and its restore check, run through Dagster; the CLI end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.crypto import KEY_ENV_VAR, generate_key_text
from memory_pipeline.backup.definitions import backup_restores, memory_backup, nightly_backup
from memory_pipeline.backup.layout import DUMP_NAME, list_backups
from memory_pipeline.backup.operations import load_restore_key
from memory_pipeline.backup.resource import BackupResource
from memory_pipeline.definitions import defs
from memory_pipeline.orchestrate import _failure_line
from memory_pipeline.resources import DatabaseResource
from memory_pipeline.settings import Settings
from memory_pipeline_tests.backup.conftest import Seeded, databases_like, flip_byte
from memory_pipeline_tests.conftest import drop_database
from memory_pipeline_tests.support.memories import add_memory

DAY = "2026-03-19"


def _resources(config: BackupConfig, db_url: str, copy_command: str | None = None) -> dict:
    return {
        "db": DatabaseResource(url=db_url),
        "backup": BackupResource(
            backup_dir=str(config.backup_dir),
            key_file=str(config.key_file),
            copy_command=copy_command,
            keep_daily=config.keep_daily,
            keep_weekly=config.keep_weekly,
        ),
    }


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_asset_materializes_and_its_restore_check_passes_then_fails_on_corruption(
    backup_config: BackupConfig, seeded: Seeded, db_url: str, admin_url: str
) -> None:
    resources = _resources(backup_config, db_url, copy_command="false")
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [memory_backup, backup_restores],
            instance=instance,
            resources=resources,
            partition_key=DAY,
        )
        assert result.success
        checks = _checks(result)
        assert checks["backup_restores"].passed
        # A failing copy is a warning; the asset and the local backup are fine.
        assert not checks["backup_copied"].passed
        assert checks["backup_copied"].severity == dg.AssetCheckSeverity.WARN
        metadata = result.asset_materializations_for_node("memory_backup")[0].metadata
        assert metadata["copy_status"].value == "failed"
        assert metadata["copy_detail"].value == "exit status 1"
        assert metadata["row_counts"].value["memories"] == 4  # type: ignore[index]
        assert metadata["bytes"].value > 0
        backup_path = Path(metadata["path"].value)  # type: ignore[arg-type]
        assert backup_path.is_dir()
        key = load_restore_key(backup_config)
        assert [i.status for i in list_backups(backup_config.backup_dir, key)] == ["verified"]

        # Corrupt the newest backup, then run only the check: it fails, and says why.
        flip_byte(backup_path / DUMP_NAME)
        result = dg.materialize(
            [memory_backup, backup_restores],
            instance=instance,
            resources=resources,
            selection=dg.AssetSelection.checks(backup_restores),  # the check has no partition
            raise_on_error=False,
        )
        check = _checks(result)["backup_restores"]
        assert not check.passed
        assert "failed authentication" in (check.description or "")
        assert not result.success  # blocking: `memory-pipeline run` stops on it
        # ... and says why, not just "Steps failed" (issue 13, finding 2).
        assert "backup_restores: " in _failure_line("backup_job", result)
        assert "failed authentication" in _failure_line("backup_job", result)
        assert [i.status for i in list_backups(backup_config.backup_dir, key)] == ["verify failed"]
    assert databases_like(admin_url, "%\\_verify\\_%") == []


def test_check_fails_with_a_clear_message_without_a_backup_or_with_a_wrong_key(
    backup_config: BackupConfig, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    resources = _resources(backup_config, db_url)
    selection = dg.AssetSelection.checks(backup_restores)
    with dg.instance_for_test() as instance:

        def check_only() -> dg.AssetCheckEvaluation:
            result = dg.materialize(
                [memory_backup, backup_restores],
                instance=instance,
                resources=resources,
                selection=selection,
                raise_on_error=False,
            )
            return _checks(result)["backup_restores"]

        assert KEY_ENV_VAR in (check_only().description or "")  # no key yet
        backup_config.backup_dir.mkdir(parents=True)
        backup_config.key_file.parent.mkdir(parents=True)
        backup_config.key_file.write_text(generate_key_text())
        backup_config.key_file.chmod(0o600)
        assert "there is no backup" in (check_only().description or "")

        dg.materialize([memory_backup], instance=instance, resources=resources, partition_key=DAY)
        monkeypatch.setenv(KEY_ENV_VAR, generate_key_text())
        assert "wrong backup key" in (check_only().description or "")


def test_definitions_wire_the_backup_job_schedule_and_resource() -> None:
    job = defs.resolve_job_def("backup_job")
    assert job.partitions_def is not None
    graph = defs.resolve_asset_graph()
    assert dg.AssetCheckKey(dg.AssetKey("memory_backup"), "backup_restores") in (
        graph.asset_check_keys
    )
    # The job runs the restore check after the asset.
    assert job.asset_layer.asset_graph.asset_check_keys == {
        dg.AssetCheckKey(dg.AssetKey("memory_backup"), "backup_restores"),
        dg.AssetCheckKey(dg.AssetKey("memory_backup"), "backup_copied"),
    }
    schedule = defs.resolve_schedule_def("nightly_backup")
    assert schedule.cron_schedule == "30 3 * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    context = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 3, 19, 3, 30, tzinfo=UTC)
    )
    request = nightly_backup(context)
    assert isinstance(request, dg.RunRequest) and request.partition_key == DAY
    settings = Settings.from_env()
    backup = BackupResource.from_settings(settings)
    assert Path(backup.backup_dir) == settings.memory_home / "backups"
    assert Path(backup.key_file) == settings.memory_home / "backup.key"


def test_cli_backup_now_list_verify_restore(
    tmp_path: Path, pg_server: object, admin_url: str
) -> None:
    env = {
        **os.environ,
        "MEMORY_BACKUP_DIR": str(tmp_path / "backups"),
        "MEMORY_BACKUP_KEY_FILE": str(tmp_path / "backup.key"),
    }
    env.pop(KEY_ENV_VAR, None)
    cli = str(Path(sys.executable).parent / "memory-pipeline")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [cli, "backup", *args], env=env, capture_output=True, text=True, timeout=120
        )

    now = run("now")
    assert now.returncode == 0, now.stderr
    assert "created a new backup key" in now.stderr
    assert "verified " in now.stderr
    listed = run("list")
    assert listed.returncode == 0, listed.stderr
    backup_id = listed.stdout.splitlines()[1].split()[0]
    assert "verified" in listed.stdout and "good" in listed.stdout
    assert run("verify", backup_id).returncode == 0

    target = "backup_test_cli_restore"
    try:
        first = run("restore", backup_id, "--to", target)
        assert first.returncode == 0, first.stderr
        # The backup holds an empty schema: restoring over that again needs no --force ...
        again = run("restore", backup_id, "--to", target)
        assert again.returncode == 0, again.stderr
        # ... but once the target holds a memory, it does.
        with psycopg.connect(admin_url.replace("/postgres?", f"/{target}?"), autocommit=True) as c:
            add_memory(c, "Kept", "A memory a restore must not silently replace.")
        refused = run("restore", backup_id, "--to", target)
        assert refused.returncode == 2
        assert f"error: database {target} is not empty (table memories has rows); pass --force" in (
            refused.stderr
        )
        forced = run("restore", backup_id, "--to", target, "--force")
        assert forced.returncode == 0, forced.stderr
    finally:
        drop_database(admin_url, target)

    env[KEY_ENV_VAR] = generate_key_text()
    wrong = run("list")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("error: cannot decrypt ")
    assert "wrong backup key" in wrong.stderr and "Traceback" not in wrong.stderr
