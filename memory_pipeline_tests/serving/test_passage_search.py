"""Search ranks memories by their passages and returns the passages that matched."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import psycopg
import pytest

from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline_tests.support.memories import NOW, add_memory
from memory_pipeline_tests.support.segments import add_segment
from serving.search import QueryEmbedder, search

FILLER = [
    ("Which tomatoes should I plant on the balcony this year?", "Cherry tomatoes in big pots."),
    ("The router fan is loud again.", "Replace the fan; the bearings are worn out."),
    ("Can you recommend a sci-fi book?", "Try a long space opera with a slow start."),
    ("What's for dinner?", "Lentil soup with bread from the bakery downstairs."),
    ("How do I descale the kettle?", "Vinegar and water, boil, rinse twice."),
    ("Did the cat eat today?", "Twice, and she stole some cheese as well."),
    ("Is the car due for service?", "In March, together with the winter tyres off."),
    ("Where did we put the spare keys?", "In the blue box on the hallway shelf."),
    ("Any plans for the weekend?", "A hike if it does not rain, otherwise the museum."),
]
OFFSITE = (
    "When does the kestrel box copy its snapshots offsite?",
    "The ZFS snapshots on kestrel replicate to the offsite box every night at 02:00 over"
    " WireGuard, and the offsite side keeps thirty days of them.",
)


@pytest.fixture(scope="module")
def embedder() -> QueryEmbedder:
    e = QueryEmbedder("http://127.0.0.1:9")  # never reached: the local space needs no server
    e.embed(LOCAL_SPACE, "warm up")
    return e


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    with connect(reader_url, autocommit=True) as conn:
        yield conn


def index(conn: psycopg.Connection) -> None:
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))


def test_a_turn_deep_in_a_long_segment_is_found_by_its_own_vector(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    # The matching turn comes after ~600 tokens of unrelated chat: a whole-segment vector
    # (MiniLM reads the first 256 tokens) never sees it.
    more = [(p, f"{o} Also: {o}") for p, o in FILLER]
    segment, _ = add_segment(conn, [*FILLER, *more, OFFSITE], native_id="chat-lab")
    add_memory(conn, "Database dumps", "The nightly database dump is encrypted with AES-GCM.")
    add_memory(conn, "Photo archive", "Old photos are copied to an external disk by hand.")
    add_memory(conn, "Router", "The router firmware updates itself on Sundays.")
    index(conn)
    assert (
        get_minilm().count_tokens(
            [conn.execute("SELECT content FROM memories WHERE id = %s", [segment]).fetchone()[0]]
        )[0]
        > 2 * get_minilm().window_tokens
    )  # type: ignore[index]
    result = search(
        reader,
        "at what time do the backups get replicated to the remote machine",
        embedder=embedder,
        channels=("vector",),
        temporal_context=False,
        now=NOW,
    )
    top = result.results[0]
    assert str(top.id) == segment and top.vector_rank == 1
    best = top.passages[0]
    assert best.text == f"Mara: {OFFSITE[0]}\nJonas: {OFFSITE[1]}" and best.vector_rank == 1
    assert (best.source, best.native_task_id) == ("chat_import", "chat-lab")
    (turn,) = best.turns
    assert (turn.ordinal, turn.native_message_ids) == (18, ["chat-lab-m36", "chat-lab-m37"])


def test_a_memory_ranks_by_its_best_passage_not_by_words_scattered_over_it(
    conn, reader, embedder
) -> None:  # type: ignore[no-untyped-def]
    # One turn answers the query; the other segment mentions every query word, but in
    # different turns, more often and never together.
    answer, _ = add_segment(
        conn,
        [
            *FILLER[:3],
            ("The scrub found checksum errors on the mirror.", "Replace the disk with errors."),
            *FILLER[3:6],
        ],
        native_id="chat-answer",
        title="Evening chat",
    )
    scattered, _ = add_segment(
        conn,
        [
            ("Scrub the kitchen floor?", "Yes, scrub it, and scrub the oven."),
            ("Why a checksum on downloads?", "A checksum proves the download; checksum it."),
            ("Disk space on the laptop?", "The disk is full; the old disk had room."),
            ("Any errors in the build?", "Two errors, both typos; errors fixed."),
            ("Mirror for the hallway?", "A round mirror; the mirror from the market."),
        ],
        native_id="chat-scattered",
        title="Chores",
    )
    index(conn)
    result = search(
        reader,
        "scrub checksum errors on the disk mirror",
        embedder=embedder,
        channels=("bm25",),
        temporal_context=False,
        now=NOW,
    )
    ranked = [str(h.id) for h in result.results]
    assert ranked[:2] == [answer, scattered]
    assert [t.ordinal for t in result.results[0].passages[0].turns] == [3]
    # Only the passages a channel ranked come back, best first, at most three per hit.
    assert 1 <= len(result.results[1].passages) <= 3
    ranks = [p.bm25_rank for p in result.results[1].passages]
    assert ranks == sorted(ranks)  # type: ignore[type-var]


def test_every_hit_of_the_full_pipeline_says_which_passages_matched(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    add_segment(conn, [*FILLER[:4], OFFSITE], native_id="chat-lab")
    add_memory(conn, "Offsite replication", "Kestrel snapshots go offsite nightly at 02:00.")
    index(conn)
    result = search(reader, "kestrel offsite snapshots", embedder=embedder, now=NOW)
    ranked = [h for h in result.results if not h.temporal_context]
    assert len(ranked) == 2 and all(h.passages for h in ranked)
    for hit in ranked:
        assert all(p.memory_id == hit.id for p in hit.passages)
        assert all(p.bm25_rank or p.vector_rank for p in hit.passages)
