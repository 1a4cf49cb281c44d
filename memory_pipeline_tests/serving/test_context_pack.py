"""Context packs quote what matched: excerpts within the budget, each memory once, with the
provenance of every excerpt, and say what they cut and how to read it whole."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime

import numpy as np
import psycopg
import pytest

from memory_pipeline import tuning
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.models.provenance import Provenance, TurnRef
from memory_pipeline_tests.support.memories import NOW, add_memory
from memory_pipeline_tests.support.segments import add_segment
from serving.context_pack import (
    Piece,
    _pieces,
    asks_current_state,
    context,
    pack_excerpts,
    passage_vectors,
    tokens_of,
)
from serving.models import PassageMatch, PassageTurn, SearchHit
from serving.render import pack_item_text, pack_text
from serving.search import QueryEmbedder, passage_details

HEAD = ("Which tomatoes should I plant on the balcony this year?", "Cherry tomatoes in big pots.")
TURNS = [
    HEAD,
    ("The router fan is loud again.", "Replace the fan; the bearings are worn out."),
    ("Can you recommend a sci-fi book?", "Try a long space opera with a slow start."),
    ("Should kestrel keep local snapshots?", "Yes, hourly ones for two days."),
    (
        "When does the kestrel box copy its snapshots offsite?",
        "Every night at 02:00 over WireGuard; the offsite side keeps thirty days.",
    ),
    ("And if the offsite box is down?", "The job retries hourly and mails you after three."),
    ("What's for dinner?", "Lentil soup with bread from the bakery downstairs."),
]
QUERY = "when are the kestrel snapshots copied offsite"


@pytest.fixture(scope="module")
def embedder() -> QueryEmbedder:
    e = QueryEmbedder("http://127.0.0.1:9")
    e.embed(LOCAL_SPACE, "warm up")
    return e


@pytest.fixture
def reader(reader_url: str) -> Iterator[psycopg.Connection]:
    with connect(reader_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def corpus(conn: psycopg.Connection) -> dict[str, str]:
    segment, _ = add_segment(conn, TURNS, native_id="chat-lab", title=HEAD[0])
    ids = {
        "segment": segment,
        "decision": add_memory(
            conn,
            "Kestrel snapshots go offsite nightly",
            "We decided kestrel copies its ZFS snapshots offsite every night at 02:00.",
            type="decision",
        ),
        "correction": add_memory(
            conn,
            "Offsite correction",
            "Agent did: copied kestrel snapshots offsite hourly. User expected instead: nightly.",
            type="correction_episode",
            mem_class="episodic",
        ),
    }
    for i in range(12):
        ids[f"note{i}"] = add_memory(
            conn, f"Snapshot note {i}", f"Snapshot retention note {i}: keep {i} copies offsite."
        )
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    return ids


def packed_text(pack) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(pack_item_text(i) for i in pack.items)


def test_a_pack_quotes_the_matching_turn_not_the_head_of_the_segment(
    corpus, reader, embedder
) -> None:  # type: ignore[no-untyped-def]
    small = context(reader, QUERY, 120, embedder=embedder)
    seg = next(i for i in small.items if str(i.memory_id) == corpus["segment"])
    matched = [t.ordinal for e in seg.excerpts if not e.truncated for t in e.turns]
    assert 4 in matched and 0 not in matched
    assert seg.truncated  # excerpts only: memory_read returns the whole segment
    # The head of the segment is not what matched: not quoted.
    assert HEAD[0] not in packed_text(small).replace(f'title="{HEAD[0]}"', "")
    assert f"Mara: {TURNS[4][0]}\nJonas: {TURNS[4][1]}" in packed_text(small)
    pack = context(reader, QUERY, 2000, embedder=embedder)
    items = {str(i.memory_id): i for i in pack.items}
    seg = items[corpus["segment"]]
    # Every excerpt says which turn it is, down to the native message ids.
    for e in seg.excerpts:
        (turn,) = e.turns
        assert e.native_task_id == "chat-lab"
        assert turn.native_message_ids == [
            f"chat-lab-m{2 * turn.ordinal}",
            f"chat-lab-m{2 * turn.ordinal + 1}",
        ]
        assert e.text == f"Mara: {TURNS[turn.ordinal][0]}\nJonas: {TURNS[turn.ordinal][1]}"
    assert seg.truncated == (len(seg.excerpts) < len(TURNS))  # all of it: not an excerpt
    assert not items[corpus["decision"]].truncated  # a one-passage memory is whole
    assert corpus["correction"] not in items  # evidence, never steering
    # The budget counts what the agent reads, and holds.
    assert pack.tokens_used == sum(tokens_of(pack_item_text(i)) for i in pack.items) <= 2000
    assert len(items) == len(pack.items)  # no memory twice


def test_neighbouring_turns_come_when_the_budget_allows(corpus, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    roomy = context(reader, QUERY, 4000, embedder=embedder)
    seg = next(i for i in roomy.items if str(i.memory_id) == corpus["segment"])
    matched = {t.ordinal for e in seg.excerpts if not e.neighbour for t in e.turns}
    neighbours = {t.ordinal for e in seg.excerpts if e.neighbour for t in e.turns}
    assert 4 in matched and neighbours and not neighbours & matched
    assert all(n - 1 in matched or n + 1 in matched for n in neighbours)
    tight = context(reader, QUERY, 150, embedder=embedder)
    assert tight.tokens_used <= 150 and 1 <= len(tight.items) < len(roomy.items)
    near = [
        (i.memory_id, e.passage_ordinal) for i in tight.items for e in i.excerpts if e.neighbour
    ]
    assert len(near) < sum(e.neighbour for i in roomy.items for e in i.excerpts)
    matches = {
        (i.memory_id, e.passage_ordinal) for i in tight.items for e in i.excerpts if not e.neighbour
    }
    assert all((m, o - 1) in matches or (m, o + 1) in matches for m, o in near)
    assert tight.truncated and tight.left_out_count >= 1
    text = pack_text(tight)
    assert "memory_read" in text and str(tight.left_out[0].memory_id) in text


def passage(memory: uuid.UUID, ordinal: int, text: str, task: str) -> PassageMatch:
    return PassageMatch(
        id=uuid.uuid4(),
        memory_id=memory,
        ordinal=ordinal,
        text=text,
        source="chat_import",
        native_task_id=task,
        turns=[
            PassageTurn(ordinal=ordinal, native_turn_id=None, native_message_ids=[f"m{ordinal}"])
        ],
    )


def hit(kind: str, title: str, texts: list[str]) -> SearchHit:
    mid = uuid.uuid4()
    return SearchHit(
        id=mid,
        type=kind,
        title=title,
        content="\n\n".join(texts),
        project=None,
        mem_class=None,
        source_type="chat_import",
        status="active",
        tags=[],
        created_at=NOW,
        updated_at=NOW,
        score=0.5,
        rrf=0.01,
        bm25_rank=1,
        vector_rank=1,
        components={},
        passages=[passage(mid, i, t, f"chat-{title}") for i, t in enumerate(texts)],
    )


def ranked(h: SearchHit, rank: int = 1) -> SearchHit:
    """The hit with its passages ranked `rank` in both channels (ahead of unranked ones)."""
    passages = [p.model_copy(update={"bm25_rank": rank, "vector_rank": rank}) for p in h.passages]
    return h.model_copy(update={"passages": passages})


def test_packing_order_skips_and_dedup_are_deterministic() -> None:
    a = hit("segment", "Chat A", ["Mara: first A turn\nJonas: the answer is 42", "Mara: second A"])
    b = hit("decision", "The answer", ["the answer is 42"])  # already quoted by A
    c = hit("segment", "Chat C", ["x" * 2000])  # too long for what is left: skipped
    d = hit("insight", "Small", ["a small insight"])
    pack = pack_excerpts(
        "q", 200, [a, b, c, d], {}, {str(h.id): len(h.passages) for h in [a, b, c, d]}
    )
    assert [i.memory_id for i in pack.items] == [a.id, d.id]
    # Items follow the hits' order; a memory's excerpts follow its passages' order.
    assert [e.text for e in pack.items[0].excerpts] == [p.text for p in a.passages]
    assert [lo.memory_id for lo in pack.left_out] == [c.id]  # b is represented, c left out
    assert pack.truncated and pack.tokens_used <= 200
    assert not pack.items[0].truncated  # both of a's passages: the whole memory


def test_the_best_excerpt_is_cut_rather_than_returning_nothing() -> None:
    big = hit("segment", "Chat", ["word " * 400])
    pack = pack_excerpts("q", 60, [big], {}, {str(big.id): 1})
    (item,) = pack.items
    assert item.truncated and item.excerpts[0].truncated
    assert item.excerpts[0].text.endswith("[...]")
    assert pack.tokens_used == tokens_of(pack_item_text(item)) <= 60


def dated(kind: str, title: str, texts: list[str], when: datetime) -> SearchHit:
    h = hit(kind, title, texts)
    return h.model_copy(update={"created_at": when, "updated_at": when})


def celery_jobs() -> SearchHit:
    """The older statement of a fact that the current-state tests update."""
    return dated(
        "segment",
        "Jobs",
        ["Mara: What runs our background jobs?\nJonas: Celery workers on Redis."],
        datetime(2026, 3, 1, tzinfo=UTC),
    )


def test_a_current_state_question_packs_the_newest_statement_of_the_fact_first() -> None:
    old = celery_jobs()
    other = dated(
        "segment",
        "Lunch",
        ["Mara: Lunch at the usual place?\nJonas: Sure, noon."],
        datetime(2026, 7, 1, tzinfo=UTC),
    )
    new = dated(
        "segment",
        "Jobs again",
        ["Mara: We moved the background jobs to Dramatiq last week.\nJonas: Good, fewer leaks."],
        datetime(2026, 6, 1, tzinfo=UTC),
    )
    hits = [old, other, new]  # the search ranked the old statement first
    counts = {str(h.id): 1 for h in hits}
    one_item = tokens_of(pack_item_text(_item_of(old))) + 5  # room for one item only

    current = pack_excerpts("What runs the background jobs now?", one_item, hits, {}, counts)
    assert [i.memory_id for i in current.items] == [new.id]
    # The same question about the past keeps the search's order.
    past = pack_excerpts("What ran the background jobs in March?", one_item, hits, {}, counts)
    assert [i.memory_id for i in past.items] == [old.id]
    # A later mention of the same thing that states no change is not an update.
    mention = dated(
        "segment",
        "Jobs fine",
        ["Mara: The background jobs ran fine all year.\nJonas: Good to hear."],
        datetime(2026, 9, 1, tzinfo=UTC),
    )
    counts[str(mention.id)] = 1
    with_mention = pack_excerpts(
        "What runs the background jobs now?", one_item, [old, mention], {}, counts
    )
    assert [i.memory_id for i in with_mention.items] == [old.id]
    # A newer passage that does not state the fact (shares too few query words) is not lifted.
    unrelated = pack_excerpts(
        "What runs the background jobs now?", one_item, [old, other], {}, counts
    )
    assert [i.memory_id for i in unrelated.items] == [old.id]
    assert asks_current_state("Which race is Aoife training for these days?")
    assert not asks_current_state("Which currency does ledger-core use?")


def _item_of(h: SearchHit):  # type: ignore[no-untyped-def]
    return pack_excerpts("q", 10_000, [h], {}, {str(h.id): 1}).items[0]


def test_no_turn_is_packed_twice_across_a_segment_and_a_decision_drawn_from_it() -> None:
    seg = hit(
        "segment",
        "Chat A",
        [
            "Mara: Which database for billfold?\nJonas: We decided on Postgres 16 for JSONB.",
            "Mara: And the queue?\nJonas: Dramatiq.",
        ],
    )
    turn0 = seg.passages[0]
    dec = hit("decision", "Postgres 16", ["We decided on Postgres 16 for JSONB."])
    dec_passage = dec.passages[0].model_copy(
        update={
            "native_task_id": turn0.native_task_id,
            "turns": turn0.turns,
            "bm25_rank": 1,  # the best passage of all: packed first
            "vector_rank": 1,
        }
    )
    dec = dec.model_copy(update={"passages": [dec_passage]})
    hits = [dec, seg]  # the decision ranks first and is packed first
    counts = {str(h.id): len(h.passages) for h in hits}
    pack = pack_excerpts("which database", 2000, hits, {}, counts)
    # The segment's turn says it all: the decision gave its room back and is not "left out".
    assert [i.memory_id for i in pack.items] == [seg.id]
    assert pack.left_out_count == 0
    quoted = [
        (e.native_task_id, t.ordinal) for i in pack.items for e in i.excerpts for t in e.turns
    ]
    assert len(quoted) == len(set(quoted)) == 2
    assert pack.tokens_used == sum(tokens_of(pack_item_text(i)) for i in pack.items)
    # Every excerpt names where it came from, down to the native message ids.
    for e in pack.items[0].excerpts:
        assert e.native_task_id == "chat-Chat A" and e.turns[0].native_message_ids
    # A decision drawn from another piece of the same (long, cut) turn says something the
    # segment excerpt does not: it stays.
    other = dec.model_copy(
        update={
            "id": uuid.uuid4(),
            "passages": [dec_passage.model_copy(update={"text": "Backups run at 02:00."})],
        }
    )
    counts[str(other.id)] = 1
    both = pack_excerpts("which database", 2000, [other, seg], {}, counts)
    assert [i.memory_id for i in both.items] == [other.id, seg.id]


def with_provenance(h: SearchHit, task: str) -> SearchHit:
    chain = Provenance(
        task_id=uuid.uuid4(),
        source="chat_import",
        native_task_id=task,
        task_title=None,
        segment_id=uuid.uuid4(),
        turns=[
            TurnRef(ordinal=p.ordinal, native_turn_id=None, native_message_ids=[], role="segment")
            for p in h.passages
        ],
    )
    return h.model_copy(update={"provenance": [chain]})


def test_an_item_is_one_header_line_its_excerpts_and_the_closing_tag() -> None:
    texts = ["Mara: Where do the backups go?\nJonas: To kestrel, nightly.", "Mara: thanks"]
    seg = with_provenance(hit("segment", "A long title " * 10, texts), "chat-lab-s03")
    pack = pack_excerpts("q", 2000, [seg], {}, {str(seg.id): 3})
    (item,) = pack.items
    lines = pack_item_text(item).split("\n")
    head = lines[0]
    # Everything the agent needs to place and re-read the memory, on one line; a segment's
    # kind and an excerpt's "part" are what a pack item is unless it says otherwise.
    short = str(seg.id).replace("-", "")[: tuning.PACK_ID_CHARS]  # memory_read takes it
    assert head.startswith(f'<memory id="{short}" date="{NOW.date()}"')
    assert 'from="chat_import:chat-lab-s03"' in head and head.endswith('">')
    assert "kind=" not in head and "whole=" not in head and "part=" not in head
    fixed = len('<memory id="" date="2026-11-30" from="chat_import:" title="">')
    assert len(head) <= fixed + tuning.PACK_ID_CHARS + len("chat-lab-s03") + tuning.PACK_TITLE_CHARS
    assert f'title="{seg.title[: tuning.PACK_TITLE_CHARS - 1].rstrip()}…"' in head  # cut short
    # Each excerpt is marked with the turns it quotes; nothing else but the closing tag.
    assert lines[1:] == [
        "[t0] Mara: Where do the backups go?",
        "Jonas: To kestrel, nightly.",
        "[t1] Mara: thanks",
        "</memory>",
    ]
    # The provenance of each excerpt stays whole in the structured output.
    assert [e.turns[0].native_message_ids for e in item.excerpts] == [["m0"], ["m1"]]


def test_a_segment_quoting_its_first_prompt_does_not_repeat_it_as_title() -> None:
    """A segment's title is its first prompt: when an excerpt already quotes it, the header
    leaves it out (budget for evidence); a title the excerpts do not say stays."""
    texts = ["Mara: Where do the backups go?\nJonas: To kestrel, nightly.", "Mara: thanks"]
    quoting = with_provenance(hit("segment", "Where do the backups go?", texts), "chat-lab-s03")
    other = with_provenance(hit("segment", "Backup targets", ["Mara: and the photos?"]), "s04")
    pack = pack_excerpts("q", 2000, [quoting, other], {}, {})
    heads = {str(i.memory_id): pack_item_text(i).split("\n")[0] for i in pack.items}
    assert "title=" not in heads[str(quoting.id)]
    assert 'title="Backup targets"' in heads[str(other.id)]


def test_a_turn_after_a_match_is_packed_before_the_turn_before_it() -> None:
    """An answer follows its question: with room for one neighbour, the next turn wins."""
    seg = hit("segment", "Chat", ["Mara: before", "Mara: the match", "Mara: after"])
    before, match, after = seg.passages
    seg = seg.model_copy(update={"passages": [match]})
    size = {str(seg.id): 3}
    just_after = pack_excerpts("q", 10_000, [seg], {str(match.id): [after]}, size)
    one_neighbour = just_after.tokens_used  # "before" is as long as "after"
    pack = pack_excerpts("q", one_neighbour, [seg], {str(match.id): [after, before]}, size)
    assert [(e.passage_ordinal, e.neighbour) for e in pack.items[0].excerpts] == [
        (1, False),
        (2, True),
    ]
    # Whichever order the neighbours come in.
    pack = pack_excerpts("q", one_neighbour, [seg], {str(match.id): [before, after]}, size)
    assert [e.passage_ordinal for e in pack.items[0].excerpts] == [1, 2]


def test_a_turn_that_says_more_is_packed_before_a_short_reply_ranked_as_high(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Of two turns the channels rank alike, the one that says more is likelier to hold the
    fact asked about (PACK_SUBSTANCE_EXPONENT): with room for one, it is the one packed, even
    from the memory the search ranked second."""
    short = ranked(hit("segment", "Chat A", ["Walter: Doris?\nRuth: Ha, no."]), 3)
    full = ranked(
        hit(
            "segment",
            "Chat B",
            ["Ruth: Six frames with mats came to 310 dollars at the Lake St shop.\nWalter: Ok."],
        ),
        3,
    )
    hits, counts = [short, full], {str(short.id): 1, str(full.id): 1}
    room_for_one = tokens_of(pack_item_text(_item_of(full)))
    query = "how much did Ruth pay to have her art mounted"
    assert [i.memory_id for i in pack_excerpts(query, room_for_one, hits, {}, counts).items] == [
        full.id
    ]
    monkeypatch.setattr(tuning, "PACK_SUBSTANCE_EXPONENT", 0.0)  # ranks alone: the search's order
    assert [i.memory_id for i in pack_excerpts(query, room_for_one, hits, {}, counts).items] == [
        short.id
    ]


