"""Routed packs on captured conversations: LOOKUP answered from mentions with no vectors in the
database, AGGREGATE packing one dated line per mention within the budget with provenance,
RECALL packing the memories mentioning the entity first, then the rest of what matched,
ambiguity said in the pack, and a query that names no entity packed exactly as before."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.entities.store import extract_window
from memory_pipeline_tests.support.memories import NOW
from memory_pipeline_tests.support.segments import add_segment
from serving.context_pack import context, tokens_of
from serving.render import pack_item_text, pack_text
from serving.search import QueryEmbedder

START, END = NOW.date() - timedelta(days=1), NOW.date() + timedelta(days=1)

# Mara and Jonas talk over five sessions (a week apart); what Jonas does to relax is spread
# over three of them, and two other sessions talk about other things.
SESSIONS = [
    [("How was your weekend, Jonas?", "I went kayaking on the lake, it calms me down.")],
    [("Did you see my friend Tomas at the party?", "Yes, Tomas told me about Lisbon.")],
    [("Work was rough this week.", "I relax by baking sourdough bread on Sundays.")],
    [("Any plans for the holidays?", "We fly to Oslo to see my sister Ines.")],
    [("You look rested!", "Yoga every morning helps me unwind; I love it.")],
]


@pytest.fixture(scope="module")
def embedder() -> QueryEmbedder:
    e = QueryEmbedder("http://127.0.0.1:9")
    e.embed(LOCAL_SPACE, "warm up")
    return e


def build(conn: psycopg.Connection) -> list[str]:
    ids = []
    for i, turns in enumerate(SESSIONS):
        mid, _ = add_segment(conn, turns, native_id=f"chat-{i}", title=turns[0][0])
        conn.execute(
            "UPDATE captured_tasks SET started_at = %s WHERE native_id = %s",
            [NOW - timedelta(days=7 * (len(SESSIONS) - i)), f"chat-{i}"],
        )
        conn.execute(
            "UPDATE memories SET created_at = %s WHERE id = %s",
            [NOW - timedelta(days=7 * (len(SESSIONS) - i)), mid],
        )
        ids.append(mid)
    embed_window(conn, get_minilm(), START, END)
    extract_window(conn, START, END)
    return ids


def test_lookup_is_answered_from_mentions_without_vectors(conn: psycopg.Connection) -> None:
    ids = build(conn)
    conn.execute("DELETE FROM passage_piece_embeddings")
    conn.execute("DELETE FROM passage_embeddings")
    conn.execute("DELETE FROM memory_embeddings")
    pack = context(conn, "when did Mara last talk about Tomas?", 1000, embedder=None)
    assert pack.route is not None and pack.route.intent == "lookup"
    assert sorted(pack.route.entities) == ["Mara (person)", "Tomas (person)"]
    assert [str(i.memory_id) for i in pack.items] == [ids[1]]
    assert "Mara: Did you see my friend Tomas at the party?" in pack_text(pack)
    assert 'date="2026-11-02"' in pack_text(pack)  # when it was said
    assert "route: lookup about " in pack_text(pack)


def test_aggregate_packs_every_mention_within_budget(
    conn: psycopg.Connection, embedder: QueryEmbedder
) -> None:
    ids = build(conn)
    pack = context(conn, "what does Jonas usually do to relax?", 400, embedder=embedder)
    assert pack.route is not None and pack.route.intent == "aggregate"
    text = "\n".join(pack_item_text(i) for i in pack.items)
    for evidence in ("kayaking on the lake", "baking sourdough bread", "Yoga every morning"):
        assert evidence in text
    assert pack.tokens_used <= 400
    assert pack.tokens_used == sum(tokens_of(pack_item_text(i)) for i in pack.items)
    # one dated item per memory, in date order, each line with the turn it quotes
    dates = [i.created_at for i in pack.items]
    assert dates == sorted(dates)
    assert all(e.turns and e.native_task_id for i in pack.items for e in i.excerpts)
    assert str(pack.items[0].memory_id) == ids[0]
    small = context(conn, "what does Jonas usually do to relax?", 60, embedder=embedder)
    assert small.tokens_used <= 60 and small.truncated


def test_recall_packs_the_memories_mentioning_the_entity_first(
    conn: psycopg.Connection, embedder: QueryEmbedder
) -> None:
    ids = build(conn)
    pack = context(conn, "Ines and the holidays", 1000, embedder=embedder)
    assert pack.route is not None and pack.route.intent == "recall" and pack.route.filtered
    assert str(pack.items[0].memory_id) == ids[3]
    # The answer can sit in a memory that does not mention the entity (an extraction missed it,
    # or it says "he"): it still comes, after the mentioning ones.
    pack = context(conn, "Tomas and the kayaking on the lake", 1000, embedder=embedder)
    packed = [str(i.memory_id) for i in pack.items]
    assert packed[0] == ids[1] and ids[0] in packed
    assert "kayaking on the lake" in pack_text(pack)


def test_a_query_naming_no_entity_packs_as_before(
    conn: psycopg.Connection, embedder: QueryEmbedder
) -> None:
    build(conn)
    query = "baking bread on sundays"
    before = context(conn, query, 1000, embedder=embedder)
    conn.execute("DELETE FROM entities")  # as if the stage had never run
    after = context(conn, query, 1000, embedder=embedder)
    assert before.route is None
    assert before.model_dump() == after.model_dump()
