"""The intent router: intents and time windows on a table of queries (no database), and the
alias scan over a real database (unique aliases resolve, shared ones stay ambiguous, private
nodes stay hidden)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memory_pipeline.entities.store import extract_window
from memory_pipeline_tests.support.memories import NOW, add_memory
from serving.router import intent_of, route, time_window

INTENTS = [
    ("when did I last talk to Nadia?", "lookup"),
    ("When did we decide to drop Redis?", "lookup"),
    ("what day did Jonas move to Lisbon", "lookup"),
    ("last time we touched the invoices endpoint", "lookup"),
    ("which cities has Mara visited?", "aggregate"),
    ("which ansible roles still used apt_key?", "aggregate"),
    # One thing asked for: its pack must keep the memory text that answers it.
    ("which backup tool for point-in-time recovery of the Postgres?", "recall"),
    ("which date/time crate does logslice use?", "recall"),
    ("list every package we added to the API", "aggregate"),
    ("how many times did the backup fail", "aggregate"),
    ("what does Jonas usually do to relax?", "aggregate"),
    ("every time we deploy the worker", "aggregate"),
    ("how do we rate limit the API now?", "recall"),
    ("add rate limiting to the invoices endpoint", "recall"),
    ("why did the nightly build break", "recall"),
]


@pytest.mark.parametrize(("query", "intent"), INTENTS)
def test_intent(query: str, intent: str) -> None:
    assert intent_of(query) == intent


NOW_ = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
TIMES = [
    (
        "what did we do yesterday",
        datetime(2026, 11, 29, tzinfo=UTC),
        datetime(2026, 11, 30, tzinfo=UTC),
    ),
    ("deploys in March", datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)),
    ("trips in December", datetime(2025, 12, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)),
    ("since May 2024", datetime(2024, 5, 1, tzinfo=UTC), None),
    ("in 2023", datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)),
    ("3 days ago", datetime(2026, 11, 26, tzinfo=UTC), datetime(2026, 11, 28, tzinfo=UTC)),
    ("how do we rate limit", None, None),
]


@pytest.mark.parametrize(("query", "since", "until"), TIMES)
def test_time_window(query: str, since: datetime | None, until: datetime | None) -> None:
    got = time_window(query, NOW_)
    assert (got[0], got[1]) == (since, until)


def test_aliases_resolve_and_ambiguity_is_reported(conn: psycopg.Connection) -> None:
    add_memory(conn, "Mail", "Victor Hugo <vh@example.com> and Victor Lane <vl@example.com>.")
    add_memory(conn, "Trip", "My friend Nadia moved to Lisbon.")
    add_memory(conn, "Secret", "My friend Zelda works at Hidden Corp.", private=True)
    extract_window(conn, NOW.date() - timedelta(days=40), NOW.date() + timedelta(days=1))
    r = route(conn, "when did nadia last go to lisbon?")
    assert r.intent == "lookup"
    assert {(e.name, e.category) for e in r.entities} == {("Nadia", "person"), ("Lisbon", "place")}
    r = route(conn, "what did Victor say about the lease")
    assert r.entities == [] and [a.alias for a in r.ambiguous] == ["victor"]
    assert len(r.ambiguous[0].candidates) == 2
    r = route(conn, "what did Victor Hugo say")
    assert [e.name for e in r.entities] == ["Victor Hugo"] and r.ambiguous == []
    assert route(conn, "what does Zelda do").entities == []  # private: hidden
    assert [e.name for e in route(conn, "what does Zelda do", include_private=True).entities] == [
        "Zelda"
    ]
    assert route(conn, "how do we rate limit the API now?").changes_pack is False