def test_the_left_out_list_names_ids_only() -> None:
    """What did not fit is listed cheaply: ids for memory_read, not titles."""
    hits = [
        hit("segment", f"A very long title about topic {n} " * 3, [f"{n} " + "y" * 400])
        for n in range(6)
    ]
    pack = pack_excerpts("q", 150, hits, {}, {str(h.id): 1 for h in hits})
    assert pack.left_out_count == 5 and len(pack.left_out) == 5
    tail = pack_text(pack).split("\n\n")[-1]
    assert tail.startswith("Left out for the budget (memory_read(id) reads one):")
    assert all(str(o.memory_id) in tail for o in pack.left_out)
    assert "topic" not in tail and len(tail) <= 60 + 37 * len(pack.left_out)
    assert [o.title for o in pack.left_out] == [h.title for h in hits[1:]]  # kept in the JSON


def test_a_whole_memory_says_so_and_is_counted_as_rendered() -> None:
    """Other kinds than segments are named; a memory quoted whole is marked whole="1", and
    the mark is counted while packing: the pack never exceeds its budget for it."""
    seg = hit("segment", "Chat", ["Mara: where do backups go?\nJonas: to kestrel", "Mara: ok"])
    counts = {str(seg.id): 2}
    full = pack_excerpts("q", 10_000, [seg], {}, counts)
    (item,) = full.items
    assert not item.truncated and pack_item_text(item).split("\n")[0].endswith(' whole="1">')
    exact = pack_excerpts("q", full.tokens_used, [seg], {}, counts)
    assert not exact.items[0].truncated and exact.tokens_used == full.tokens_used
    tight = pack_excerpts("q", full.tokens_used - 1, [seg], {}, counts)
    assert tight.items[0].truncated and tight.tokens_used <= full.tokens_used - 1
    dec = hit("decision", "Backups", ["Backups go to kestrel."])
    head = pack_item_text(_item_of(dec)).split("\n")[0]
    assert ' kind="decision" ' in head and head.endswith(' whole="1">')


