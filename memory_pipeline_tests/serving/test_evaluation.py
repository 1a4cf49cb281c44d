"""The evaluation's evidence measure and its raw-message baseline, on tiny corpora whose ranks
are known."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import date

import numpy as np
import psycopg
import pytest

from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline_tests.support.segments import add_segment
from serving.evaluation import (
    GoldQuery,
    RawBaseline,
    RawMessage,
    evaluate,
    found_in,
    load_messages,
    query_lexemes,
    report_table,
    turn_messages,
)
from serving.search import QueryEmbedder
from serving.text import tokens


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    with connect(reader_url, autocommit=True) as conn:
        yield conn


def test_messages_are_recovered_from_turns() -> None:
    assert turn_messages("q1\n\nq2", "a1", ["m1", "m2", "m3"]) == [
        ("m1", "q1"),
        ("m2", "q2"),
        ("m3", "a1"),
    ]
    # A message with a blank line inside: the pieces no longer match the ids one to one, so
    # the prompt and the outcome are one message each.
    assert turn_messages("q1\n\nstill q1", "a1", ["m1", "m2"]) == [
        ("m1", "q1\n\nstill q1"),
        ("m2", "a1"),
    ]
    assert turn_messages("q", "", []) == [(None, "q")]  # an unanswered turn


def test_evidence_needs_seventy_percent_of_its_content_words() -> None:
    evidence = "The offsite copy runs nightly at two over WireGuard tunnels"
    words = tokens(evidence)  # offsite copy run night two wireguard tunnel (7)
    assert len(words) == 7
    most = "offsite copy runs nightly two WireGuard"  # 6 of 7
    some = "offsite copy nightly two"  # 4 of 7
    assert found_in(evidence, tokens(most), most)
    assert not found_in(evidence, tokens(some), some)


def message(i: int, text: str) -> RawMessage:
    return RawMessage("chat_import", "t", i, f"m{i}", text)


def test_the_baseline_ranks_by_bm25_and_vectors_with_rrf(conn) -> None:  # type: ignore[no-untyped-def]
    docs = [
        "restic backups run nightly",  # both query words
        "restic restic restic restic",  # one word, often
        "tomatoes want sun",  # neither
        "backups of the photos",  # the other word
    ]
    base = RawBaseline.build(conn, [message(i, d) for i, d in enumerate(docs)], embed=None)
    lexemes = query_lexemes(conn, "restic backups")
    assert lexemes == ["backup", "restic"]
    # Okapi BM25 by hand: N = 4, df(restic) = 2, df(backup) = 2, dl = 4, 4, 3, 2 lexemes.
    avgdl = (4 + 4 + 3 + 2) / 4
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))

    def term(tf: int, dl: int) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))

    expected = {0: term(1, 4) + term(1, 4), 1: term(4, 4), 3: term(1, 2)}
    assert base.bm25(lexemes) == sorted(expected, key=lambda d: -expected[d]) == [0, 1, 3]
    # Vectors: the query vector is closest to document 3, then 2. RRF (k 60) of both lists.
    base.vectors = np.eye(4, dtype=np.float32)
    query = np.array([0.0, 0.0, 0.5, 0.9], dtype=np.float32)
    assert base.nearest(query) == [3, 2, 0, 1]  # equal cosines keep document order
    # 0: 1/61 + 1/63 ties with 3: 1/63 + 1/61 (document order first); 1: 1/62 + 1/64; 2: 1/62.
    assert base.rank(lexemes, query) == [0, 3, 1, 2]
    # Packed in rank order; a message that does not fit is skipped, a later one may fit:
    # 7 tokens, then 6 and 7 do not fit in 12, then 5 does.
    assert base.pack([0, 3, 1, 2], 12) == "restic backups run nightly\n\ntomatoes want sun"


def test_eval_reports_evidence_for_the_pack_and_the_baseline(conn, reader) -> None:  # type: ignore[no-untyped-def]
    add_segment(
        conn,
        [
            ("Which tomatoes for the balcony?", "Cherry tomatoes in big pots."),
            ("When does kestrel copy snapshots offsite?", "Every night at 02:00 over WireGuard."),
            ("Is the router fan loud?", "Yes, replace the fan."),
        ],
        native_id="chat-lab",
    )
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    messages, turn_of = load_messages(reader)
    assert [m.message_id for m in messages] == [f"chat-lab-m{i}" for i in range(6)]
    assert turn_of[("chat_import", "chat-lab", "chat-lab-m3")] == 1
    gold = [
        GoldQuery.model_validate(
            {
                "id": "q1",
                "query": "what time do the kestrel snapshots go offsite",
                "relevant": [
                    {
                        "source": "chat_import",
                        "native_task_id": "chat-lab",
                        "native_message_id": "chat-lab-m3",
                    },
                    {"source": "chat_import", "native_task_id": "chat-lab", "turn_ordinal": 2},
                    {"source": "chat_import", "native_task_id": "nowhere", "turn_ordinal": 0},
                ],
                "kind": "multi_hop",
            }
        ),
        GoldQuery.model_validate(
            {
                "id": "q2",
                "query": "which tomato variety for the balcony pots",
                "relevant": [
                    {
                        "source": "chat_import",
                        "native_task_id": "chat-lab",
                        "native_message_id": "chat-lab-m1",
                    }
                ],
                "kind": "single_hop",
            }
        ),
    ]
    embedder = QueryEmbedder("http://127.0.0.1:9")
    report = evaluate(reader, gold, embedder)
    e = report.evidence
    assert e is not None and e.messages == 6 and e.unresolved == 1
    # Both budgets hold the whole corpus: the named messages and turn are found, the unknown
    # task never is.
    assert e.pack == {1000: round((2 / 3 + 1) / 2, 4), 2000: round((2 / 3 + 1) / 2, 4)}
    assert e.baseline == e.pack
    assert report.scores["full"].recall_at_10 == round((2 / 3 + 1) / 2, 4)
    # Each question's own figures, and the mean per kind, are reported beside the totals.
    assert [(q.id, q.kind, q.pack[1000]) for q in e.per_query] == [
        ("q1", "multi_hop", 2 / 3),
        ("q2", "single_hop", 1.0),
    ]
    assert e.by_kind()["multi_hop"] == (
        1,
        {1000: 0.6667, 2000: 0.6667},
        {1000: 0.6667, 2000: 0.6667},
    )
    table = report_table(report)
    assert "pack" in table and "baseline" in table and "1 gold items name no captured" in table
    assert any(line.split()[:2] == ["single_hop", "1"] for line in table.splitlines())
    assert LOCAL_SPACE  # the baseline used the serving space's vectors
