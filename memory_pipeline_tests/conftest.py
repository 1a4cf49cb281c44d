"""Shared fixtures: one real embedded PostgreSQL + pgvector server per test session.

Every test that needs a database gets its own, cloned from a migrated template (cloning takes
milliseconds), and it is dropped afterwards. Nothing touches the user's MEMORY_HOME: the session
points MEMORY_HOME, CODEX_HOME, CLAUDE_CONFIG_DIR, every other registered agent's home variable
and DAGSTER_HOME at temporary directories.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memory_pipeline.db.connection import READER_ROLE, connect, sqlalchemy_url
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.db.migrate import migrate
from memory_pipeline.models.sources import SOURCES
from memory_pipeline.settings import REPO_ROOT

TEMPLATE_DB = "mp_test_template"

# The tests use fixed days of past years: their partitions start early enough for all of them
# (set before any test module builds the definitions). A new home's default, the first captured
# day, is tested in capture/test_partitions.py in processes of its own.
os.environ["MEMORY_PARTITION_START"] = "2020-01-01"


@pytest.fixture(scope="session")
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("memory_home")
    env = pytest.MonkeyPatch()
    env.setenv("MEMORY_HOME", str(home))
    env.setenv("CODEX_HOME", str(home / "no-codex"))
    env.setenv("CLAUDE_CONFIG_DIR", str(home / "no-claude"))
    for source in SOURCES:  # every other agent's home too (models/sources.py): never the user's
        for root in source.roots:
            if root.env and root.env not in (
                "CODEX_HOME",
                "CLAUDE_CONFIG_DIR",
                "MEMORY_IMPORT_DIR",
            ):
                env.setenv(root.env, str(home / f"no-{source.name}"))
    env.setenv("DAGSTER_HOME", str(home / "dagster"))
    for key in (
        "DATABASE_URL",
        "DAGSTER_PG_URL",
        "MEMORY_READER_URL",
        "MEMORY_SEMANTIC_MODEL",
        "MEMORY_SOURCES",
        "MEMORY_IMPORT_DIR",
        "MEMORY_BACKUP_KEY",
    ):
        env.delenv(key, raising=False)
    yield home
    env.undo()


@pytest.fixture(scope="session")
def pg_server(session_home: Path) -> Iterator[EmbeddedServer]:
    server = EmbeddedServer(session_home / "pgdata")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def admin_url(pg_server: EmbeddedServer) -> str:
    return pg_server.uri("postgres")


@pytest.fixture(scope="session")
def template_db(pg_server: EmbeddedServer, admin_url: str) -> str:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(TEMPLATE_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
    migrate(pg_server.uri(TEMPLATE_DB))
    return TEMPLATE_DB


def create_database(admin_url: str, template: str | None = None) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        query = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template)
        )
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(query)
    return name


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture
def empty_db_url(pg_server: EmbeddedServer, admin_url: str) -> Iterator[str]:
    """A database with nothing in it (not even migrations)."""
    name = create_database(admin_url)
    yield pg_server.uri(name)
    drop_database(admin_url, name)


@pytest.fixture
def db_url(pg_server: EmbeddedServer, admin_url: str, template_db: str) -> Iterator[str]:
    """A freshly migrated database of its own, as the owner role."""
    name = create_database(admin_url, template=template_db)
    yield pg_server.uri(name)
    drop_database(admin_url, name)


@pytest.fixture
def reader_url(db_url: str) -> str:
    """The same database, as the read-only serving role."""
    return db_url.replace("postgresql://postgres@", f"postgresql://{READER_ROLE}@", 1)


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    with connect(db_url, autocommit=True) as connection:
        yield connection


# --- serving: what the search, context and MCP tests share ------------------------------------
@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    """A connection as the read-only serving role."""
    with connect(reader_url, autocommit=True) as connection:
        yield connection


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    """The query embedder, warmed up. The local space needs no server: the host is never used."""
    from memory_pipeline.embedding.spaces import LOCAL_SPACE
    from serving.search import QueryEmbedder

    e = QueryEmbedder("http://127.0.0.1:9")
    e.embed(LOCAL_SPACE, "warm up")
    return e


@pytest.fixture
def pool(reader_url: str):  # type: ignore[no-untyped-def]
    """The MCP server's read-only connection pool on the test database."""
    from serving.mcp.pool import ReaderPool

    p = ReaderPool(reader_url)
    yield p
    p.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def dagster_pg_url(pg_server: EmbeddedServer, admin_url: str) -> Iterator[str]:
    """An empty database for a Dagster instance, as a psycopg2 SQLAlchemy URL."""
    name = create_database(admin_url)
    from psycopg.conninfo import conninfo_to_dict

    yield sqlalchemy_url(conninfo_to_dict(pg_server.uri(name)))
    drop_database(admin_url, name)


@pytest.fixture
def dagster_home(tmp_path: Path, dagster_pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DAGSTER_HOME with the repo's dagster.yaml, its storage on PostgreSQL."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("DAGSTER_PG_URL", dagster_pg_url)
    return home