def test_a_turn_s_message_that_matches_is_packed_before_the_other_one() -> None:
    """A turn's vector blends its two messages; each message has its own rank (by its own
    vector), and the pack quotes the one nearer the query alone (marked cut) when the whole
    turn does not fit, and the whole turn when it does."""
    first = ranked(hit("segment", "Chat A", ["Mara: where do the backups go?\nJonas: to kestrel"]))
    question = "Mara: so about that thing we talked about last week, how is it going"
    answer = "Jonas: The offsite copy runs nightly at 02:00."
    second = hit("segment", "Chat B", [f"{question}\n{answer}"])
    hits, counts = [first, second], {str(first.id): 1, str(second.id): 1}
    alone = tokens_of(pack_item_text(_item_of(first)))
    budget = alone + tokens_of(pack_item_text(_item_of(second))) - 10  # not the whole turn
    query = "when does the offsite copy run"
    pieces = {str(second.passages[0].id): [Piece(0, question, 40), Piece(1, answer, 1)]}
    pack = pack_excerpts(query, budget, hits, {}, counts, pieces)
    assert [i.memory_id for i in pack.items] == [first.id, second.id]
    (cut,) = pack.items[1].excerpts
    assert cut.text == answer and cut.truncated and pack.items[1].truncated
    assert pack_item_text(pack.items[1]).split("\n")[1] == f"[t0 cut] {answer}"
    assert pack.tokens_used <= budget
    # Ranked the other way, the question is quoted instead: the rank decides, not the order.
    swapped = {str(second.passages[0].id): [Piece(0, question, 1), Piece(1, answer, 40)]}
    (cut,) = pack_excerpts(query, budget, hits, {}, counts, swapped).items[1].excerpts
    assert cut.text == question
    # With room for both, the turn is quoted whole, once, as its passage renders it.
    roomy = pack_excerpts(query, 10_000, hits, {}, counts, pieces)
    (whole,) = roomy.items[1].excerpts
    assert whole.text == second.passages[0].text and not whole.truncated
    assert not roomy.items[1].truncated


