"""The whole system on a PostgreSQL server the user already runs, with least privilege (issue 13).

A second cluster, not the embedded server: its own data directory, TCP on 127.0.0.1, password
(SCRAM) authentication only, started from the embedded distribution's PostgreSQL 18 + pgvector
binaries. An administrator creates the application role exactly as the README says (`LOGIN
PASSWORD ... CREATEROLE CREATEDB`, no superuser) and, once told to, enables pgvector in template1.
Then, with DATABASE_URL pointing at it as that role: the refusal before the admin step, migrate,
serving without and with memory_reader's password, `run` on the demo corpus, search, MCP through
the SDK's client in process, `backup now`, `verify` and a restore.

Only PostgreSQL 18 runs here: Debian's PostgreSQL 15 installs from apt, but Debian has no
pgvector package, and building pgvector from source is not possible on this CI. What 15 needs of
the dump tools is tested against a real 15 server in test_dump_tools_pg15.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from memory_pipeline.db.embedded import bin_dir
from memory_pipeline.db.reader import READER_URL_FILE
from memory_pipeline_tests.external.cluster import Cluster
from serving.mcp.pool import ReaderPool
from serving.mcp.tools import build_server
from serving.search import QueryEmbedder

pytestmark = pytest.mark.anyio

CLI = str(Path(sys.executable).parent / "memory-pipeline")
APP_ROLE = "memapp"
APP_PASSWORD = "app-pw-7f3a9c"
QUERY = "why did we stop using Redis for rate limiting?"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    server = Cluster(bin_dir(), tmp_path_factory.mktemp("external18")).start()
    # What the README has an administrator run first.
    server.admin(f"CREATE ROLE {APP_ROLE} LOGIN PASSWORD '{APP_PASSWORD}' CREATEROLE CREATEDB")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("external_home")


@pytest.fixture(scope="module")
def env(cluster: Cluster, home: Path) -> Iterator[dict[str, str]]:
    """The user's environment: DATABASE_URL as the application role, nothing else set."""
    values = {
        "DATABASE_URL": cluster.url("memory", APP_ROLE, APP_PASSWORD),
        "MEMORY_HOME": str(home),
        "MEMORY_SOURCES": "demo",
        "CODEX_HOME": str(home / "no-codex"),
        "CLAUDE_CONFIG_DIR": str(home / "no-claude"),
    }
    with pytest.MonkeyPatch.context() as patch:  # in-process MCP reads the same settings
        for key in ("MEMORY_READER_URL", "DAGSTER_HOME", "DAGSTER_PG_URL", "MEMORY_BACKUP_KEY"):
            patch.delenv(key, raising=False)
        for key, value in values.items():
            patch.setenv(key, value)
        yield values


