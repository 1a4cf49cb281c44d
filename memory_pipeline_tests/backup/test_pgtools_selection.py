"""Which pg_dump/pg_restore a backup uses for a server of a given version (issue 13, finding 3).

The rules are checked on real binaries where they come from: pg_restore 18 against a PostgreSQL 15
server fails on `SET transaction_timeout`, pg_restore 15 cannot read an archive written by pg_dump
18 (memory_pipeline_tests/external/test_dump_tools_pg15.py runs both against a real 15 server).
Here: version parsing, the choice among candidates, and the advice when nothing fits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.backup.pgtools import (
    PgTools,
    candidate_tools,
    parse_version,
    restores_into,
    select_tools,
    tools_advice,
    tools_check,
    unreadable_note,
    wanted_majors,
)
from memory_pipeline.errors import UserError


def tools(major: int, source: str = "bundled") -> PgTools:
    here = Path(f"/opt/pg{major}/bin")
    return PgTools(here / "pg_dump", here / "pg_restore", major, f"{major}.2", source)


BUNDLED = tools(18)
DEBIAN_15 = tools(15, "/usr/lib/postgresql/15/bin")
DEBIAN_16 = tools(16, "/usr/lib/postgresql/16/bin")
DEBIAN_17 = tools(17, "/usr/lib/postgresql/17/bin")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pg_dump (PostgreSQL) 18.6\n", (18, "18.6")),
        ("pg_dump (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", (15, "15.18")),
        ("pg_dump (PostgreSQL) 17.2 (Homebrew)", (17, "17.2")),
        ("pg_dump (PostgreSQL) 19devel", (19, "19")),
    ],
)
def test_versions_are_parsed_from_what_pg_dump_prints(text: str, expected: tuple) -> None:
    assert parse_version(text) == expected


def test_a_program_that_is_not_pg_dump_is_refused() -> None:
    with pytest.raises(UserError, match="not a PostgreSQL version"):
        parse_version("mysqldump  Ver 10.19")


@pytest.mark.parametrize(
    ("server", "candidates", "chosen"),
    [
        (18, [BUNDLED], 18),
        (18, [BUNDLED, DEBIAN_15], 18),  # an older installation is never used for a newer server
        (17, [BUNDLED], 18),  # newer tools dump and restore 17
        (17, [BUNDLED, DEBIAN_17], 17),  # the server's own major first
        (16, [BUNDLED, DEBIAN_15, DEBIAN_16], 16),
        (15, [BUNDLED, DEBIAN_15], 15),
        (15, [BUNDLED, DEBIAN_16], 16),  # 16 dumps and restores 15
    ],
)
def test_the_servers_own_major_else_the_oldest_newer_one_that_restores_into_it(
    server: int, candidates: list[PgTools], chosen: int
) -> None:
    assert select_tools(candidates, server).major == chosen


def test_pg_restore_17_and_newer_never_restores_into_15_or_16() -> None:
    assert not restores_into(18, 15) and not restores_into(17, 16)
    assert restores_into(16, 15) and restores_into(15, 15) and restores_into(18, 17)
    assert wanted_majors(15) == "15 to 16" and wanted_majors(16) == "16"
    assert wanted_majors(17) == "17 or newer" and wanted_majors(19) == "19 or newer"


def test_a_15_server_with_only_the_bundled_18_tools_says_what_to_install() -> None:
    with pytest.raises(UserError) as info:
        select_tools([BUNDLED], 15)
    message = str(info.value)
    assert "server is version 15, which needs pg_dump/pg_restore 15 to 16" in message
    assert "transaction_timeout" in message
    assert "apt install postgresql-client-15" in message and "MEMORY_PG_DUMP" in message
    assert "\n" not in message


def test_a_server_newer_than_every_candidate_says_to_set_memory_pg_dump() -> None:
    with pytest.raises(UserError, match="version 19, which needs pg_dump/pg_restore 19 or newer"):
        select_tools([BUNDLED, DEBIAN_17], 19)
    custom = tools(16, "MEMORY_PG_DUMP")
    message = tools_advice([custom], 18, custom=True)
    assert message.startswith("the PostgreSQL server is version 18 but /opt/pg16/bin/pg_dump")
    assert "set MEMORY_PG_DUMP to a pg_dump 18 or newer" in message
    message = tools_advice([tools(18, "MEMORY_PG_DUMP")], 15, custom=True)
    assert "cannot restore into a server older than 17" in message
    assert "set MEMORY_PG_DUMP to a pg_dump 15 to 16" in message


def test_the_pair_that_reads_every_backup_in_the_directory_is_preferred() -> None:
    # A 17 server whose older backups were written by pg_dump 18: 18 reads them all, 17 not.
    assert select_tools([BUNDLED, DEBIAN_17], 17, archive_majors=[18, 17]).major == 18
    assert select_tools([BUNDLED, DEBIAN_17], 17, archive_majors=[17]).major == 17
    # A 15 server and backups of pg_dump 18: nothing restores those into 15, the rest still works.
    assert select_tools([BUNDLED, DEBIAN_15], 15, archive_majors=[18, 15]).major == 15
    note = unreadable_note(DEBIAN_15, "2026-03-19T033000Z", 18, 15)
    assert "written by pg_dump 18" in note and "PostgreSQL 17+ server" in note


def test_db_check_line_for_dump_tools(tmp_path: Path) -> None:
    ok, line = tools_check(None, 180006, {})
    assert ok and line.startswith("ok       dump tools: pg_dump/pg_restore 18.")
    assert "(bundled) for PostgreSQL 18" in line
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("pg_dump", "pg_restore"):
        (fake / name).write_text('#!/bin/sh\necho "pg_dump (PostgreSQL) 18.6"\n')
        (fake / name).chmod(0o755)
    ok, line = tools_check(fake / "pg_dump", 150004, {})
    assert not ok and line.startswith("MISSING  dump tools: the PostgreSQL server is version 15")


def test_candidates_are_memory_pg_dump_alone_or_the_bundled_and_installed_ones(
    tmp_path: Path,
) -> None:
    found = candidate_tools(None)
    assert found[0].source == "bundled" and found[0].major == 18
    assert all(t.pg_restore.name == "pg_restore" for t in found)
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("pg_dump", "pg_restore"):
        (fake / name).write_text('#!/bin/sh\necho "pg_dump (PostgreSQL) 16.4"\n')
        (fake / name).chmod(0o755)
    [only] = candidate_tools(fake / "pg_dump")
    assert (only.major, only.source) == (16, "MEMORY_PG_DUMP")