def test_messages_are_read_and_ranked_by_their_own_vectors(corpus, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    ids = [
        r[0]
        for r in reader.execute(
            "SELECT id::text FROM memory_passages WHERE memory_id = %s ORDER BY ordinal",
            [corpus["segment"]],
        )
    ]
    passages = passage_details(reader, ids)
    pieces = _pieces(reader, list(passages.values()), QUERY, embedder)
    for pid, p in passages.items():
        (turn,) = p.turns
        prompt, outcome = TURNS[turn.ordinal]
        assert [x.text for x in pieces[pid]] == [f"Mara: {prompt}", f"Jonas: {outcome}"]
        assert "\n".join(x.text for x in pieces[pid]) == p.text
    # Ranked 1..n among all of them by cosine to the query: the question about the offsite
    # copy first, then its answer.
    ranks = sorted((x.rank, x.text) for ps in pieces.values() for x in ps)
    assert [r for r, _ in ranks] == list(range(1, 2 * len(TURNS) + 1))
    assert ranks[0][1] == f"Mara: {TURNS[4][0]}"
    # Without a query embedder there is nothing to rank them by: the pack quotes whole turns.
    assert _pieces(reader, list(passages.values()), QUERY, None) == {}
    # Messages that no longer render their passage (cut again since) are not used.
    first = next(p for p in passages.values() if p.turns[0].ordinal == 4)
    changed = first.model_copy(update={"text": first.text + " (edited)"})
    assert str(first.id) not in _pieces(reader, [changed], QUERY, embedder)
    vectors = passage_vectors(reader, ids)
    assert set(vectors) == set(ids)
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-5 for v in vectors.values())