def cli(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    for key in ("MEMORY_READER_URL", "DAGSTER_HOME", "DAGSTER_PG_URL"):
        full.pop(key, None)
    return subprocess.run([CLI, *args], env=full, capture_output=True, text=True, timeout=timeout)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    return result.stderr


def test_before_the_admin_step_the_pipeline_refuses_and_creates_nothing(
    cluster: Cluster, env: dict[str, str]
) -> None:
    error = one_line_error(cli(env, "run"))
    assert error.startswith("error: database memory would be created without pgvector")
    assert "an administrator runs once: psql -d template1 -c 'CREATE EXTENSION vector'" in error
    assert not {"memory", "memory_dagster"} & cluster.databases()
    check = cli(env, "db", "check")
    assert check.returncode == 2
    assert "ok       database memory: database memory does not exist; this role creates it" in (
        check.stdout
    )
    assert "MISSING  pgvector in the new database memory:" in check.stdout
    assert "MISSING  pgvector in scratch databases: template1 lacks pgvector" in check.stdout


@pytest.fixture(scope="module")
def migrated(cluster: Cluster, env: dict[str, str]) -> None:
    cluster.admin("CREATE EXTENSION vector", "template1")  # the README's one admin step
    result = cli(env, "db", "migrate")
    assert result.returncode == 0, result.stderr
    assert {"memory", "memory_dagster"} <= cluster.databases()


async def test_serving_without_memory_readers_password_says_what_to_run(
    migrated: None, env: dict[str, str]
) -> None:
    # Finding 4: a traceback ending in `fe_sendauth: no password supplied` for the CLI, and
    # after about 35 s a "try again later" from MCP.
    error = one_line_error(cli(env, "search", QUERY))
    assert "the database refused role memory_reader (fe_sendauth: no password supplied)" in error
    assert "run `memory-pipeline db reader-password` once" in error
    started = time.monotonic()
    pool = ReaderPool()
    try:
        async with Client(
            build_server(pool=pool, embedder=QueryEmbedder("http://127.0.0.1:9"))
        ) as c:
            r = await c.call_tool("memory_search", {"query": QUERY})
    finally:
        pool.close()
    assert r.is_error is True
    text = r.content[0].text  # type: ignore[union-attr]
    assert "the memory database cannot be used: the database server refused the serving role" in (
        text
    )
    assert "memory-pipeline db reader-password" in text and "try again" not in text
    assert time.monotonic() - started < 10
    check = cli(env, "db", "check")
    assert check.returncode == 2
    assert "MISSING  memory_reader login: memory_reader cannot log in (" in check.stdout


@pytest.fixture(scope="module")
def reader_password(migrated: None, env: dict[str, str], home: Path) -> None:
    result = cli(env, "db", "reader-password")
    assert result.returncode == 0, result.stderr
    path = home / READER_URL_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "memory_reader:" in path.read_text() and APP_PASSWORD not in path.read_text()
    assert path.read_text().split("@")[0].split(":")[-1] not in result.stderr  # never printed


def test_every_requirement_is_met_after_the_readme_steps(
    reader_password: None, env: dict[str, str]
) -> None:
    check = cli(env, "db", "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "MISSING" not in check.stdout and "every requirement is met" in check.stdout
    assert "ok       CREATEDB:" in check.stdout
    assert "ok       pgvector in scratch databases: template1 has pgvector" in check.stdout


@pytest.fixture(scope="module")
def ran(reader_password: None, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return cli(env, "run", timeout=900)


async def test_run_search_mcp_backup_and_verify_as_the_application_role(
    ran: subprocess.CompletedProcess[str], cluster: Cluster, env: dict[str, str]
) -> None:
    # `run` ends with a backup whose restore check passed: as a role that cannot create pgvector.
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "memory_backup" in ran.stderr

    found = cli(env, "search", QUERY, "--json")
    assert found.returncode == 0, found.stderr
    assert len(json.loads(found.stdout)["results"]) > 0

    pool = ReaderPool()  # MEMORY_READER_URL unset: the stored URL of `db reader-password`
    try:
        async with Client(
            build_server(pool=pool, embedder=QueryEmbedder("http://127.0.0.1:9"))
        ) as c:
            r = await c.call_tool("memory_search", {"query": QUERY, "limit": 5})
            assert r.is_error is False, r.content
            assert len(r.structured_content["results"]) > 0  # type: ignore[index]
            r = await c.call_tool("memory_list", {})
            assert r.is_error is False and r.structured_content["items"]  # type: ignore[index]
    finally:
        pool.close()

    now = cli(env, "backup", "now")
    assert now.returncode == 0, now.stderr
    assert "verified " in now.stderr
    verify = cli(env, "backup", "verify")
    assert verify.returncode == 0, verify.stderr
    listed = cli(env, "backup", "list")
    assert listed.stdout.count("verified") >= 2 and "unverified" not in listed.stdout
    backup_id = listed.stdout.splitlines()[1].split()[0]
    restored = cli(env, "backup", "restore", backup_id, "--to", "memory_copy")
    assert restored.returncode == 0, restored.stderr
    assert not [d for d in cluster.databases() if "_verify_" in d or "_restore_" in d]
