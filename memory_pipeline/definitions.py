"""The Dagster code location: every stage's definitions merged, plus shared resources.

Each stage folder owns a thin `definitions.py` over plain functions; this module only wires them
and configures the resources from the environment (`memory_pipeline/settings.py`).
"""

import dagster as dg

import memory_pipeline.dagster_patches  # noqa: F401 - a run blocked on a pool sleeps, not spins
from memory_pipeline.backup import definitions as backup
from memory_pipeline.backup.resource import BackupResource
from memory_pipeline.capture import definitions as capture
from memory_pipeline.db import definitions as database
from memory_pipeline.dream import definitions as dream
from memory_pipeline.dream.definitions import DreamResource
from memory_pipeline.embedding import definitions as embedding
from memory_pipeline.entities import definitions as entities
from memory_pipeline.express import definitions as express
from memory_pipeline.express.resource import ExpressResource
from memory_pipeline.inbox import definitions as inbox
from memory_pipeline.inbox.resource import InboxResource
from memory_pipeline.jobs import dream_job, ingest_job, maintenance_job
from memory_pipeline.reinforcement import definitions as reinforcement
from memory_pipeline.relationships import definitions as relationships
from memory_pipeline.resources import (
    DatabaseResource,
    EmbeddingResource,
    SemanticResource,
    SourcesResource,
)
from memory_pipeline.schedules import hourly_catch_up, hourly_maintenance, semantic_pass_sensor
from memory_pipeline.semantic import definitions as semantic
from memory_pipeline.settings import Settings


def resources(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    return {
        "db": DatabaseResource(),
        "sources": SourcesResource.from_settings(settings),
        "inbox": InboxResource.from_settings(settings),
        "semantic": SemanticResource.from_settings(settings),
        "embedding": EmbeddingResource.from_settings(settings),
        "backup": BackupResource.from_settings(settings),
        "dream": DreamResource.from_settings(settings),
        "express": ExpressResource.from_settings(settings),
    }


defs = dg.Definitions.merge(
    database.defs,
    capture.defs,
    inbox.defs,
    semantic.defs,
    embedding.defs,
    entities.defs,
    relationships.defs,
    dream.build_defs(Settings.from_env()),
    reinforcement.defs,
    backup.defs,
    express.defs,
    dg.Definitions(
        jobs=[ingest_job, maintenance_job, dream_job],
        schedules=[hourly_catch_up, hourly_maintenance],
        sensors=[semantic_pass_sensor],
        resources=resources(Settings.from_env()),
    ),
)
