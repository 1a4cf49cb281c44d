"""Forget is complete: on a home that ran the whole pipeline (capture, semantic pass, embedding,
keyword index, relationships, dream cycle, briefing, backup), `forget --query WORD
--with-evidence --purge-backups` leaves the word readable nowhere: no row of any table of
either database (ours and Dagster's instance), no `pg_stats` value, no byte of the relation
files of either database on disk, no file under MEMORY_HOME (the keyword index's segments,
digests, logs, caches), no decrypted backup. Every surface is first shown to hold the word, so
the grep can find it. One pipeline home, one `run`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import psycopg
import pytest
import tantivy
from psycopg import sql

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.layout import backup_names
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.settings import Settings
from memory_pipeline_tests.capture.test_capture_assets import codex_home
from memory_pipeline_tests.forget.test_cascade import backup_text
from memory_pipeline_tests.support.pipeline_home import (  # noqa: F401 - fixture
    CLI,
    PipelineHome,
    pipeline_home,
)

pytestmark = pytest.mark.slow

CANARY = "Zanzibarquill"
# The word and its stem (the keyword index and tsvectors hold `zanzibarquil`), in any case.
FIND = re.compile(rb"zanzibarquil", re.IGNORECASE)
OTHER_TASK = "01a0d21f"  # a second thread of the same day, which must keep its memories


def plant(transcript: Path) -> None:
    """The word in a later prompt and in answers of the Codex task (not its first prompt)."""
    text = transcript.read_text()
    assert text.count("memmap2") >= 3 and "would mmap help?" in text
    text = text.replace("memmap2", CANARY).replace("would mmap help?", f"would {CANARY} help?")
    transcript.write_text(text)


def tables_holding(url: str) -> list[str]:
    """Every table (any schema but the catalogs) with a row whose text form holds the word."""
    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n"
            " ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'm', 'p')"
            " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND n.nspname NOT LIKE 'pg_toast%%' ORDER BY 1, 2"
        ).fetchall()
        for schema, table in tables:
            query = sql.SQL("SELECT count(*) FROM {} AS r WHERE r::text ~* %s").format(
                sql.Identifier(schema, table)
            )
            if conn.execute(query, ["zanzibarquil"]).fetchone()[0]:  # type: ignore[index]
                out.append(f"{schema}.{table}")
        stats = conn.execute(
            "SELECT schemaname || '.' || tablename || '.' || attname FROM pg_stats"
            " WHERE concat_ws(' ', most_common_vals::text, histogram_bounds::text,"
            " most_common_elems::text) ~* 'zanzibarquil'"
        ).fetchall()
        out += [f"pg_stats {r[0]}" for r in stats]
    return out


def files_holding(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and FIND.search(p.read_bytes())
    )


def index_terms_holding(memory_home: Path) -> list[str]:
    """The keyword index's term dictionaries (a deleted document's terms stay in its segment
    until a merge; the files compress them, so a byte grep cannot see them)."""
    out = []
    for meta in sorted((memory_home / "keyword-index").rglob("meta.json")):
        searcher = tantivy.Index.open(str(meta.parent)).searcher()
        if searcher.terms_with_prefix("body", "zanzibarquil"):
            out.append(str(meta.parent.relative_to(memory_home)))
    return out


def relation_files_holding(server: EmbeddedServer, admin_url: str, url: str) -> list[str]:
    """The database's relation files on disk (base/<oid>/), after a checkpoint."""
    dbname = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        oid = conn.execute("SELECT oid FROM pg_database WHERE datname = %s", [dbname]).fetchone()
    assert oid is not None
    return [f"{dbname}: {f}" for f in files_holding(server.pgdata / "base" / str(oid[0]))]


def test_forget_leaves_the_word_on_no_surface(
    pipeline_home: PipelineHome,  # noqa: F811
    pg_server: EmbeddedServer,
    admin_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = pipeline_home
    codex_home(home.root, OTHER_TASK)  # into the same CODEX_HOME
    plant(home.transcript)
    env = home.env()
    memory_home = Path(env["MEMORY_HOME"])
    for key in ("MEMORY_HOME", "DATABASE_URL"):
        monkeypatch.setenv(key, env[key])

    ran = subprocess.run([CLI, "run"], env=env, capture_output=True, timeout=600)
    assert ran.returncode == 0, ran.stderr.decode()[-3000:]
    briefed = subprocess.run([CLI, "brief", "--compose"], env=env, capture_output=True, timeout=300)
    assert briefed.returncode == 0, briefed.stderr.decode()[-3000:]

    def everywhere() -> dict[str, list[str]]:
        config = BackupConfig.from_settings(Settings.from_env())
        return {
            "memory db": tables_holding(home.app_url),
            "dagster db": tables_holding(home.dagster_url),
            "relation files": relation_files_holding(pg_server, admin_url, home.app_url)
            + relation_files_holding(pg_server, admin_url, home.dagster_url),
            "MEMORY_HOME": files_holding(memory_home),
            "keyword index": index_terms_holding(memory_home),
            "backups": [
                name
                for name in backup_names(config.backup_dir)
                if FIND.search(backup_text(config.backup_dir / name, config).encode())
            ],
        }

    with psycopg.connect(home.app_url, autocommit=True) as conn:
        conn.execute("ANALYZE")  # what autovacuum does sooner or later
    before = everywhere()
    # Every kind of surface held the word, so the grep below is able to find it.
    assert "public.agent_turns" in before["memory db"] and "public.memories" in before["memory db"]
    assert any(s.startswith("pg_stats") for s in before["memory db"]), before
    assert before["relation files"] and before["backups"] and before["keyword index"], before

    forgot = subprocess.run(
        [CLI, "forget", "--query", CANARY, "--with-evidence", "--yes", "--purge-backups"],
        env=env,
        capture_output=True,
        timeout=600,
    )
    out = forgot.stdout.decode() + forgot.stderr.decode()
    assert forgot.returncode == 0, out[-3000:]
    assert "could not run" not in out, out

    after = everywhere()
    assert after == {k: [] for k in after}, (after, out)
    with psycopg.connect(home.app_url) as conn:  # the other thread of the day kept its memories
        kept = conn.execute("SELECT count(*) FROM captured_tasks").fetchone()[0]  # type: ignore[index]
    assert kept == 1
