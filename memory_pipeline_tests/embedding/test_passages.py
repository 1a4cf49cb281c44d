"""Passages: cut at turn boundaries within the embedder's window, stored idempotently by the
embedding asset, re-embedded on a space switch, and never embedded twice by concurrent runs."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from datetime import date

import numpy as np
import psycopg
import pytest

from memory_pipeline import tuning
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.ollama_embedder import OllamaEmbedder
from memory_pipeline.embedding.passages import Unit, cut, embed_text, message_spans
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import days_missing_vectors, embed_window
from memory_pipeline_tests.support.fake_ollama import running_fake_ollama
from memory_pipeline_tests.support.memories import NOW, add_memory
from memory_pipeline_tests.support.segments import add_segment

BGE = "ollama:bge-m3:1024"
ALL = (date(2026, 1, 1), date(2027, 1, 1))
LONG_TURN = " ".join(
    f"Sentence {i} explains step {i} of restoring the kestrel backup on the lab server."
    for i in range(60)
)


def count(texts: Sequence[str]) -> list[int]:
    return get_minilm().count_tokens(texts)


# --- cutting (pure) ---------------------------------------------------------------------------
def test_a_segment_is_cut_at_turn_boundaries() -> None:
    turns = [Unit(f"User: question {i}\nAgent: answer {i}", (uuid.uuid4(),)) for i in range(4)]
    one = cut(turns, "", 256, count, max_units=1)
    assert [p.text for p in one] == [u.text for u in turns]
    assert [p.turn_ids for p in one] == [u.turn_ids for u in turns]
    two = cut(turns, "", 256, count, max_units=2)
    assert [p.text for p in two] == [
        turns[0].text + "\n\n" + turns[1].text,
        turns[2].text + "\n\n" + turns[3].text,
    ]
    assert two[1].turn_ids == turns[2].turn_ids + turns[3].turn_ids
    # The token limit closes a passage before max_units: whole turns never straddle passages.
    tight = cut(turns, "", count([turns[0].text])[0] + 2, count, max_units=4)
    assert [p.text for p in tight] == [u.text for u in turns]


def test_a_long_turn_is_cut_at_sentence_boundaries_within_the_window() -> None:
    turn_id = uuid.uuid4()
    limit = get_minilm().window_tokens
    assert count([LONG_TURN])[0] > 3 * limit  # MiniLM alone would read a third of it
    passages = cut([Unit(LONG_TURN, (turn_id,))], "", limit, count)
    assert len(passages) > 3
    assert all(n <= limit for n in count([p.embed_text for p in passages]))
    assert all(p.turn_ids == (turn_id,) for p in passages)
    # Exact substrings, whole sentences, in order, and nothing lost.
    assert all(p.text.endswith("server.") and p.text.startswith("Sentence") for p in passages)
    assert " ".join(p.text for p in passages) == LONG_TURN


def test_limits_count_the_heading_and_fall_back_to_words_and_characters() -> None:
    heading = "Kestrel backup rotation"
    passages = cut([Unit(LONG_TURN)], heading, 40, count)
    assert all(n <= 40 for n in count([p.embed_text for p in passages]))
    assert all(p.embed_text.startswith(heading + "\n") for p in passages)
    # One sentence longer than the limit: cut at words; one word longer: at characters.
    words = "word " * 100
    assert all(n <= 20 for n in count([p.text for p in cut([Unit(words)], "", 20, count)]))
    blob = "x" * 500
    estimate = lambda texts: [-(-len(t) // 3) for t in texts]  # noqa: E731 - Ollama's estimate
    pieces = cut([Unit(blob)], "", 50, estimate)
    assert "".join(p.text for p in pieces) == blob and all(len(p.text) <= 150 for p in pieces)


def test_the_embedders_report_their_window() -> None:
    assert get_minilm().window_tokens == 256  # sentence-transformers' max_seq_length
    assert count(["", "hello world"]) == [2, 4]  # [CLS] and [SEP] included
    with running_fake_ollama(embed_dims={"bge-m3": 1024}) as fake:
        bge = OllamaEmbedder(fake.host, BGE)
        assert bge.window_tokens == tuning.OLLAMA_UNKNOWN_WINDOW_TOKENS  # fake reports none
        assert bge.count_tokens(["abcdefg"]) == [3]


# --- storage ----------------------------------------------------------------------------------
def passages(conn: psycopg.Connection, memory_id: str) -> list[tuple[str, int, str, list[str]]]:
    rows = conn.execute(
        "SELECT id, ordinal, text, turn_ids FROM memory_passages WHERE memory_id = %s"
        " ORDER BY ordinal",
        [memory_id],
    ).fetchall()
    return [(str(r[0]), r[1], r[2], [str(t) for t in r[3]]) for r in rows]


def passage_vectors(conn: psycopg.Connection, space: str) -> dict[str, np.ndarray]:
    rows = conn.execute(
        "SELECT passage_id, embedding FROM passage_embeddings WHERE space = %s", [space]
    ).fetchall()
    return {str(pid): vec.to_numpy() for pid, vec in rows}


TURNS = [
    ("Should the lab backups move to restic?", "Yes, restic with the B2 bucket, nightly."),
    ("How long do we keep snapshots?", "Seven daily and four weekly snapshots."),
    ("And the kestrel server?", LONG_TURN),
]


def test_the_asset_stores_passages_with_their_turns_and_vectors(conn) -> None:  # type: ignore[no-untyped-def]
    segment, turn_ids = add_segment(conn, TURNS)
    decision = add_memory(conn, "Backups use restic", "We chose restic for the lab backups.")
    report = embed_window(conn, get_minilm(), *ALL)
    seg = passages(conn, segment)
    assert [p[3] for p in seg[:3]] == [[turn_ids[0]], [turn_ids[1]], [turn_ids[2]]]
    assert seg[0][2] == "Mara: Should the lab backups move to restic?\nJonas: Yes, restic with" + (
        " the B2 bucket, nightly."
    )
    assert len(seg) > 3 and {tuple(p[3]) for p in seg[2:]} == {(turn_ids[2],)}
    (only,) = passages(conn, decision)
    assert only[2] == "We chose restic for the lab backups." and only[3] == []
    vectors = passage_vectors(conn, LOCAL_SPACE)
    assert set(vectors) == {p[0] for p in seg} | {only[0]}
    expected = get_minilm().embed([embed_text("", seg[1][2])])[0]
    assert float(vectors[seg[1][0]] @ expected) > 0.9999
    # The one-passage memory reuses its memory vector (same text), nothing is embedded twice.
    assert report.passages_reused == 1 and report.passages_embedded == len(seg)
    assert report.serving_space == LOCAL_SPACE and report.space_coverage == 1.0
    # Each passage has its own full-text entry; the decision's title weighs A.
    (weights,) = conn.execute(
        "SELECT search_vector::text FROM memory_passages WHERE id = %s", [only[0]]
    ).fetchone()
    assert weights == "'backup':1A,10B 'chose':5B 'lab':9B 'restic':3A,6B 'use':2A"


def test_re_running_changes_nothing_and_a_grown_segment_keeps_its_passages(conn) -> None:  # type: ignore[no-untyped-def]
    segment, _ = add_segment(conn, TURNS[:2])
    embed_window(conn, get_minilm(), *ALL)
    before = passages(conn, segment)
    vectors = passage_vectors(conn, LOCAL_SPACE)
    again = embed_window(conn, get_minilm(), *ALL)
    assert (again.embedded, again.passages_cut, again.passages_embedded) == (0, 0, 0)
    assert passages(conn, segment) == before
    # The semantic pass grows the tail segment by a turn: old passages keep id and vector.
    task_id = conn.execute(
        "SELECT task_id FROM topic_segments WHERE memory_id = %s", [segment]
    ).fetchone()[0]  # type: ignore[index]
    turn = conn.execute(
        "INSERT INTO agent_turns (task_id, ordinal, prompt, outcome, content_sha256)"
        " VALUES (%s, 2, 'Where do the keys live?', 'In the password manager.', 'h') RETURNING id",
        [task_id],
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
        " SELECT %s, %s, id, task_id, 'segment' FROM topic_segments WHERE memory_id = %s",
        [segment, turn, segment],
    )
    conn.execute("UPDATE memories SET content = content || ' more' WHERE id = %s", [segment])
    grown = embed_window(conn, get_minilm(), *ALL)
    after = passages(conn, segment)
    assert after[:2] == before and after[2][2] == "User: Where do the keys live?\nAgent: In the" + (
        " password manager."
    )
    assert (grown.passages_cut, grown.passages_embedded) == (1, 1)
    assert all(np.allclose(passage_vectors(conn, LOCAL_SPACE)[p], vectors[p]) for p, *_ in before)


def test_passages_are_re_embedded_on_a_space_switch(conn) -> None:  # type: ignore[no-untyped-def]
    segment, _ = add_segment(conn, TURNS)
    add_memory(conn, "Backups use restic", "We chose restic.", partition_day="2026-10-01")
    embed_window(conn, get_minilm(), *ALL)
    before = passages(conn, segment)
    with running_fake_ollama(embed_dims={"bge-m3": 1024}) as fake:
        bge = OllamaEmbedder(fake.host, BGE)
        assert days_missing_vectors(conn, BGE) == {date(2026, 10, 1), NOW.date()}
        half = embed_window(conn, bge, date(2026, 10, 1), date(2026, 10, 2))
        serving = conn.execute("SELECT name FROM embedding_spaces WHERE serving").fetchone()
        assert half.serving_space == LOCAL_SPACE == serving[0]  # type: ignore[index]
        done = embed_window(conn, bge, *ALL)
    assert done.serving_space == BGE and done.passages_cut == 0  # they fit: not cut again
    assert passages(conn, segment) == before  # same passages, same ids...
    bge_vectors = passage_vectors(conn, BGE)  # ...each with a vector in the new space
    assert {p[0] for p in before} <= set(bge_vectors)
    assert {v.shape for v in bge_vectors.values()} == {(1024,)}
    assert len(passage_vectors(conn, LOCAL_SPACE)) == len(bge_vectors)  # the old space stays
    # Each message of a whole-turn passage too.
    assert set(piece_vectors(conn, BGE)) == set(piece_vectors(conn, LOCAL_SPACE)) != set()
    assert {v.shape for v in piece_vectors(conn, BGE).values()} == {(1024,)}
    assert days_missing_vectors(conn, BGE) == set()
    spaces = conn.execute("SELECT DISTINCT cut_for FROM memory_passages").fetchall()
    assert spaces == [(BGE,)]


def piece_vectors(conn: psycopg.Connection, space: str) -> dict[tuple[str, int], np.ndarray]:
    rows = conn.execute(
        "SELECT passage_id, piece, embedding FROM passage_piece_embeddings WHERE space = %s",
        [space],
    ).fetchall()
    return {(str(pid), n): vec.to_numpy() for pid, n, vec in rows}


def test_each_message_of_a_whole_turn_passage_has_its_own_vector(conn) -> None:  # type: ignore[no-untyped-def]
    segment, _ = add_segment(conn, TURNS)
    report = embed_window(conn, get_minilm(), *ALL)
    seg = passages(conn, segment)
    vectors = piece_vectors(conn, LOCAL_SPACE)
    # The two one-turn passages: the question and the answer, as the passage renders them,
    # each pooled from its own tokens in the turn's forward pass...
    for pid, _, text, _ in seg[:2]:
        question, answer = text.split("\n")
        _, (expected,) = get_minilm().embed_spans([text], [message_spans([question, answer])])
        assert float(vectors[(pid, 0)] @ expected[0]) > 0.9999
        assert float(vectors[(pid, 1)] @ expected[1]) > 0.9999
        alone = get_minilm().embed([question, answer])  # not as if each stood alone
        assert float(vectors[(pid, 1)] @ alone[1]) < 0.99
    # ...and none for the long turn cut at sentence boundaries (no passage quotes it whole).
    assert set(vectors) == {(p[0], n) for p in seg[:2] for n in (0, 1)}
    whole = conn.execute(
        "SELECT whole_turns FROM memory_passages WHERE memory_id = %s ORDER BY ordinal",
        [segment],
    ).fetchall()
    assert [w for (w,) in whole] == [True, True] + [False] * (len(seg) - 2)
    assert report.pieces_embedded == 4
    # Idempotent: a re-run embeds nothing.
    assert embed_window(conn, get_minilm(), *ALL).pieces_embedded == 0
    # A message without its vector (written before this table existed, say) marks its day for
    # the schedule's backfill, and the next run embeds just that one.
    conn.execute(
        "DELETE FROM passage_piece_embeddings WHERE passage_id = %s AND piece = 1", [seg[0][0]]
    )
    assert days_missing_vectors(conn, LOCAL_SPACE) == {NOW.date()}
    assert embed_window(conn, get_minilm(), *ALL).pieces_embedded == 1
    assert days_missing_vectors(conn, LOCAL_SPACE) == set()
    # A passage cut again goes with its messages' vectors (ON DELETE CASCADE).
    conn.execute("DELETE FROM memory_passages WHERE id = %s", [seg[0][0]])
    assert not [k for k in piece_vectors(conn, LOCAL_SPACE) if k[0] == seg[0][0]]


def test_passages_that_do_not_fit_a_new_window_are_cut_again(conn) -> None:  # type: ignore[no-untyped-def]
    segment, _ = add_segment(conn, TURNS)
    embed_window(conn, get_minilm(), *ALL)
    before = passages(conn, segment)

    class Narrow:
        """An embedder with a 64-token window in the local space's place."""

        space, dims, window_tokens = LOCAL_SPACE, 384, 64

        def count_tokens(self, texts: Sequence[str]) -> list[int]:
            return get_minilm().count_tokens(texts)

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return get_minilm().embed(texts)

    conn.execute("UPDATE memory_passages SET cut_for = %s", [BGE])  # as if cut for bge-m3
    report = embed_window(conn, Narrow(), *ALL)
    after = passages(conn, segment)
    assert report.passages_cut == 1 and len(after) > len(before)
    assert all(n <= 64 for n in count([p[2] for p in after]))
    assert after[:2] == before[:2]  # the short turns fit and keep their passages


