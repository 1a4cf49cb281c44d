"""Composition from hand-made memories: each source of items, and correction episodes never."""

from __future__ import annotations

from datetime import timedelta

import psycopg

from memory_pipeline import tuning
from memory_pipeline.express.briefing import make_briefing
from memory_pipeline.express.store import load_briefing
from memory_pipeline_tests.express.rows import DAY, HOUR, dream_memory, edge, unanswered_question
from memory_pipeline_tests.support.memories import NOW, add_memory

OLD = NOW - timedelta(days=tuning.EXPRESS_RESURFACE_MIN_AGE_DAYS + 30)


def brief(conn: psycopg.Connection, day=DAY, now=NOW + HOUR, weekday="sunday"):  # type: ignore[no-untyped-def]
    make_briefing(conn, day, digest_weekday=weekday, now=now)
    stored = load_briefing(conn, day)
    assert stored is not None
    return stored


def by_kind(stored, kind):  # type: ignore[no-untyped-def]
    return [i for i in stored.items if i.kind == kind]


def test_dream_syntheses_flag_cross_project_and_link_their_evidence(conn) -> None:  # type: ignore[no-untyped-def]
    a = add_memory(conn, "Billing retries use jittered backoff", "x", project="billing")
    b = add_memory(conn, "Search indexer retries use jittered backoff", "x", project="search")
    correction = add_memory(
        conn, "Agent did: retried without backoff", "x", type="correction_episode"
    )
    cross = dream_memory(conn, "Both services retry the same way", [a, b, correction], True)
    local = dream_memory(conn, "Billing keeps retrying idempotently", [a], False, project="billing")
    stored = brief(conn)
    items = {i.memories[0].id: i for i in by_kind(stored, "synthesis")}
    assert set(items) == {cross, local}
    assert items[cross].cross_project and items[cross].topic == "cross-project"
    assert "cross-project" in items[cross].headline.lower()
    assert "Both services retry the same way" in items[cross].headline
    # Evidence links, never the correction episode.
    assert {m.id for m in items[cross].memories} == {cross, a, b}
    assert not items[local].cross_project and items[local].topic == "billing"
    # A cross-project synthesis outranks a local one.
    assert stored.items.index(items[cross]) < stored.items.index(items[local])


def test_new_contradictions_and_superseded_memories(conn) -> None:  # type: ignore[no-untyped-def]
    older = add_memory(conn, "Sessions live in Redis", "x", type="decision", project="auth")
    newer = add_memory(conn, "Sessions live in Postgres", "x", type="decision", project="auth")
    edge(conn, newer, older, "contradicts")
    old = add_memory(
        conn, "Deploy with Fabric", "x", type="decision", status="superseded", project="ops"
    )
    new = add_memory(conn, "Deploy with Ansible", "x", type="decision", project="ops")
    edge(conn, old, new, "superseded_by")
    # Told once: the pair that is both contradiction and supersession is a supersession.
    edge(conn, new, old, "contradicts")
    # Expired edges and edges from before the window are not news.
    gone_a = add_memory(conn, "Cache TTL 5 minutes", "x")
    gone_b = add_memory(conn, "Cache TTL 1 hour", "x")
    edge(conn, gone_b, gone_a, "contradicts")
    conn.execute(
        "UPDATE memory_relationships SET expired_at = now() WHERE source_id = %s", [gone_b]
    )
    stale_a = add_memory(conn, "Use tabs", "x")
    stale_b = add_memory(conn, "Use spaces", "x")
    edge(conn, stale_b, stale_a, "contradicts", at=NOW - timedelta(days=30))
    # A correction episode contradicting something is never delivered.
    episode = add_memory(conn, "Agent did: used Redis", "x", type="correction_episode")
    edge(conn, episode, older, "contradicts")
    stored = brief(conn)
    (contradiction,) = by_kind(stored, "contradiction")
    assert [(m.id, m.role) for m in contradiction.memories] == [(newer, "newer"), (older, "older")]
    assert (
        contradiction.headline == "“Sessions live in Postgres” contradicts “Sessions live in Redis”"
    )
    assert contradiction.topic == "auth"
    (superseded,) = by_kind(stored, "superseded")
    assert [(m.id, m.role) for m in superseded.memories] == [(old, "subject"), (new, "successor")]
    assert "Deploy with Fabric" in superseded.headline and "superseded" in superseded.headline
    assert stored.items[0].kind == "contradiction"


