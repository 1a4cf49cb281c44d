"""The Dagster code location: every stage's definitions merged, plus shared resources.

Each stage folder owns a thin `definitions.py` over plain functions; this module only wires them.
"""

import dagster as dg

from memory_pipeline.db import definitions as database
from memory_pipeline.resources import DatabaseResource

database_job = dg.define_asset_job(
    "database_job",
    selection=[database.memory_database],
    description="Apply migrations and report the database's schema version and size.",
)

defs = dg.Definitions.merge(
    database.defs,
    dg.Definitions(jobs=[database_job], resources={"db": DatabaseResource()}),
)
