"""Dagster view of the database itself: the root of the asset graph."""

import dagster as dg

from memory_pipeline.db.report import database_report
from memory_pipeline.resources import DatabaseResource


@dg.asset(
    group_name="database",
    kinds={"postgres"},
    description=(
        "Our PostgreSQL database with every migration in sql/ applied (the embedded server "
        "unless DATABASE_URL is set). Metadata: schema version and table sizes."
    ),
)
def memory_database(db: DatabaseResource) -> dg.MaterializeResult:
    with db.connection() as conn:
        report = database_report(conn)
    metadata: dict[str, dg.RawMetadataValue] = {
        "schema_version": report.schema_version,
        "migrations_applied": report.migrations_applied,
        "server_version": report.server_version,
        "serving_embedding_space": report.serving_space or "none yet",
        "database_size_mb": round(report.size_bytes / 1e6, 1),
    }
    metadata.update({f"rows/{table}": n for table, n in report.row_counts.items()})
    return dg.MaterializeResult(metadata=metadata)


defs = dg.Definitions(assets=[memory_database])
