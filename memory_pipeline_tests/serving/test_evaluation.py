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
    current_first,
    evaluate,
    evidence_lines,
    found_at,
    found_in,
    found_verbatim,
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
    multi = e.by_kind()["multi_hop"]
    assert (multi.n, multi.pack, multi.baseline) == (
        1,
        {1000: 0.6667, 2000: 0.6667},
        {1000: 0.6667, 2000: 0.6667},
    )
    # Verbatim: the baseline packs each whole message (with its speaker), so what the word
    # rule finds there is also there verbatim.
    assert multi.baseline_verbatim == multi.baseline and e.baseline_verbatim == e.baseline
    table = report_table(report)
    assert "pack" in table and "baseline" in table and "1 gold items name no captured" in table
    assert any(line.split()[:2] == ["single_hop", "1"] for line in table.splitlines())
    assert LOCAL_SPACE  # the baseline used the serving space's vectors


def test_verbatim_needs_the_whole_message_the_word_rule_most_of_its_words() -> None:
    evidence = "The offsite copy runs nightly at two over WireGuard tunnels"
    packed = "Jonas: the OFFSITE copy runs  nightly at two\nover WireGuard tunnels, says the doc"
    assert found_verbatim(evidence, packed)  # case and whitespace aside
    reworded = "offsite copy runs nightly two WireGuard tunnels"  # every content word, reworded
    assert found_in(evidence, tokens(reworded), reworded)
    assert not found_verbatim(evidence, reworded)


def test_the_current_value_comes_first_only_when_it_precedes_every_older_one() -> None:
    old = "We host Surfdesk on Heroku with the Postgres add-on"
    new = "Surfdesk now runs on a Hetzner server deployed with Kamal"
    other = "Render was the host for a while, with Postgres 15"
    # Found where the word rule first holds: within the message, well before the old one.
    assert 0 < found_at(new, f"{new}\n{old}") <= len(new) < found_at(new, f"{old}\n{new}")
    assert found_at(new, old) is None
    assert current_first(f"{new}\n{old}\n{other}", [new], [old, other])
    assert not current_first(f"{old}\n{new}", [new], [old])  # the old value read first
    assert not current_first(f"{other}\n{new}\n{old}", [new], [old, other])
    assert current_first(new, [new], [old])  # no older statement packed
    assert not current_first(old, [new], [old])  # the current value left out is not first
    assert not current_first("", [new], [])
    # By items: a statement is placed by the first item holding it on its own text; words
    # scattered over items place nothing (the old value in one item, other words in another).
    assert current_first([new, old], [new], [old])
    assert not current_first([old, new], [new], [old])
    assert not current_first(
        ["Surfdesk now runs on a Hetzner", "server deployed with Kamal"], [new], []
    )
    assert current_first([f"{new}\n{old}"], [new], [old])  # one item: its order counts
    # Several current statements (the value said again later): the first one counts.
    assert current_first(
        f"{new}\n{old}\nStill Hetzner and Kamal, nothing changed", ["x", new], [old]
    )


def test_the_baseline_indexes_each_message_with_its_speaker(conn, reader) -> None:  # type: ignore[no-untyped-def]
    add_segment(conn, [("Which tomatoes for the balcony?", "Cherry tomatoes in big pots.")])
    messages, _ = load_messages(reader)
    assert [(m.speaker, m.document) for m in messages] == [
        ("Mara", "Mara: Which tomatoes for the balcony?"),
        ("Jonas", "Jonas: Cherry tomatoes in big pots."),
    ]
    base = RawBaseline.build(reader, messages, embed=None)
    # The speaker's name is a word of the document: a question naming the person finds it.
    assert base.bm25(query_lexemes(reader, "what did Jonas say")) == [1]
    assert (
        base.pack([1, 0], 100)
        == "Jonas: Cherry tomatoes in big pots.\n\nMara: Which tomatoes for the balcony?"
    )