class SlowEmbedder:
    """MiniLM that records what it embeds and lingers in embed() so another run overlaps."""

    def __init__(self, delay: float) -> None:
        self.inner = get_minilm()
        self.space, self.dims = self.inner.space, self.inner.dims
        self.window_tokens = self.inner.window_tokens
        self.delay = delay
        self.texts: list[str] = []
        self.entered = threading.Event()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        self.entered.set()
        time.sleep(self.delay)
        return self.inner.embed(texts)


def test_concurrent_runs_never_embed_the_same_rows(conn, db_url) -> None:  # type: ignore[no-untyped-def]
    for i in range(6):
        add_memory(conn, f"Note {i}", f"Backup note number {i} about restic snapshots.")
    add_segment(conn, TURNS)
    first, second = SlowEmbedder(0.5), SlowEmbedder(0.0)
    reports = {}

    def run(name: str, embedder: SlowEmbedder) -> None:
        with connect(db_url, autocommit=True) as own:
            reports[name] = embed_window(own, embedder, *ALL)

    a = threading.Thread(target=run, args=("first", first))
    a.start()
    assert first.entered.wait(10)  # the first run holds its batch while it embeds...
    run("second", second)  # ...and the second run, over the same days, skips what it holds
    a.join(300)
    assert not a.is_alive() and set(reports) == {"first", "second"}
    embedded = first.texts + second.texts
    assert len(embedded) == len(set(embedded))  # no text embedded twice
    rows = conn.execute(
        "SELECT (SELECT count(*) FROM memory_embeddings),"
        " (SELECT count(*) FROM passage_embeddings), (SELECT count(*) FROM memory_passages)"
    ).fetchone()
    assert rows[0] == 7 and rows[1] == rows[2]  # type: ignore[index]
    assert reports["second"].embedded == 0
    assert reports["first"].embedded + reports["second"].embedded == 7
    again = embed_window(conn, get_minilm(), *ALL)
    assert (again.embedded, again.passages_embedded, again.serving_space) == (0, 0, LOCAL_SPACE)


