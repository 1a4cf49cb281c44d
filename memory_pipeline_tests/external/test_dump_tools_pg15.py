"""The dump-tool rules against a real PostgreSQL 15 server (issue 13, finding 3).

Debian's PostgreSQL 15 is installed on machines like the CI's (`apt install postgresql-15`), but
Debian has no pgvector package for it, so the whole pipeline cannot run there (README: the
external-server suite runs against 18). What the backups need from the client programs can be
shown on any database, and it is: pg_restore 18 fails against 15 (`transaction_timeout`),
pg_restore 15 cannot read what pg_dump 18 wrote, and the pair chosen for a 15 server is 15's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.backup.pgtools import candidate_tools, choose_tools, pg_tools
from memory_pipeline_tests.external.cluster import Cluster

PG15 = Path("/usr/lib/postgresql/15/bin")

pytestmark = pytest.mark.skipif(
    not (PG15 / "postgres").exists(), reason="PostgreSQL 15 is not installed (postgresql-15)"
)


@pytest.fixture(scope="module")
def pg15(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(PG15, tmp_path_factory.mktemp("pg15")).start()
    cluster.admin("CREATE DATABASE source")
    cluster.admin("CREATE TABLE notes (id int PRIMARY KEY, body text)", "source")
    cluster.admin("INSERT INTO notes VALUES (1, 'kept'), (2, 'also kept')", "source")
    yield cluster
    cluster.stop()


def _dump(pg_dump: Path, cluster: Cluster, archive: Path) -> None:
    subprocess.run(
        [str(pg_dump), "--format=custom", f"--file={archive}", f"--dbname={cluster.url('source')}"],
        check=True,
        capture_output=True,
    )


def _restore(pg_restore: Path, cluster: Cluster, archive: Path, dbname: str) -> str:
    cluster.admin(f"CREATE DATABASE {dbname}")
    result = subprocess.run(
        [
            str(pg_restore),
            "--single-transaction",
            "--exit-on-error",
            f"--dbname={cluster.url(dbname)}",
            str(archive),
        ],
        capture_output=True,
        text=True,
    )
    return result.stderr if result.returncode else ""


def test_the_rules_hold_for_real_binaries_and_the_15_pair_is_chosen(
    pg15: Cluster, tmp_path: Path
) -> None:
    bundled = pg_tools(None)
    with psycopg.connect(pg15.url("postgres")) as conn:
        server = conn.info.server_version
    assert server // 10000 == 15 and bundled.major == 18

    # pg_dump 18 dumps 15, but its pg_restore cannot restore into 15 ...
    by18 = tmp_path / "by18.dump"
    _dump(bundled.pg_dump, pg15, by18)
    failed = _restore(bundled.pg_restore, pg15, by18, "restored_by_18")
    assert 'unrecognized configuration parameter "transaction_timeout"' in failed
    # ... and pg_restore 15 cannot read what pg_dump 18 wrote.
    failed = _restore(PG15 / "pg_restore", pg15, by18, "read_by_15")
    assert "unsupported version" in failed

    # So for this server the candidates' choice is 15's own pair, and it round-trips.
    assert any(t.major == 15 for t in candidate_tools(None))
    chosen = choose_tools(None, server)
    assert chosen.major == 15 and chosen.pg_dump == PG15 / "pg_dump"
    by15 = tmp_path / "by15.dump"
    _dump(chosen.pg_dump, pg15, by15)
    assert _restore(chosen.pg_restore, pg15, by15, "restored_by_15") == ""
    with psycopg.connect(pg15.url("restored_by_15")) as conn:
        assert conn.execute("SELECT body FROM notes ORDER BY id").fetchall() == [
            ("kept",),
            ("also kept",),
        ]
