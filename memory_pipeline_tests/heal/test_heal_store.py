"""Secrets stored by older rules are healed everywhere, once, by `memory-pipeline run` after the
upgrade, and a second heal changes nothing.

The planted credentials of test_secret_sweep.py (a Codex rollout, a Claude Code session and a
chat import) are captured by the real pipeline, run in this process with the redaction rules of
an "old release" that knew none of them: every secret is stored in full in the turns, titles,
native context, memories, passages, the keyword index, the BM25 statistics, Dagster's records,
and the backup the run ends with. A secret is also left in a hook log and quoted in an asset's
materialization metadata, as an older release wrote them. Then, as after an upgrade, the real
`memory-pipeline run` (a subprocess, current rules) heals first and says so in one line, and:

- no planted secret (nor a fragment the full-text index would keep) is left in any row of any
  table of either database (`pg_dump --data-only`), in the keyword index's term dictionary, in
  any file under MEMORY_HOME but the encrypted backups, nor in what `search` returns;
- the backup made before the heal is named, with the command that purges it;
- capture, reading the same transcripts again with the current rules, finds the healed turns
  already stored (no turn appended twice);
- what the vectors were computed from is the healed text (no vector is stale);
- `memory-pipeline heal` again rewrites nothing: every table of both databases and every file
  hash the same, and the upgrade heal is not due again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import tantivy
from psycopg import sql
from typer.testing import CliRunner

from memory_pipeline.capture.redact import RULES_VERSION
from memory_pipeline.cli import app
from memory_pipeline.dagster_records import dagster_psycopg_url
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.keyword_index import BODY, identity_dir, schema
from memory_pipeline.embedding.passages import EMBED_TEXT_SQL
from memory_pipeline.forget.privacy import strip_private
from memory_pipeline.heal import state
from memory_pipeline_tests.test_secret_sweep import KEEP, Plant, Sweep, build_sources, dump_sql

pytestmark = pytest.mark.slow  # two real pipeline runs

CLI = str(Path(sys.executable).parent / "memory-pipeline")
OLDER_METADATA = "dream_cycle_of_an_older_release"
HOOK_SECRET = "ghp_" + "q7Wm2Xk9Lp4Rt8Vz3Nc6Bf1Hd5Gs0JyA4Ue"
DAGSTER_SECRET = "sk-proj-" + "Zr8Kq2Vw6Xm4Tn9Lc3Bh7Fd1Gs5Jp0Ya2Ue6IoP3Lk8Mn4Bv7Cx1"


def old_rules(text: str):  # type: ignore[no-untyped-def]
    """The rules of a release that knew none of the planted kinds: only `<private>` goes."""
    from memory_pipeline.capture.redact import Redactions

    text, _ = strip_private(text)
    return text, Redactions()


@pytest.fixture
def home(
    tmp_path: Path, db_url: str, dagster_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, list[Plant], dict[str, str]]]:
    plants, roots = build_sources(tmp_path / "sources")
    home = tmp_path / "home"
    values = {
        "MEMORY_HOME": str(home),
        "DATABASE_URL": db_url,
        "DAGSTER_PG_URL": dagster_pg_url,
        "DAGSTER_HOME": str(home / "dagster"),
        "MEMORY_SOURCES": "real",
        "CODEX_HOME": str(roots["codex"]),
        "CLAUDE_CONFIG_DIR": str(roots["claude"]),
        "MEMORY_IMPORT_DIR": str(roots["imports"]),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    for name in ("MEMORY_BACKUP_KEY", "MEMORY_READER_URL", "MEMORY_SEMANTIC_MODEL"):
        monkeypatch.delenv(name, raising=False)
    plants += [
        Plant("github token", "hook log", HOOK_SECRET),
        Plant("openai key", "dagster metadata", DAGSTER_SECRET),
    ]
    yield home, plants, dict(os.environ)


def old_release_run(home: Path) -> None:
    """`memory-pipeline run` as a release with the old rules ran it (no heal existed)."""
    import importlib

    import dagster as dg

    from memory_pipeline import definitions
    from memory_pipeline.capture import store
    from memory_pipeline.dagster_home import dagster_instance
    from memory_pipeline.db import ensure_ready
    from memory_pipeline.orchestrate import materialize_all
    from memory_pipeline.settings import Settings
    from serving.hooks.client import log_line

    settings = Settings.from_env()
    urls = ensure_ready(settings, check_backups=True)
    instance = dagster_instance(settings, urls)
    try:
        with pytest.MonkeyPatch.context() as old:
            old.setattr(store, "redact", old_rules)
            # The graph's resources are read from the environment when definitions.py is first
            # imported: an earlier test of this process imported it with its own homes.
            old.setattr(definitions, "defs", definitions.defs)
            importlib.reload(definitions)
            materialize_all(instance, settings, progress=lambda _m: None, app_url=urls.app)
        # Metadata as an older release wrote it (quoting memory text), and a hook's error line.
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                OLDER_METADATA, metadata={"digest": dg.MetadataValue.md(f"- {DAGSTER_SECRET}")}
            )
        )
    finally:
        instance.dispose()
    log_line(str(home), f"prompt: ValueError: no memory for GH_TOKEN={HOOK_SECRET}")


def keyword_terms(home: Path, db_url: str) -> list[str]:
    with connect(db_url, autocommit=True) as conn:
        token, database, build = conn.execute(
            "SELECT token::text, current_database(), build FROM search_index_identity"
        ).fetchone()  # type: ignore[misc]
    path = identity_dir(home, token, database) / build
    index = tantivy.Index(schema(), path=str(path), reuse=True)
    return [term for term, _ in index.searcher().terms_with_prefix(BODY, "")]


def files_text(home: Path) -> str:
    """Every file under MEMORY_HOME except the encrypted backups (their names are checked)."""
    out = []
    for path in sorted(home.rglob("*")):
        if path.is_file() and "backups" not in path.relative_to(home).parts:
            out.append(path.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(out)


def table_hashes(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            )
        ]
        return {
            t: conn.execute(
                sql.SQL(
                    "SELECT md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), ''))"
                    " FROM {} x"
                ).format(sql.Identifier(t))
            ).fetchone()[0]  # type: ignore[index]
            for t in tables
        }


def file_hashes(home: Path) -> dict[str, str]:
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout + result.stderr


def search_results(query: str) -> str:
    """What `search --json` returns for the query (not the query it echoes)."""
    result = CliRunner().invoke(app, ["search", "--json", "--limit", "50", "--", query])
    assert result.exit_code == 0, (query, result.output, result.exception)
    return json.dumps(json.loads(result.stdout)["results"])


def test_an_upgrade_heals_every_surface_once_and_a_second_heal_changes_nothing(  # type: ignore[no-untyped-def]
    home, db_url: str, dagster_pg_url: str
) -> None:
    root, plants, env = home
    dagster_url = dagster_psycopg_url(dagster_pg_url)
    old_release_run(root)
    query = "CorrectHorse42Battery"  # the planted DB_PASSWORD

    # The old release stored every secret on every surface.
    before = Sweep(plants)
    before.add("database", dump_sql(db_url))
    before.add("dagster", dump_sql(dagster_url))
    before.add("keyword index terms", "\n".join(keyword_terms(root, db_url)))
    before.add("files", files_text(root))
    before.add("search", search_results(query))
    leaked = {where for wheres in before.leaks().values() for where in wheres}
    assert leaked == {"database", "dagster", "keyword index terms", "files", "search"}
    assert len(before.leaks()) == len(plants)
    backups = sorted(p.name for p in (root / "backups").iterdir() if not p.name.startswith("."))
    assert len(backups) == 1
    with connect(db_url, autocommit=True) as conn:
        turns = conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0]  # type: ignore[index]
        assert turns == 8
        assert state.due(conn) == "heal"  # sql/026 found rows stored by other rules

    # The upgrade: `memory-pipeline run` heals first, says so, then runs as ever.
    run = subprocess.run([CLI, "run"], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert sum("healing it first" in line for line in lines) == 1, run.stderr
    (summary,) = [line for line in lines if line.strip().startswith("healed:")]
    assert "rows and files rewritten" in summary
    (old,) = [line for line in lines if "still holds the old text" in line]
    assert backups[0] in old and "`memory-pipeline forget --purge-backups`" in old

    after = Sweep(plants)
    after.add("database", dump_sql(db_url))
    after.add("dagster", dump_sql(dagster_url))
    after.add("keyword index terms", "\n".join(keyword_terms(root, db_url)))
    after.add("files", files_text(root))
    for plant in plants:
        after.add(f"search {plant.kind}", search_results(plant.secret))
    leaks = after.leaks()
    assert not leaks, "secrets left after the heal:\n" + "\n".join(
        f"  {kind}: {', '.join(sorted(set(where)))}" for kind, where in sorted(leaks.items())
    )
    stored = after.text("database")
    assert "[REDACTED:" in stored
    missing = [text for text in KEEP if text not in stored]
    assert not missing, f"the heal destroyed ordinary text: {missing}"

    with connect(db_url, autocommit=True) as conn:
        # Capture read the same transcripts with the current rules and found every turn stored.
        assert conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0] == turns  # type: ignore[index]
        # Every vector was computed from the healed text.
        stale = conn.execute(
            "SELECT count(*) FROM memory_passages p JOIN passage_embeddings e"
            f" ON e.passage_id = p.id WHERE e.content_sha256 <> encode(sha256(convert_to("
            f"{EMBED_TEXT_SQL}, 'UTF8')), 'hex')"
        ).fetchone()[0]  # type: ignore[index]
        assert stale == 0
        stale = conn.execute(
            "SELECT count(*) FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id"
            " WHERE e.content_sha256 <> encode(sha256(convert_to(m.title || E'\\n' || m.content,"
            " 'UTF8')), 'hex')"
        ).fetchone()[0]  # type: ignore[index]
        assert stale == 0
        assert state.read_state(conn).rules_version == RULES_VERSION
        assert state.due(conn) is None  # the next run does not heal again

    # Dagster still reads the records the heal rewrote.
    import dagster as dg

    instance = dg.DagsterInstance.get()
    try:
        event = instance.get_latest_materialization_event(dg.AssetKey(OLDER_METADATA))
    finally:
        instance.dispose()
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.metadata["digest"].value == "- [REDACTED:openai_key]"

    # A second heal rewrites nothing, anywhere.
    tables, dagster_tables, files = (
        table_hashes(db_url),
        table_hashes(dagster_url),
        file_hashes(root),
    )
    again = cli("heal")
    assert "healed: 0 rows and files rewritten" in again, again
    assert table_hashes(db_url) == tables
    assert table_hashes(dagster_url) == dagster_tables
    assert file_hashes(root) == files