def test_a_run_never_waits_for_a_passage_another_run_holds(conn, db_url) -> None:  # type: ignore[no-untyped-def]
    # Two `memory-pipeline run` at once deadlocked: one run, copying memory vectors to
    # one-passage memories' passages, waited for a passage the other run had claimed while
    # holding passages that run was about to write.
    held = add_memory(conn, "Backups use restic", "We chose restic for the lab backups.")
    free = add_memory(conn, "Keys", "The keys live in the password manager.")
    embed_window(conn, get_minilm(), *ALL)
    conn.execute("DELETE FROM passage_embeddings")
    with connect(db_url) as other:  # another run holds the passage of `held`
        other.execute("SELECT 1 FROM memory_passages WHERE memory_id = %s FOR UPDATE", [held])
        conn.execute("SET lock_timeout = '5s'")
        report = embed_window(conn, get_minilm(), *ALL)
        other.rollback()
    assert report.passages_reused == 1 and report.passages_embedded == 0  # `free` only
    assert embed_window(conn, get_minilm(), *ALL).passages_reused == 1  # `held`, once free
    vectors = passage_vectors(conn, LOCAL_SPACE)
    assert {p[0] for m in (held, free) for p in passages(conn, m)} == set(vectors)


@pytest.mark.parametrize("text", ["", "   "])
def test_an_empty_memory_still_has_one_passage(conn, text: str) -> None:  # type: ignore[no-untyped-def]
    mid = add_memory(conn, "Only a title", text)
    report = embed_window(conn, get_minilm(), *ALL)
    assert [(p[1], p[2]) for p in passages(conn, mid)] == [(0, "")]
    assert report.serving_space == LOCAL_SPACE
    assert embed_window(conn, get_minilm(), *ALL).passages_cut == 0


def test_batches_after_the_first_start_where_the_last_ended(conn, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Each batch resumes after the previous batch's last key (memory, passage, and passage +
    # message number): with batches of 2, every memory, passage and message still gets exactly
    # one vector, and nothing is left for a re-run.
    monkeypatch.setattr("memory_pipeline.embedding.store.EMBED_BATCH_SIZE", 2)
    for i in range(5):
        add_memory(conn, f"Note {i}", f"Backup note number {i} about restic snapshots.")
    add_segment(conn, TURNS)
    add_segment(conn, TURNS[:2], native_id="thread-2")
    report = embed_window(conn, get_minilm(), *ALL)
    counts = conn.execute(
        "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memory_embeddings),"
        " (SELECT count(*) FROM memory_passages), (SELECT count(*) FROM passage_embeddings),"
        " (SELECT count(*) FROM passage_piece_embeddings)"
    ).fetchone()
    assert counts[0] == counts[1] == 7 and counts[2] == counts[3]  # type: ignore[index]
    assert report.pieces_embedded == counts[4] == 8  # type: ignore[index]
    again = embed_window(conn, get_minilm(), *ALL)
    assert (again.embedded, again.passages_embedded, again.pieces_embedded) == (0, 0, 0)
