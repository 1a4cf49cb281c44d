"""`memory-pipeline db reader-password` and the file it writes, MEMORY_HOME/reader-url (issue 31,
must-have 7).

- Before the first `run` (no database yet, or one nothing has migrated) it says, in one line, to
  run `memory-pipeline run` (or `db migrate`) first, and writes nothing.
- The file holds a URL per database: a second database's call no longer overwrites the first
  one's URL. memory_reader is one role per server, so a new password also updates the URLs of the
  server's other databases. A file in the old format (one URL) is still read, and kept on write.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from memory_pipeline.db.connection import parse_database_url, resolve_urls
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.db.reader import READER_URL_FILE, stored_reader_url, write_reader_url
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings
from memory_pipeline_tests.conftest import create_database, drop_database

CLI = str(Path(sys.executable).parent / "memory-pipeline")


def cli(home: Path, database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url, "MEMORY_HOME": str(home)}
    env.pop("MEMORY_READER_URL", None)
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=300)


def reader_for(home: Path, database_url: str) -> str:
    settings = Settings.from_env().model_copy(
        update={
            "memory_home": home,
            "database_url": database_url,
            "reader_url": None,
            "dagster_pg_url": None,
        }
    )
    return resolve_urls(settings, start=False).reader


def password(url: str) -> str | None:
    return conninfo_to_dict(url).get("password")  # type: ignore[return-value]


@pytest.fixture
def second_db_url(pg_server: EmbeddedServer, admin_url: str, template_db: str) -> Iterator[str]:
    name = create_database(admin_url, template=template_db)
    yield pg_server.uri(name)
    drop_database(admin_url, name)


# --- before the first run ----------------------------------------------------------------------
@pytest.mark.parametrize("state", ["no database", "nothing migrated"])
def test_reader_password_before_the_first_run_says_to_run_it_first(
    pg_server: EmbeddedServer, empty_db_url: str, tmp_path: Path, state: str
) -> None:
    url = pg_server.uri("memory_not_created_yet") if state == "no database" else empty_db_url
    result = cli(tmp_path, url, "db", "reader-password")
    assert result.returncode != 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "memory-pipeline run" in lines[0] and "memory-pipeline db migrate" in lines[0], lines
    assert "first" in lines[0]
    assert not (tmp_path / READER_URL_FILE).exists()


# --- a URL per database ------------------------------------------------------------------------
def test_reader_password_keeps_a_url_per_database(
    db_url: str, second_db_url: str, tmp_path: Path
) -> None:
    for url in (db_url, second_db_url):
        result = cli(tmp_path, url, "db", "reader-password")
        assert result.returncode == 0, result.stderr
    first, second = reader_for(tmp_path, db_url), reader_for(tmp_path, second_db_url)
    assert conninfo_to_dict(first)["dbname"] == conninfo_to_dict(db_url)["dbname"]
    assert conninfo_to_dict(second)["dbname"] == conninfo_to_dict(second_db_url)["dbname"]
    assert conninfo_to_dict(first)["user"] == conninfo_to_dict(second)["user"] == "memory_reader"
    # One role on one server: the second call's password is the one both URLs now carry.
    assert password(first) and password(first) == password(second)
    path = tmp_path / READER_URL_FILE
    assert (path.stat().st_mode & 0o777) == 0o600
    assert len(path.read_text().splitlines()) == 2
    cli(tmp_path, db_url, "db", "reader-password")  # again: replaced, not added
    assert len(path.read_text().splitlines()) == 2
    assert password(reader_for(tmp_path, db_url)) == password(reader_for(tmp_path, second_db_url))
    assert password(reader_for(tmp_path, db_url)) != password(first)


APP_A = parse_database_url("postgresql://me:secret@db.example:5433/memory")
APP_B = parse_database_url("postgresql://me:secret@db.example:5433/other")
APP_C = parse_database_url("postgresql://me:secret@elsewhere.example/memory")
URL_A = "postgresql://memory_reader:pwA@db.example:5433/memory"
URL_B = "postgresql://memory_reader:pwB@db.example:5433/other"
URL_C = "postgresql://memory_reader:pwC@elsewhere.example/memory"


def test_urls_of_other_servers_and_databases_survive_a_write(tmp_path: Path) -> None:
    write_reader_url(tmp_path, URL_A)
    write_reader_url(tmp_path, URL_C)
    assert stored_reader_url(tmp_path, APP_A) == URL_A
    assert stored_reader_url(tmp_path, APP_C) == URL_C
    assert stored_reader_url(tmp_path, APP_B) is None  # never another database's URL
    write_reader_url(tmp_path, URL_B)  # same server as A: its new password is A's too
    assert stored_reader_url(tmp_path, APP_B) == URL_B
    assert password(stored_reader_url(tmp_path, APP_A) or "") == "pwB"
    assert stored_reader_url(tmp_path, APP_C) == URL_C  # another server keeps its own
    assert len((tmp_path / READER_URL_FILE).read_text().splitlines()) == 3


def test_the_old_single_url_file_is_still_read_and_kept(tmp_path: Path) -> None:
    path = tmp_path / READER_URL_FILE
    path.write_text(URL_A + "\n")  # what versions before issue 31 wrote
    path.chmod(0o600)
    assert stored_reader_url(tmp_path, APP_A) == URL_A
    write_reader_url(tmp_path, URL_C)
    assert stored_reader_url(tmp_path, APP_A) == URL_A
    assert stored_reader_url(tmp_path, APP_C) == URL_C


def test_a_line_that_is_not_a_url_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / READER_URL_FILE
    path.write_text(URL_A + "\nnot a url = = =\n")
    path.chmod(0o600)
    with pytest.raises(UserError) as error:
        stored_reader_url(tmp_path, APP_C)
    message = str(error.value)
    assert "\n" not in message and "line 2" in message and "reader-password" in message
    assert "pwA" not in message
