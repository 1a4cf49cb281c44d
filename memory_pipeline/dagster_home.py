"""Dagster's instance for this user: `<MEMORY_HOME>/dagster`, stored in PostgreSQL.

Every Dagster process we start (in-process runs, the webserver, the daemon) gets the same
environment from here, so they all see one instance: the repo's `dagster.yaml` copied into
DAGSTER_HOME, and DAGSTER_PG_URL pointing at the `dagster` database.
"""

from __future__ import annotations

import os
import shutil

import dagster as dg

from memory_pipeline.db import DatabaseUrls
from memory_pipeline.settings import REPO_ROOT, Settings


def dagster_env(settings: Settings, urls: DatabaseUrls) -> dict[str, str]:
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    return {"DAGSTER_HOME": str(home), "DAGSTER_PG_URL": urls.dagster}


def dagster_instance(settings: Settings, urls: DatabaseUrls) -> dg.DagsterInstance:
    """The user's Dagster instance, for runs executed in this process."""
    os.environ.update(dagster_env(settings, urls))
    return dg.DagsterInstance.get()
