"""Dagster definitions for backups: the nightly backup asset, its restore check, the schedule."""

from datetime import UTC

import dagster as dg

from memory_pipeline.backup.crypto import BackupCryptoError
from memory_pipeline.backup.operations import key_created_warning, run_backup
from memory_pipeline.backup.resource import BackupResource
from memory_pipeline.backup.restore import verify_backup
from memory_pipeline.errors import UserError
from memory_pipeline.partitions import daily
from memory_pipeline.resources import DatabaseResource

BACKUP_JOB = "backup_job"
COPY_CHECK = "backup_copied"
RESTORE_CHECK = "backup_restores"


@dg.asset(
    partitions_def=daily,
    deps=[dg.AssetKey("memory_database")],
    group_name="backup",
    kinds={"postgres"},
    check_specs=[
        dg.AssetCheckSpec(
            COPY_CHECK,
            asset="memory_backup",
            description="The copy to MEMORY_BACKUP_COPY_COMMAND's destinations succeeded "
            "(passes when no copy command is configured).",
        )
    ],
    description=(
        "A backup of the whole memory database: pg_dump (custom format) plus JSON Lines exports "
        "of memories, relationships, captured tasks and turns, dream runs and candidates, and a "
        "manifest with row counts and checksums, all from one snapshot and every file encrypted "
        "(AES-256-GCM). Written under MEMORY_BACKUP_DIR, then retention, then the optional copy. "
        "The partition is the night it belongs to; each run backs up the database as it is."
    ),
)
def memory_backup(
    context: dg.AssetExecutionContext, db: DatabaseResource, backup: BackupResource
) -> dg.MaterializeResult:
    run = run_backup(backup.config(), db.dsn, progress=context.log.info)
    made, copy, retention = run.backup, run.copy, run.retention
    if made.key.created:
        context.log.warning(key_created_warning(backup.config()))
    if copy.status == "failed":
        context.log.warning(f"copy failed, the local backup is kept: {copy.detail}")
    for error in retention.errors:
        context.log.warning(f"retention: {error}")
    manifest = made.manifest
    metadata: dict[str, dg.RawMetadataValue] = {
        "backup_id": made.backup_id,
        "path": dg.MetadataValue.path(str(made.path)),
        "files": dg.MetadataValue.json(
            [{"name": f.name, "rows": f.rows, "plaintext_bytes": f.bytes} for f in manifest.files]
        ),
        "bytes": made.encrypted_bytes,
        "seconds": made.seconds,
        "schema_version": manifest.schema_version or "none",
        "embedding_spaces": dg.MetadataValue.json(
            {s.space: s.rows for s in manifest.embedding_spaces}
        ),
        "key": f"{made.key.source} ({made.key.fingerprint})",
        "copy_status": copy.status,
        "copy_detail": copy.detail or "-",
        "retention_kept": dg.MetadataValue.json(list(retention.kept)),
        "retention_deleted": dg.MetadataValue.json(list(retention.deleted)),
        "rows_total": sum(t.rows for t in manifest.tables),
        "row_counts": dg.MetadataValue.json({t.name: t.rows for t in manifest.tables}),
    }
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[
            dg.AssetCheckResult(
                check_name=COPY_CHECK,
                passed=copy.status != "failed",
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"status": copy.status, "command": copy.command or "-"},
                description=copy.detail or None,
            )
        ],
    )


@dg.asset_check(
    asset=memory_backup,
    name=RESTORE_CHECK,
    blocking=True,  # a backup that does not restore fails the run, and so `memory-pipeline run`
    description=(
        "Restores the newest backup into a scratch database on the same server, compares every "
        "table's row count and checksum, the migrations and the re-exported JSON Lines with the "
        "manifest, then drops the scratch database. Fails on a tampered, truncated or otherwise "
        "corrupted backup; the outcome is recorded beside the backup (verified backups are the "
        "good ones retention keeps)."
    ),
)
def backup_restores(
    context: dg.AssetCheckExecutionContext, db: DatabaseResource, backup: BackupResource
) -> dg.AssetCheckResult:
    try:
        report = verify_backup(backup.config(), db.dsn, progress=context.log.info)
    except (UserError, BackupCryptoError) as exc:  # no backup, no or wrong key, no CREATEDB
        return dg.AssetCheckResult(passed=False, description=str(exc))
    return dg.AssetCheckResult(
        passed=report.passed,
        description="; ".join(report.problems[:5]) if report.problems else None,
        metadata={
            "backup_id": report.backup_id,
            "tables": report.tables,
            "rows": report.rows,
            "seconds": report.seconds,
            "problems": dg.MetadataValue.json(list(report.problems)),
        },
    )


backup_job = dg.define_asset_job(
    BACKUP_JOB,
    selection=dg.AssetSelection.assets(memory_backup),  # with its checks
    description="Back up the database, apply retention, copy, and prove the backup restores.",
)


@dg.schedule(
    cron_schedule="30 3 * * *",
    job=backup_job,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Nightly backup at 03:30 UTC of the day's partition, checked by a real restore.",
)
def nightly_backup(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    day = context.scheduled_execution_time.astimezone(UTC).date().isoformat()
    return dg.RunRequest(run_key=f"backup:{day}", partition_key=day)


defs = dg.Definitions(
    assets=[memory_backup],
    jobs=[backup_job],
    asset_checks=[backup_restores],
    schedules=[nightly_backup],
)