def test_resurfaces_deep_memories_unread_for_long_once(conn) -> None:  # type: ignore[no-untyped-def]
    deep = add_memory(
        conn,
        "Vacuum before the nightly dump",
        "x",
        depth_score=0.9,
        last_accessed_at=OLD,
        created_at=OLD,
        type="decision",
    )
    add_memory(conn, "Recently read", "x", depth_score=0.95, created_at=OLD, last_accessed_at=NOW)
    add_memory(conn, "Shallow", "x", depth_score=0.3, created_at=OLD)
    add_memory(
        conn,
        "Agent did: dumped without vacuum",
        "x",
        type="correction_episode",
        depth_score=0.99,
        created_at=OLD,
    )
    stored = brief(conn)
    (item,) = by_kind(stored, "resurfaced")
    assert [m.id for m in item.memories] == [deep]
    days = (NOW + HOUR - OLD).days
    assert (
        item.headline
        == f"Worth another look (unread for {days} days): Vacuum before the nightly dump"
    )
    # The next day it does not come back (cooldown), though it is still unread.
    tomorrow = brief(conn, DAY + timedelta(days=1), NOW + timedelta(days=1))
    assert by_kind(tomorrow, "resurfaced") == []


def test_open_questions_from_memories_and_unanswered_last_prompts(conn) -> None:  # type: ignore[no-untyped-def]
    question = add_memory(
        conn, "Should rate limits move to Postgres?", "x", type="question", project="api"
    )
    segment = unanswered_question(conn, "Can we deploy on Fridays without a freeze?", "ops")
    stored = brief(conn)
    items = {i.memories[0].id: i for i in by_kind(stored, "question")}
    assert set(items) == {question, segment}
    assert items[question].headline == "Open question: Should rate limits move to Postgres?"
    assert items[segment].headline == "Open question: Can we deploy on Fridays without a freeze?"
    assert "not answered yet" in items[segment].detail
    # Once a later turn exists, the prompt is no longer the open last one.
    task_id = conn.execute(
        "SELECT task_id FROM topic_segments WHERE memory_id = %s", [segment]
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO agent_turns (task_id, ordinal, prompt, outcome, content_sha256,"
        " continues_ordinal) VALUES (%s, 2, 'Can we deploy on Fridays?', 'Yes.', 'a', 1)",
        [task_id],
    )
    again = brief(conn)
    assert {i.memories[0].id for i in by_kind(again, "question")} == {question}


def test_weekly_digest_only_on_its_weekday(conn) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        add_memory(conn, f"Decision {i}", "x", type="decision", project=f"p{i % 2}")
    add_memory(conn, "An insight", "x", type="insight", project="p0", depth_score=0.9)
    add_memory(conn, "Agent did: nothing", "x", type="correction_episode")
    weekday = DAY.strftime("%A").lower()
    other = (DAY + timedelta(days=1)).strftime("%A").lower()
    assert by_kind(brief(conn, weekday=other), "digest") == []
    (digest,) = by_kind(brief(conn, weekday=weekday), "digest")
    assert digest.headline == "Your week: 3 decisions, 1 insight across 2 projects"
    assert digest.memories[0].title == "An insight"  # the deepest first


def test_window_follows_the_previous_briefing_and_recomposing_is_idempotent(conn) -> None:  # type: ignore[no-untyped-def]
    older = add_memory(conn, "Old view", "x")
    newer = add_memory(conn, "New view", "x")
    edge(conn, newer, older, "contradicts")
    first = brief(conn)
    assert len(by_kind(first, "contradiction")) == 1
    again = brief(conn)  # the same day again: the same items, replacing the first
    assert [i.key for i in again.items] == [i.key for i in first.items]
    assert conn.execute("SELECT count(*) FROM briefings").fetchone() == (1,)
    # The next day's briefing starts where this one ended: the contradiction is not news.
    tomorrow = brief(conn, DAY + timedelta(days=1), NOW + timedelta(days=1))
    assert tomorrow.window_from == first.window_to
    assert by_kind(tomorrow, "contradiction") == []


def test_forgetting_a_memory_removes_the_items_that_quote_it(conn) -> None:  # type: ignore[no-untyped-def]
    older = add_memory(conn, "Secret plan A", "x")
    newer = add_memory(conn, "Secret plan B", "x")
    edge(conn, newer, older, "contradicts")
    keep = add_memory(conn, "Is the plan public?", "x", type="question")
    brief(conn)
    conn.execute("DELETE FROM memories WHERE id = %s", [older])
    stored = load_briefing(conn, DAY)
    assert stored is not None
    assert [i.memories[0].id for i in stored.items] == [keep]
    assert "Secret plan" not in str(
        conn.execute("SELECT array_agg(headline) FROM briefing_items").fetchone()
    )


def test_private_memories_are_never_delivered(conn) -> None:  # type: ignore[no-untyped-def]
    add_memory(conn, "Ask HR about the reorg?", "x", type="question", private=True)
    public = add_memory(conn, "Retries in billing", "x", project="billing")
    hidden = add_memory(conn, "Retries in the private side project", "x", private=True)
    dream_memory(conn, "Retries everywhere", [public, hidden], False)  # private by derivation
    edge(conn, public, hidden, "contradicts")
    kept = add_memory(conn, "Is the billing retry cap right?", "x", type="question")
    stored = brief(conn, weekday=DAY.strftime("%A"))
    assert [(i.kind, {m.id for m in i.memories}) for i in stored.items] == [
        ("question", {kept}),
        ("digest", {kept, public}),  # counts only; private examples left out
    ]


def test_resolved_and_explained_changes_are_told_once(conn) -> None:  # type: ignore[no-untyped-def]
    """From the demo run: a reversal came as a contradiction against an already superseded
    decision, a supersession and the dream cycle's synthesis of both: three items, one story."""
    old = add_memory(conn, "Use Redis for the rate limiter", "x", type="decision")
    new = add_memory(conn, "Use a token bucket in Postgres", "x", type="decision")
    also = add_memory(conn, "We drop Redis for rate limiting", "x", type="decision")
    conn.execute("UPDATE memories SET status = 'superseded' WHERE id = %s", [old])
    edge(conn, old, new, "superseded_by")
    edge(conn, new, old, "contradicts")
    edge(conn, also, old, "contradicts")  # the older side is already superseded: resolved
    synthesis = dream_memory(conn, "Reversed: token bucket instead of Redis", [old, new], False)
    other_old = add_memory(conn, "Deploy with Fabric", "x", type="decision", status="superseded")
    other_new = add_memory(conn, "Deploy with Ansible", "x", type="decision")
    edge(conn, other_old, other_new, "superseded_by")  # no synthesis explains it: told
    stored = brief(conn)
    assert [(i.kind, i.memories[0].id) for i in stored.items] == [
        ("synthesis", synthesis),
        ("superseded", other_old),
    ]


def test_recomposing_with_nothing_new_rewrites_nothing(conn, db_url) -> None:  # type: ignore[no-untyped-def]
    """Every `memory-pipeline run` composes today's briefing again. With nothing new it keeps the
    stored one, row for row: its id, its items' ids (`brief --useful 12` still names the same
    item) and when it was composed."""
    from memory_pipeline_tests.support.table_hashes import table_hashes

    older = add_memory(conn, "Old view", "x")
    newer = add_memory(conn, "New view", "x")
    edge(conn, newer, older, "contradicts")
    add_memory(conn, "Is the plan public?", "x", type="question")
    first = brief(conn)
    tables = table_hashes(db_url)
    again = brief(conn, now=NOW + 2 * HOUR)  # later the same day: the window grew, nothing new
    assert again == first
    assert table_hashes(db_url) == tables
    # Something new later that day: the briefing is composed again with it.
    newest = add_memory(conn, "Newest view", "x", created_at=NOW + 2 * HOUR)
    edge(conn, newest, newer, "contradicts")
    third = brief(conn, now=NOW + 3 * HOUR)
    assert len(by_kind(third, "contradiction")) == 2 and third.window_to == NOW + 3 * HOUR


def test_a_briefing_names_one_change_once(conn) -> None:  # type: ignore[no-untyped-def]
    """From the demo run (issue 34): the session holding the Redis limiter was contradicted by
    the three memories that state the new decision, and the dream cycle's "Reversed: ..." rests
    on one of them: one change, told once, by its synthesis. Another change with no synthesis
    is told once as well, and an unrelated contradiction stays its own item."""
    session = add_memory(conn, "We need rate limiting on the invoices API", "x", type="segment")
    redis = add_memory(conn, "Use Redis for the rate limiter", "x", type="decision")
    restated = [
        add_memory(conn, title, "x", type="decision")
        for title in (
            "We drop Redis for rate limiting",
            "Use a token bucket in Postgres instead of the Redis limiter",
            "Implementing what Jonas and I agreed on Monday",
        )
    ]
    for new in restated:
        edge(conn, new, session, "contradicts")
    synthesis = dream_memory(
        conn,
        "Reversed: Use a token bucket in Postgres instead of the Redis limiter",
        [restated[1], redis],
        False,
        operation="SUPERSEDE",
    )
    mmap_session = add_memory(conn, "Logslice takes 11s on the access log", "x", type="segment")
    buffered = [
        add_memory(conn, "Go with buffered reads again", "x", type="decision"),
        add_memory(conn, "Buffered reads, and drop mmap", "x", type="decision"),
    ]
    for new in buffered:
        edge(conn, new, mmap_session, "contradicts")
    newer = add_memory(conn, "Sessions live in Postgres", "x", type="decision")
    older = add_memory(conn, "Sessions live in Redis", "x", type="decision")
    edge(conn, newer, older, "contradicts")
    stored = brief(conn)
    told = [(i.kind, {m.id for m in i.memories}) for i in stored.items]
    about = {
        "rate limits": {session, redis, *restated},
        "mmap": {mmap_session, *buffered},
        "sessions": {newer, older},
    }
    for change, ids in about.items():
        assert sum(1 for _, memories in told if memories & ids) == 1, (change, told)
    assert ("synthesis", {synthesis, restated[1], redis}) in told
