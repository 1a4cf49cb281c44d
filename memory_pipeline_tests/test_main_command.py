"""The README's main command on a fresh MEMORY_HOME, then what a user does next.

`memory-pipeline run` starts its own embedded server, captures the bundled demo corpus (no real
sources exist in the test environment), runs the semantic pass, embeds, folds reinforcement,
backs up with a verified restore, and records every run in Dagster's PostgreSQL. Re-running it
changes nothing. The retrieval evaluation on the demo gold set keeps its regression floor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline_tests.support.table_hashes import (
    RUN_RECORD_TABLES,
    changed_tables,
    file_hashes,
    table_hashes,
)

CLI = str(Path(sys.executable).parent / "memory-pipeline")
# Recall@10 of the full pipeline on the demo gold set when this floor was set: 0.986
# (`memory-pipeline eval`). A change that loses recall must lower this on purpose.
# Lowered on purpose by the dream cycle (issue 15): `run` now supersedes two reversed decisions,
# which default search leaves out, and adds dream memories citing the turns they rest on.
# Measured on one demo home: without the cycle R@5 0.925 R@10 0.986 MRR 0.833; with it
# R@5 0.925 R@10 0.975 MRR 0.831.
# Fresh homes of the same code measure either 0.975 or 0.9694 (stop 40: on 3c7adba and on
# 5e2de55, and on the sem branch; the offline semantic pass gives byte-identical memories on
# both, so the spread comes from a later step, not yet found): the floor sits below the lower.
RECALL_AT_10_FLOOR = 0.965
# Share of gold messages in the context pack (`eval --json` evidence.pack) on the demo home.
# README records 0.983 @2000 / 0.958 @1000 at 78fa449; main 376ee67 had fallen to 0.825 / 0.819
# (reversed sessions cut to a line and then dropped, "which <thing>" packed as mention lines,
# RECALL limited to memories whose mention was extracted). Measured after the fix (branch
# packdrop): 0.9917 @2000, 0.9583 @1000. A change that loses pack evidence must lower this on
# purpose.
PACK_EVIDENCE_FLOOR = {"2000": 0.98, "1000": 0.95}
COUNTED = ("captured_tasks", "agent_turns", "topic_segments", "memories", "memory_embeddings")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("main_command_home")
    yield path
    EmbeddedServer(path / "pgdata").stop()


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORY_HOME": str(home), "MEMORY_SOURCES": "auto"}
    env.pop("DAGSTER_HOME", None)
    env.pop("MEMORY_PARTITION_START", None)  # a new home's own partitions (the tests set one)
    return subprocess.run(
        [CLI, *args], env=env, capture_output=True, text=True, timeout=900, check=False
    )


def counts(home: Path) -> dict[str, int]:
    url = EmbeddedServer(home / "pgdata").uri("memory")
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in COUNTED}  # type: ignore[index]


@pytest.fixture(scope="module")
def first_run(home: Path) -> subprocess.CompletedProcess[str]:
    return cli(home, "run")


def test_main_command_materializes_the_graph_on_a_fresh_home(home: Path, first_run) -> None:  # type: ignore[no-untyped-def]
    assert first_run.returncode == 0, first_run.stderr[-3000:]
    assert "http://127.0.0.1:3000" in first_run.stderr
    rows = counts(home)
    # The demo's user-owned sessions of every source: Codex, Claude Code, chat imports, OpenCode,
    # Aider, Kiro CLI and IDE, Cursor, Gemini CLI.
    assert (rows["captured_tasks"], rows["agent_turns"]) == (44, 180)
    assert rows["memories"] == rows["memory_embeddings"] > rows["topic_segments"] > 0
    backups = [p for p in (home / "backups").iterdir() if not p.name.startswith(".")]
    assert len(backups) == 1
    dagster = EmbeddedServer(home / "pgdata").uri("dagster")
    with psycopg.connect(dagster) as conn:
        runs = conn.execute("SELECT pipeline_name, status FROM runs ORDER BY create_timestamp")
        assert runs.fetchall() == [
            ("ingest_job", "SUCCESS"),
            ("maintenance_job", "SUCCESS"),
            ("dream_job", "SUCCESS"),
            ("backup_job", "SUCCESS"),
        ]
        # The partitions start at the home's first captured day, and the ingest run covers
        # every day from there.
        range_start = conn.execute(
            "SELECT value FROM run_tags WHERE key = 'dagster/asset_partition_range_start'"
        ).fetchall()
    with psycopg.connect(EmbeddedServer(home / "pgdata").uri("memory")) as conn:
        (first,) = conn.execute(
            "SELECT min((started_at AT TIME ZONE 'UTC')::date) FROM captured_tasks"
        ).fetchone()  # type: ignore[misc]
    assert (home / "partitions-start").read_text().strip() == first.isoformat()
    assert range_start == [(first.isoformat(),)]


def test_rerunning_the_main_command_changes_nothing(home: Path, first_run) -> None:  # type: ignore[no-untyped-def]
    """A second `run` with nothing new changes no row of any table but the run records
    (RUN_RECORD_TABLES), and no file of the keyword index."""
    url = EmbeddedServer(home / "pgdata").uri("memory")
    before = counts(home)
    tables = table_hashes(url, exclude=set(RUN_RECORD_TABLES))
    index = file_hashes(home / "keyword-index")
    assert index, "the first run built no keyword index"
    again = cli(home, "run")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "turns_appended=0" in again.stderr and "embedded=0" in again.stderr
    assert counts(home) == before
    assert changed_tables(tables, table_hashes(url, exclude=set(RUN_RECORD_TABLES))) == {}
    assert file_hashes(home / "keyword-index") == index
    with psycopg.connect(url) as conn:  # the dream run did add its own run row
        runs = conn.execute("SELECT status FROM dream_cycle_runs ORDER BY started_at").fetchall()
    assert runs == [("completed",), ("completed",)]


def test_dream_cycle_retires_the_reversed_decisions(home: Path, first_run) -> None:  # type: ignore[no-untyped-def]
    # The run says what the cycle did (numbers of its asset metadata).
    (line,) = [x for x in first_run.stderr.splitlines() if x.strip().startswith("dream_cycle:")]
    # The demo's three changes, and nothing for the ZFS alerts: "instead of a separate
    # zfs_exporter" names an alternative no earlier memory chose (issue 34: a reversal needs a
    # subject entity both memories mention, and the newer one must drop it).
    assert "accepted=3" in line and "memories_superseded=2" in line, line
    url = EmbeddedServer(home / "pgdata").uri("memory")
    with psycopg.connect(url) as conn:
        superseded = conn.execute(
            "SELECT m.title FROM memories m JOIN memory_relationships r ON r.source_id = m.id"
            " AND r.relation_type = 'superseded_by' AND r.expired_at IS NULL"
            " WHERE m.status = 'superseded'"
        ).fetchall()
        # Redis -> Postgres for rate limits, mmap -> buffered reads. The third reversal (cron
        # -> systemd timer) was never distilled as a decision on its own: its segment gets an
        # UPDATE synthesis instead (a segment holds more than the reversed choice).
        assert {t for (t,) in superseded} == {
            "Use Redis for the rate limiter",
            "Use memmap2 for regular files",
        }
        updated = conn.execute(
            "SELECT count(*) FROM memories m JOIN memory_relationships r ON r.source_id = m.id"
            " AND r.relation_type = 'extends' JOIN memories s ON s.id = r.target_id"
            " WHERE m.source_type = 'dream_cycle' AND s.type = 'segment'"
            " AND m.content LIKE '%systemd timer instead of cron%'"
        ).fetchone()
        assert updated == (1,)
        dream = conn.execute(
            "SELECT metadata -> 'quotes', tags FROM memories WHERE source_type = 'dream_cycle'"
        ).fetchall()
        assert len(dream) == 3 and all(quotes and "dream-cycle" in tags for quotes, tags in dream)


def test_search_json_carries_native_provenance(home: Path, first_run) -> None:  # type: ignore[no-untyped-def]
    result = cli(home, "search", "why did we stop using Redis for rate limiting", "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["results"]
    assert "redis" in (hits[0]["title"] + hits[0]["content"]).lower()
    chains = [chain for hit in hits for chain in hit["provenance"]]
    assert len(chains) >= len(hits)  # every result leads back to a native task...
    assert all(chain["native_task_id"] and chain["turns"] for chain in chains)
    turns = [turn for chain in chains for turn in chain["turns"]]
    # ...and to native turn and message ids where the source has them (Codex, Claude Code).
    assert any(turn["native_turn_id"] and turn["native_message_ids"] for turn in turns)


def test_retrieval_evaluation_keeps_its_floor(home: Path, first_run) -> None:  # type: ignore[no-untyped-def]
    result = cli(home, "eval", "--json")
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)["scores"]
    assert set(scores) == {"bm25", "vector", "full"}
    assert scores["full"]["recall_at_10"] >= RECALL_AT_10_FLOOR, scores
    pack = json.loads(result.stdout)["evidence"]["pack"]
    for budget, floor in PACK_EVIDENCE_FLOOR.items():
        assert pack[budget] >= floor, pack


def test_the_current_value_comes_first_on_the_demo_reversals(home: Path, first_run) -> None:  # type: ignore[no-untyped-def]
    """Issue 34: the demo's three reversals asked as knowledge updates (demo/gold_updates.jsonl,
    with and without "now", and as tasks: "add rate limiting to the invoices endpoint"): in
    every pack the current decision is there and comes before the one it reversed."""
    gold = Path(__file__).resolve().parent.parent / "memory_pipeline/demo/gold_updates.jsonl"
    result = cli(home, "eval", "--json", "--gold", str(gold))
    assert result.returncode == 0, result.stderr
    per_query = json.loads(result.stdout)["evidence"]["per_query"]
    assert len(per_query) == 7
    late = {q["id"]: q["current_first"] for q in per_query if not all(q["current_first"].values())}
    assert late == {}, late