def test_a_message_nobody_answered_is_ranked_among_the_messages(conn, reader, embedder) -> None:  # type: ignore[no-untyped-def]
    """An imported conversation's last message, unanswered, is a passage of one message. It is
    ranked among the other messages by its own vector (the passage's), as they are by theirs:
    otherwise it would lose to every message of an answered turn, whatever it says."""
    unanswered = "So when are the kestrel snapshots copied offsite after the uplink change?"
    turns = [*TURNS, (unanswered, "")]
    memory_id, _ = add_segment(conn, turns, native_id="chat-open", title=HEAD[0])
    embed_window(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))
    ids = [
        r[0]
        for r in reader.execute(
            "SELECT id::text FROM memory_passages WHERE memory_id = %s ORDER BY ordinal",
            [memory_id],
        )
    ]
    passages = passage_details(reader, ids)
    pieces = _pieces(reader, list(passages.values()), QUERY, embedder)
    last = next(p for p in passages.values() if p.turns[0].ordinal == len(TURNS))
    (piece,) = pieces[str(last.id)]
    assert piece.text == last.text == f"Mara: {unanswered}"
    ranks = sorted(x.rank for ps in pieces.values() for x in ps)
    assert ranks == list(range(1, 2 * len(TURNS) + 2))  # one rank for each message
    # Nearer the query than any answered message: first, though its turn has no answer.
    assert piece.rank == 1
    # Quoted whole (it is all of its turn), as soon as there is room for it beside the turn
    # that answers the query.
    lines = packed_text(context(reader, QUERY, 100, embedder=embedder)).split("\n")
    assert f"[t{len(TURNS)}] Mara: {unanswered}" in lines


