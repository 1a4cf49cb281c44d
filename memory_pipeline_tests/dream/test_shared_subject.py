"""Issue 34: the dream cycle never combines memories of unrelated tasks unless they share a
subject entity (a node of the entity stage both mention), whatever strategy brought them
together: a correction pattern across sessions, or a `contradicts` edge another stage wrote."""

from __future__ import annotations

from pathlib import Path

import psycopg

from memory_pipeline.dream.store import pending_deferrals
from memory_pipeline_tests.dream.helpers import edge, mem, run, unit
from memory_pipeline_tests.support.memories import add_task, link

# Three corrections of three sessions whose vectors are close, about unrelated things.
UNRELATED = (
    ("Invoice totals are in cents", "The user corrected the agent: invoice totals are in cents."),
    ("The IoT VLAN is 30", "The user corrected the agent: the IoT VLAN id is 30, not 20."),
    ("Meter files use semicolons", "The user corrected the agent: meter CSVs use semicolons."),
)
# The same three, each about the Postgres setup: one subject across the sessions.
SHARED = tuple((title, f"{text} It concerns the Postgres setup.") for title, text in UNRELATED)


def corrections(conn: psycopg.Connection, texts: tuple[tuple[str, str], ...]) -> list[str]:
    ids = []
    for i, (title, content) in enumerate(texts):
        mid = mem(conn, title, content, type="correction_episode", days=i, vector=unit(1, 0.1 * i))
        task, turns = add_task(conn, turns=1)
        link(conn, mid, task, turns)
        ids.append(mid)
    return ids


def insights(conn: psycopg.Connection) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT title FROM memories WHERE source_type = 'dream_cycle' AND type = 'insight'"
        ).fetchall()
    ]


def test_corrections_of_unrelated_sessions_make_no_recurring_pattern(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    corrections(conn, UNRELATED)
    report = run(conn, tmp_path)
    assert insights(conn) == [] and report.created == 0
    removed = conn.execute(
        "SELECT precheck -> 'removed' FROM dream_cycle_runs WHERE id = %s", [report.run_id]
    ).fetchone()[0]  # type: ignore[index]
    assert removed["candidate_unrelated_tasks"] == 1
    assert pending_deferrals(conn) == []  # dropped, not deferred: nothing comes back


def test_corrections_sharing_a_subject_entity_make_one(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    corrections(conn, SHARED)
    report = run(conn, tmp_path)
    assert report.created == 1
    assert [t.startswith("Recurring correction") for t in insights(conn)] == [True]


def test_a_contradicts_edge_between_unrelated_tasks_supersedes_nothing(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older = mem(conn, "Use cron", "We'll run the nightly load from cron.", type="decision", days=0)
    newer = mem(
        conn,
        "Benchmark with hyperfine",
        "We'll benchmark the log scanner with hyperfine instead of ad-hoc timing.",
        type="decision",
        days=10,
    )
    for mid in (older, newer):
        task, turns = add_task(conn, turns=1)
        link(conn, mid, task, turns)
    edge(conn, newer, older, "contradicts")  # written by a judge that knew no entities
    report = run(conn, tmp_path)
    assert (report.superseded, report.created) == (0, 0)
    status = conn.execute("SELECT status FROM memories WHERE id = %s", [older]).fetchone()
    assert status == ("active",)
