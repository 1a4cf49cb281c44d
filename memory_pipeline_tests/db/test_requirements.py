"""What the application role needs on a server, checked before anything starts (issue 13).

These run against the session's embedded server as NON-superuser roles (`LOGIN CREATEDB
CREATEROLE`, what the README asks of an administrator): PostgreSQL enforces the same privileges
over its socket as over TCP. memory_pipeline_tests/external/ does the same on a separate cluster
with password authentication.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memory_pipeline.db.connection import parse_database_url, resolve_urls
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.db.reader import READER_URL_FILE, stored_reader_url, write_reader_url
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

CLI = str(Path(sys.executable).parent / "memory-pipeline")


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=300
    )


def databases(admin_url: str) -> set[str]:
    with psycopg.connect(admin_url) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database")}


@pytest.fixture
def app_role(admin_url: str) -> Iterator[str]:
    """A role as the README has an administrator create it: no superuser."""
    role = f"app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN CREATEDB CREATEROLE").format(sql.Identifier(role))
        )
    yield role
    with psycopg.connect(admin_url, autocommit=True) as conn:
        owned = conn.execute(
            "SELECT datname FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba"
            " WHERE r.rolname = %s",
            [role],
        ).fetchall()
        for (name,) in owned:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        try:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
        except psycopg.Error:
            pass  # still granted something somewhere: harmless in a throwaway cluster


def role_url(server: EmbeddedServer, role: str, dbname: str) -> str:
    return server.uri(dbname, user=role)


def test_migrate_without_pgvector_rights_says_what_the_admin_runs_and_applies_nothing(
    pg_server: EmbeddedServer, admin_url: str, template_db: str, app_role: str, tmp_path: Path
) -> None:
    # Finding 1: a CREATEROLE CREATEDB role, a database without pgvector (template1 of this
    # server has none): `db migrate` used to end in a traceback at 001_extensions.sql.
    db = f"req_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(db), sql.Identifier(app_role)
            )
        )
    env = {"DATABASE_URL": role_url(pg_server, app_role, db), "MEMORY_HOME": str(tmp_path)}
    result = cli("db", "migrate", env=env)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(
        f"error: pgvector is not enabled in database {db}, and role {app_role} may not enable it"
    )
    assert f"an administrator runs once: psql -d {db} -c 'CREATE EXTENSION vector'" in (
        result.stderr
    )
    with psycopg.connect(role_url(pg_server, app_role, db)) as conn:
        assert conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,)
    assert f"{db}_dagster" not in databases(admin_url)  # nothing created either

    # `db check` lists every requirement, one line each, with the fix.
    check = cli("db", "check", env=env)
    assert check.returncode == 2 and "Traceback" not in check.stderr
    lines = check.stdout.splitlines()
    assert f"ok       database {db}: exists" in lines
    assert any(
        line.startswith(f"MISSING  pgvector in database {db}: pgvector is not enabled")
        for line in lines
    )
    assert any(
        line.startswith("MISSING  pgvector in scratch databases: template1 lacks pgvector")
        and line.endswith("psql -d template1 -c 'CREATE EXTENSION vector'")
        for line in lines
    )
    # memory_reader exists (template_db's migrations created it); this role may not alter it.
    assert any(
        line.startswith("MISSING  role memory_reader: role memory_reader exists but role")
        and f"GRANT memory_reader TO {app_role} WITH ADMIN OPTION;" in line
        for line in lines
    )
    assert any(line.startswith("ok       dump tools: pg_dump/pg_restore 18.") for line in lines)

    # The administrator does what the lines say; then the role migrates on its own.
    with psycopg.connect(role_url(pg_server, "postgres", db), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    again = cli("db", "migrate", env=env)
    assert again.returncode == 2 and "GRANT memory_reader TO" in again.stderr
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("GRANT memory_reader TO {} WITH ADMIN OPTION").format(sql.Identifier(app_role))
        )
    done = cli("db", "migrate", env=env)
    assert done.returncode == 0, done.stderr
    assert "applied " in done.stderr
    # `run` needs more (the restore check of its backup): it refuses before it starts.
    run = cli("run", env={**env, "MEMORY_SOURCES": "demo"})
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("error: template1 lacks pgvector")
    with psycopg.connect(role_url(pg_server, app_role, db)) as conn:
        assert conn.execute("SELECT count(*) FROM captured_tasks").fetchone() == (0,)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://me@db.example:5432", "DATABASE_URL names no database"),
        ("postgresql://me@db.example/", "DATABASE_URL names no database"),
        ("host=db.example user=me", "DATABASE_URL names no database"),
        ("mysql://me@db.example/memory", "DATABASE_URL starts with mysql://"),
        ("postgresql+psycopg2://me:pw@db/memory", "(that scheme is for DAGSTER_PG_URL)"),
        ("not a url", "DATABASE_URL is not a PostgreSQL connection URL"),
    ],
)
def test_a_bad_database_url_is_one_line_without_its_password(url: str, message: str) -> None:
    with pytest.raises(UserError) as info:
        parse_database_url(url)
    assert message in str(info.value) and "pw" not in str(info.value)
    assert "\n" not in str(info.value)


def test_a_database_url_without_a_database_creates_nothing(
    pg_server: EmbeddedServer, admin_url: str, tmp_path: Path
) -> None:
    # Finding 6: libpq falls back to the user's name, and a stray `postgres_dagster` appeared.
    before = databases(admin_url)
    socket_dir = pg_server.status().socket_dir
    url = f"postgresql://postgres@/?host={socket_dir}&port=5432"
    result = cli("db", "migrate", env={"DATABASE_URL": url, "MEMORY_HOME": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.startswith("error: DATABASE_URL names no database")
    assert len(result.stderr.splitlines()) == 1
    assert databases(admin_url) == before


# --- the stored reader URL ---------------------------------------------------------------------
APP = "postgresql://me:secret@db.example:5433/memory"


def _settings(home: Path, **env: str) -> Settings:
    return Settings.from_env().model_copy(
        update={
            "memory_home": home,
            "database_url": env.get("DATABASE_URL", APP),
            "reader_url": env.get("MEMORY_READER_URL"),
            "dagster_pg_url": None,
        }
    )


def test_the_stored_reader_url_is_used_for_its_database_only(tmp_path: Path) -> None:
    derived = resolve_urls(_settings(tmp_path), start=False).reader
    assert derived == "postgresql://memory_reader@db.example:5433/memory"  # no password
    stored = "postgresql://memory_reader:pw1@db.example:5433/memory"
    path = write_reader_url(tmp_path, stored)
    assert path == tmp_path / READER_URL_FILE and (path.stat().st_mode & 0o777) == 0o600
    assert resolve_urls(_settings(tmp_path), start=False).reader == stored
    # The environment wins; another server or database never gets this password.
    env = "postgresql://memory_reader:pw2@db.example:5433/memory"
    assert resolve_urls(_settings(tmp_path, MEMORY_READER_URL=env), start=False).reader == env
    other = "postgresql://me@other.example:5433/memory"
    assert "pw1" not in resolve_urls(_settings(tmp_path, DATABASE_URL=other), start=False).reader
    assert stored_reader_url(tmp_path, parse_database_url(APP.replace("/memory", "/m2"))) is None


def test_a_stored_reader_url_others_can_read_is_refused(tmp_path: Path) -> None:
    path = write_reader_url(tmp_path, "postgresql://memory_reader:pw@db.example:5433/memory")
    path.chmod(0o644)
    with pytest.raises(UserError, match="chmod 600"):
        resolve_urls(_settings(tmp_path), start=False)