def test_eval_checks_the_current_value_on_knowledge_updates(conn, reader) -> None:  # type: ignore[no-untyped-def]
    add_segment(
        conn,
        [
            ("Where do we host the booking app?", "On Heroku, with the Postgres add-on."),
            ("Still Heroku?", "No: we moved the booking app to a Hetzner server with Kamal."),
        ],
        native_id="chat-host",
    )
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))

    def item(n: int) -> dict[str, str]:
        return {
            "source": "chat_import",
            "native_task_id": "chat-host",
            "native_message_id": f"chat-host-m{n}",
        }

    def update(qid: str, current: int, older: int) -> GoldQuery:
        return GoldQuery.model_validate(
            {"id": qid, "query": "where is the booking app hosted now", "kind": "knowledge_update",
             "relevant": [item(current), item(older)], "older": [item(older)]}
        )  # fmt: skip

    # One segment, packed whole in turn order: Heroku (m1) is read before Hetzner (m3).
    gold = [update("right", current=1, older=3), update("wrong", current=3, older=1)]
    assert gold[1].current == [gold[1].relevant[0]]
    report = evaluate(reader, gold, QueryEmbedder("http://127.0.0.1:9"))
    e = report.evidence
    assert e is not None
    assert [q.current_first for q in e.per_query] == [
        {1000: True, 2000: True},
        {1000: False, 2000: False},
    ]
    first = e.current_first()
    assert first is not None and (first.questions, first.with_older) == (2, 2)
    assert first.pack == {1000: 0.5, 2000: 0.5}
    lines = evidence_lines(e)
    assert any(line.startswith("current value first (2 knowledge-update") for line in lines)
    assert "  not first in the pack: wrong" in lines
    # Both messages are in the pack verbatim too.
    assert e.pack_verbatim == {1000: 1.0, 2000: 1.0}


def test_the_eval_command_prints_the_current_value_and_derivation_precision(
    conn, db_url, reader_url, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import json

    from typer.testing import CliRunner

    from memory_pipeline.cli import app
    from memory_pipeline_tests.support.memories import add_memory
    from serving.derivation_evaluation import derivation_key, memory_text

    add_segment(
        conn,
        [
            ("Where do we host the booking app?", "On Heroku, with the Postgres add-on."),
            ("Still Heroku?", "No: we moved the booking app to a Hetzner server with Kamal."),
        ],
        native_id="chat-host",
    )
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    add_memory(conn, "Move to Hetzner", "We moved the booking app to Hetzner.", type="decision")
    item = {"source": "chat_import", "native_task_id": "chat-host"}
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps(
            {"id": "u1", "query": "where is the booking app hosted now", "kind": "knowledge_update",
             "relevant": [{**item, "native_message_id": "chat-host-m3"}],
             "older": [{**item, "native_message_id": "chat-host-m1"}]}
        )
    )  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    text = memory_text("Move to Hetzner", "We moved the booking app to Hetzner.")
    key = derivation_key("decision", text)
    labels.write_text(
        json.dumps({"key": key, "kind": "decision", "label": "correct", "reason": "r"}) + "\n"
    )
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("MEMORY_READER_URL", reader_url)
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    args = ["eval", "--gold", str(gold), "--derivation-labels", str(labels)]
    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    # The pack quotes the segment in turn order: Heroku is read before Hetzner.
    assert data["evidence"]["current_value_first"]["pack"] == {"1000": 0.0, "2000": 0.0}
    assert data["derivations"]["kinds"]["decision"]["precision"] == 1.0
    text_out = CliRunner().invoke(app, args)
    assert text_out.exit_code == 0, text_out.output
    assert "current value first (1 knowledge-update questions, 1 naming" in text_out.output
    assert "0 of 1 current derivations have no label" in text_out.output
    missing = CliRunner().invoke(app, ["eval", "--gold", str(gold), "--derivation-labels", "/nope"])
    assert missing.exit_code != 0 and "derivation labels /nope not found" in str(missing.exception)
