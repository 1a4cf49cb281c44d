"""The current value first (issue 34, item 3): a pack puts the latest statement of a fact before
the ones it replaced, and the memory a newer decision reverses never comes before it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime

import psycopg
import pytest

from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline_tests.support.memories import add_memory
from memory_pipeline_tests.support.segments import add_segment
from serving.context_pack import context
from serving.current_first import asks_about_past, asks_for_current
from serving.render import pack_item_text
from serving.router import intent_of
from serving.search import QueryEmbedder


def day(month: int, d: int) -> datetime:
    return datetime(2026, month, d, 12, 0, tzinfo=UTC)


# Three sessions that state the stand-up time, each replacing the one before, and others.
STANDUP = [
    (
        "standup-jan",
        day(1, 12),
        [
            ("Quick one: when is the data team stand-up?", "The data team stand-up is at 9:00."),
            ("Any news on the station dashboard?", "It refreshes daily at 6am for now."),
        ],
    ),
    (
        "standup-apr",
        day(4, 2),
        [
            ("Heads up from Lena about the mornings.", "We moved the data team stand-up to 9:30."),
            ("Because of the school run?", "Yes, she drops the twins off first."),
        ],
    ),
    (
        "standup-aug",
        day(8, 20),
        [
            ("New term, new times.", "The data team stand-up is at 10:15 from now on."),
            ("After the ops sync then.", "Right, the ops sync ends at ten."),
        ],
    ),
]
OTHERS = [
    ("lunch", day(2, 3), [("Lunch at the usual place?", "Sure, the noodle bar at noon.")]),
    ("books", day(5, 9), [("Any book for the flight?", "Try a long space opera.")]),
    ("bike", day(7, 1), [("My bike chain keeps slipping.", "Replace the worn cassette too.")]),
    ("team", day(9, 5), [("Who joins the data team?", "Ana starts on Monday as analyst.")]),
]


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    with connect(reader_url, autocommit=True) as conn:
        yield conn


@pytest.fixture(scope="module")
def embedder() -> QueryEmbedder:
    e = QueryEmbedder("http://127.0.0.1:9")
    e.embed(LOCAL_SPACE, "warm up")
    return e


def _sessions(conn: psycopg.Connection, sessions) -> dict[str, str]:  # type: ignore[no-untyped-def]
    ids = {}
    for native, at, turns in sessions:
        ids[native], _ = add_segment(
            conn, turns, native_id=native, title=turns[0][0], created_at=at, updated_at=at
        )
    return ids


def _first(pack, *needles: str) -> int | None:  # type: ignore[no-untyped-def]
    """The index of the first item whose text holds one of the needles."""
    return next(
        (n for n, i in enumerate(pack.items) if any(s in pack_item_text(i) for s in needles)), None
    )


def test_the_latest_of_three_statements_of_a_fact_comes_first(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    _sessions(conn, STANDUP + OTHERS)
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    for query in (
        "What time is the data team stand-up now?",
        "When is the data team stand-up?",  # no word for "now": a present-tense question
    ):
        for budget in (1000, 2000):
            pack = context(reader, query, budget, embedder=embedder)
            current = _first(pack, "10:15")
            older = _first(pack, "is at 9:00", "to 9:30")
            assert current is not None, (query, budget)
            assert older is None or current < older, (query, budget, current, older)
            assert pack.tokens_used <= budget


def test_a_reversed_session_never_comes_before_the_decision_that_reversed_it(
    conn, reader, embedder
) -> None:  # type: ignore[no-untyped-def]
    old = [
        (
            "We need rate limiting on the public invoices API: 100 requests per minute, 429 "
            "with Retry-After. What is the simplest thing that works?",
            "We'll use Redis for the rate limiter: a fixed-window counter per API key, one INCR "
            "plus EXPIRE per request on the invoices API, keyed by the minute.",
        ),
        (
            "Should the invoices API limit per IP or per API key?",
            "Per API key: the Acme integration calls the invoices API from many addresses.",
        ),
        (
            "Log every 429 on the invoices endpoint please.",
            "Every 429 on the invoices API now logs the key, the customer and the window.",
        ),
    ]
    new = [
        (
            "Implementing what we agreed: drop Redis for rate limiting and keep the limits in "
            "Postgres as a token bucket per API key.",
            "We'll use a token bucket in Postgres instead of the Redis limiter: one upsert per "
            "request in rate_limit_buckets, and rate limiting no longer depends on Redis.",
        )
    ]
    ids = _sessions(
        conn, [("limits-sep", day(9, 22), old), ("limits-oct", day(10, 21), new), *OTHERS]
    )
    decision = add_memory(
        conn,
        "Use a token bucket in Postgres instead of the Redis limiter",
        "We'll use a token bucket in Postgres instead of the Redis limiter.",
        type="decision",
        created_at=day(10, 21),
    )
    # The decision rests on the new session's turn, and reverses the old session.
    conn.execute(
        "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
        " SELECT %s, turn_id, segment_id, task_id, 'supports' FROM memory_provenance"
        " WHERE memory_id = %s",
        [decision, ids["limits-oct"]],
    )
    conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type)"
        " VALUES (%s, %s, 'contradicts')",
        [decision, ids["limits-sep"]],
    )
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    for query in ("add rate limiting to the invoices endpoint", "how do we rate limit now?"):
        for budget in (300, 1000, 2000):
            pack = context(reader, query, budget, embedder=embedder)
            current = _first(pack, "token bucket in Postgres")
            older = next(
                (n for n, i in enumerate(pack.items) if str(i.memory_id) == ids["limits-sep"]),
                None,
            )
            assert current is not None, (query, budget)
            assert older is None or current < older, (query, budget, current, older)
            if older is not None:
                assert pack.items[older].flags[0].startswith("reversed by a newer decision")


def test_questions_about_the_present_and_the_past_are_told_apart() -> None:
    # "When is ... now?" asks for a value that changed: RECALL (current first), not LOOKUP.
    assert intent_of("When is Omar's wedding now?") == "recall"
    assert intent_of("When did I last talk to Omar?") == "lookup"
    # "How many ... now?" asks for one value as it is now, not every mention over time.
    assert intent_of("How many students are in Mei's homeroom now?") == "recall"
    assert intent_of("How many times did the backup fail?") == "aggregate"
    assert asks_for_current("What were the final travel dates for the trip?")
    assert asks_for_current("How much did the bank end up lending Priya?")
    assert asks_for_current("How much is a cardamom knot these days?")
    assert not asks_for_current("Which event did Tomás enter for his first triathlon?")
    # A plan is revised by a later plan: the newest one answers, and "how many ... planning"
    # asks for one number, not every mention.
    assert asks_for_current("When are Ines's family planning to actually live in the farmhouse?")
    assert asks_for_current("Where is Omar's wedding going to be?")
    assert intent_of("How many tomato plants is Ines planning for next season?") == "recall"
    assert not asks_for_current("Which plants did Ines grow in the greenhouse?")
    assert asks_about_past("What did the first version of the rate limiter use?")
    assert asks_about_past("Where did the stand-up used to be?")
    assert not asks_about_past("How low will the savings fall before the paychecks begin?")
    assert not asks_about_past("Which event did he end up entering for his first triathlon?")
