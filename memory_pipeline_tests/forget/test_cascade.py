"""Forget on hand-made data: the cascade leaves no forgotten text in any table, export or new
backup; what rests on kept things stays; the audit row; a dry run changes nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.crypto import KEY_ENV_VAR, load_key, read_encrypted
from memory_pipeline.backup.layout import DUMP_NAME, backup_names
from memory_pipeline.backup.operations import run_backup
from memory_pipeline.backup.pgtools import client_conninfo, pg_tools
from memory_pipeline.forget.backups import purge_backups
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.forget.data import (
    GONE,
    KEPT,
    World,
    build,
    exists,
    fill_later_stage_tables,
    fill_other_stages,
    later_stage_tables,
)


def dump(dsn: str) -> str:
    """Every row of every table, as pg_dump writes them (jsonb, tsvectors, arrays included)."""
    conninfo, env = client_conninfo(dsn)
    args = [str(pg_tools(None).pg_dump), "--data-only", "--no-password", f"--dbname={conninfo}"]
    out = subprocess.run(args, env=env, capture_output=True, check=True, timeout=60).stdout
    return out.decode()


def rows(dumped: str) -> list[str]:
    """The dump's lines in order, without pg_dump's per-run \\restrict key."""
    return sorted(line for line in dumped.splitlines() if "restrict " not in line)


def count(conn: psycopg.Connection, query: str, *params: object) -> int:
    return int(conn.execute(query, list(params)).fetchone()[0])  # type: ignore[index]


@pytest.fixture
def world(conn: psycopg.Connection) -> World:
    later_stage_tables(conn)
    w = build(conn)
    fill_later_stage_tables(conn, w)
    fill_other_stages(conn, w)
    return w


def test_forgetting_a_task_leaves_its_text_nowhere_and_keeps_the_rest(
    conn: psycopg.Connection, db_url: str, world: World
) -> None:
    before = dump(db_url).lower()
    assert before.count(GONE) > 20 and before.count(KEPT) > 20

    report = forget(conn, Selector(tasks=[("chat_import", "chat-forget")]))

    after = dump(db_url).lower()
    assert GONE not in after, [line for line in after.splitlines() if GONE in line][:5]
    # Everything of B survived, and so did what rests on B as well as on A.
    # (The child's row changed: its parent_id link to the forgotten decision is gone.)
    kept_lines = [
        line
        for line in before.splitlines()
        if KEPT in line and GONE not in line and world.child_of_a not in line
    ]
    missing = [line for line in kept_lines if line not in after]
    assert missing == [], missing
    for memory in (world.dream_ab, world.child_of_a, world.b.segment_memory):
        assert count(conn, "SELECT count(*) FROM memories WHERE id = %s", memory) == 1
    assert count(conn, "SELECT count(*) FROM agent_turns") == 3
    assert (
        count(
            conn,
            "SELECT count(*) FROM memories WHERE id = %s AND parent_id IS NULL",
            world.child_of_a,
        )
        == 1
    )
    assert count(conn, "SELECT count(*) FROM later_items WHERE body LIKE 'KEEPALIVE%%'") == 1

    assert {m.id for m in report.memories} == {
        world.a.segment_memory,
        world.decision_a,
        world.dream_a,
    }
    assert report.turns == 3 and [t.native_id for t in report.tasks] == ["chat-forget"]
    for table in (
        "memories",
        "agent_turns",
        "captured_tasks",
        "memory_passages",
        "passage_embeddings",
        "memory_embeddings",
        "memory_relationships",
        "retrieval_events",
        "memory_provenance",
        "topic_segments",
        "dream_cycle_candidates",
        "later_notes",
        "later_item_memories",
        "capture_skips",
    ):
        assert report.counts.get(table, 0) > 0, table
    # Tables of migrations 016-018 (relationships, dream cycle, Express), found in the catalog.
    for table in ("relationship_scans", "dream_candidate_memories", "briefing_item_memories"):
        if exists(conn, table):
            assert report.counts.get(table, 0) > 0, table
    if exists(conn, "briefing_items"):
        headlines = [r[0] for r in conn.execute("SELECT headline FROM briefing_items")]
        assert headlines == ["KEEPALIVE headline"]
    assert report.counts["memories (unlinked)"] == 1  # the child's parent_id
    assert report.counts["entities (left unlinked by memory_entities)"] == 1
    assert report.counts["later_items (left unlinked by later_item_memories)"] == 1

    # The BM25 statistics no longer know the forgotten words.
    assert count(conn, "SELECT count(*) FROM passage_term_stats WHERE lexeme LIKE 'forgetm%%'") == 0
    assert count(conn, "SELECT count(*) FROM passage_term_stats WHERE lexeme = 'keepal'") == 1

    # The audit row: counts, the selector, and none of the forgotten text.
    (selector, counts, memories, turns, tasks) = conn.execute(
        "SELECT selector, counts, memories, turns, tasks FROM forget_audit"
    ).fetchone()  # type: ignore[misc]
    assert selector == {"tasks": ["chat_import:chat-forget"]}
    assert counts == report.counts and (memories, turns, tasks) == (3, 3, 1)
    # Tombstones: the task by identity, its turns by hash.
    assert conn.execute("SELECT source, native_id FROM forgotten_tasks").fetchall() == [
        ("chat_import", "chat-forget")
    ]
    hashes = {r[0] for r in conn.execute("SELECT content_sha256 FROM forgotten_turns")}
    assert hashes == set(world.a.hashes)


def test_forgetting_a_decision_takes_what_rests_only_on_it_and_not_its_segment(
    conn: psycopg.Connection, world: World
) -> None:
    report = forget(conn, Selector(memory_ids=[world.decision_a]))
    assert {m.id for m in report.memories} == {world.decision_a, world.dream_a}
    assert report.turns == 0 and report.tasks == []
    assert count(conn, "SELECT count(*) FROM agent_turns") == 6
    assert count(conn, "SELECT count(*) FROM memories WHERE id = %s", world.a.segment_memory) == 1


def test_forgetting_a_segment_forgets_its_turns_and_what_was_distilled_from_them(
    conn: psycopg.Connection, world: World
) -> None:
    report = forget(conn, Selector(memory_ids=[world.a.segment_memory]))
    # The turns were the segment's text; the decision rested only on them; the task had no
    # other turn, so it goes too (tombstoned).
    assert {m.id for m in report.memories} == {
        world.a.segment_memory,
        world.decision_a,
        world.dream_a,
    }
    assert report.turns == 3 and [t.native_id for t in report.tasks] == ["chat-forget"]


def test_a_dry_run_changes_nothing_and_counts_what_would_go(
    conn: psycopg.Connection, db_url: str, world: World
) -> None:
    before = rows(dump(db_url))
    dry = forget(conn, Selector(tasks=[("chat_import", "chat-forget")]), dry_run=True)
    assert rows(dump(db_url)) == before
    assert dry.audit_id is None and len(dry.memories) == 3 and dry.turns == 3
    assert count(conn, "SELECT count(*) FROM forget_audit") == 0
    real = forget(conn, Selector(tasks=[("chat_import", "chat-forget")]))
    assert real.counts == dry.counts


def test_project_and_time_range_narrow_each_other(conn: psycopg.Connection, world: World) -> None:
    conn.execute("UPDATE memories SET project = 'billing' WHERE id = %s", [world.dream_ab])
    conn.execute(
        "UPDATE memories SET project = 'billing', created_at = '2026-01-01' WHERE id = %s",
        [world.child_of_a],
    )
    from datetime import UTC, datetime

    report = forget(conn, Selector(project="billing", since=datetime(2026, 6, 1, tzinfo=UTC)))
    assert [m.id for m in report.memories] == [world.dream_ab]


def test_a_new_backup_holds_nothing_forgotten_and_purge_keeps_only_it(
    conn: psycopg.Connection,
    db_url: str,
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KEY_ENV_VAR, raising=False)
    config = BackupConfig(
        backup_dir=tmp_path / "backups",
        key_file=tmp_path / "backup.key",
        keep_daily=7,
        keep_weekly=4,
    )
    old = run_backup(config, db_url).backup
    assert GONE in backup_text(old.path, config).lower()  # the old backup does hold it

    forget(conn, Selector(tasks=[("chat_import", "chat-forget")]))
    outcome = purge_backups(config, db_url)

    assert backup_names(config.backup_dir) == [outcome.new_backup]
    assert outcome.deleted == [old.backup_id]
    text = backup_text(config.backup_dir / outcome.new_backup, config).lower()
    assert KEPT in text and "copy public.agent_turns" in text  # the exports and the dump
    assert GONE not in text


def backup_text(path: Path, config: BackupConfig) -> str:
    """Every file of a backup decrypted; the dump rendered to SQL by pg_restore."""
    key = load_key(config.key_file, create=False)
    restore = str(pg_tools(None).pg_restore)
    parts = []
    for file in sorted(path.iterdir()):
        plain = read_encrypted(file, key)
        if file.name == DUMP_NAME:
            plain = subprocess.run(
                [restore, "--file=-"], input=plain, capture_output=True, check=True, timeout=60
            ).stdout
        parts.append(plain.decode("utf-8", "replace"))
    return "\n".join(parts)