def test_a_newer_statement_close_in_meaning_counts_as_the_same_fact() -> None:
    """An update rarely repeats the question's words ("we replaced it with Dramatiq"): for a
    current-state question, a newer passage that states a change and whose vector is close
    to an older statement's (PACK_SAME_FACT_COSINE) is packed first."""
    old = ranked(celery_jobs())  # the search ranks the older statement first
    new = dated(
        "segment",
        "Queue",
        ["Mara: We replaced Celery with Dramatiq last week.\nJonas: Good, fewer leaks."],
        datetime(2026, 6, 1, tzinfo=UTC),
    )
    hits, counts = [old, new], {str(old.id): 1, str(new.id): 1}
    one_item = tokens_of(pack_item_text(_item_of(old))) + 5
    query = "What runs the background jobs now?"
    a, b = np.zeros(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    a[0] = b[0] = 1.0
    b[1] = 0.5  # cosine 0.89
    close = {str(old.passages[0].id): a, str(new.passages[0].id): b / np.linalg.norm(b)}
    pack = pack_excerpts(query, one_item, hits, {}, counts, vectors=close)
    assert [i.memory_id for i in pack.items] == [new.id]
    far = dict(close)
    far[str(new.passages[0].id)] = np.eye(8, dtype=np.float32)[1]  # cosine 0
    for vectors in (far, None):  # not the same fact, or no vectors: the search's order
        pack = pack_excerpts(query, one_item, hits, {}, counts, vectors=vectors)
        assert [i.memory_id for i in pack.items] == [old.id]
