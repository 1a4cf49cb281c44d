"""The entity stage on hand-made memories and turns: identifiers merge nodes, ambiguous aliases
stay apart, a re-run changes no row, a forget of a node's last mention removes it, and the
Ollama backend's proposals pass the staged precheck (against the local fake Ollama server)."""

from __future__ import annotations

import json
from datetime import date, timedelta

import psycopg

from memory_pipeline.entities.ollama_backend import OllamaEntities
from memory_pipeline.entities.store import extract_window
from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.support.fake_ollama import DEFAULT_CHAT_MODEL, running_fake_ollama
from memory_pipeline_tests.support.memories import add_memory, add_task

DAY = date(2026, 11, 1)
START, END = DAY, DAY + timedelta(days=1)


def add_turn(
    conn: psycopg.Connection, prompt: str, outcome: str, speakers: tuple[str | None, str | None]
) -> str:
    """A captured task of one turn with this text and these speakers; returns the turn id."""
    task, _ = add_task(conn, turns=0)
    conn.execute("UPDATE captured_tasks SET partition_day = %s WHERE id = %s", [DAY, task])
    return str(
        conn.execute(
            "INSERT INTO agent_turns (task_id, ordinal, prompt, outcome, prompt_speaker,"
            " outcome_speaker, content_sha256) VALUES (%s, 0, %s, %s, %s, %s, 'h') RETURNING id",
            [task, prompt, outcome, *speakers],
        ).fetchone()[0]  # type: ignore[index]
    )


def run(conn: psycopg.Connection, backend=None):
    return extract_window(conn, START, END, backend)


def nodes(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT name, category FROM entities").fetchall())


def mentioned(conn: psycopg.Connection, memory: str) -> dict[str, str]:
    return dict(
        conn.execute(
            "SELECT e.name, me.extractor FROM memory_entities me JOIN entities e"
            " ON e.id = me.entity_id WHERE me.memory_id = %s",
            [memory],
        ).fetchall()
    )


def snapshot(conn: psycopg.Connection) -> list[object]:
    out: list[object] = []
    for table in (
        "entities",
        "entity_identifiers",
        "entity_aliases",
        "memory_entities",
        "turn_entities",
        "entity_ambiguities",
    ):
        out.append(sorted(map(str, conn.execute(f"SELECT * FROM {table}").fetchall())))
    return out


def test_identifiers_merge_across_memories_with_no_model(conn: psycopg.Connection) -> None:
    a = add_memory(conn, "Clone", "Cloned https://github.com/acme/widget-api for the fix.")
    b = add_memory(conn, "Review", "PR on git@github.com:Acme/Widget-API.git merged.")
    c = add_memory(conn, "Mail", "Wrote to Iris Calder <iris@westfield.example.com>.")
    d = add_memory(conn, "Again", "iris@westfield.example.com answered; @iris_c on chat.")
    report = run(conn)
    assert report.nodes_added >= 3
    assert mentioned(conn, a) == mentioned(conn, b)  # one node
    assert [n.lower() for n in mentioned(conn, a)] == ["acme/widget-api"]
    assert "Iris Calder" in mentioned(conn, c) and "Iris Calder" in mentioned(conn, d)
    assert nodes(conn)["Iris Calder"] == "person"


def test_an_alias_of_two_nodes_is_kept_as_an_ambiguity_never_linked(
    conn: psycopg.Connection,
) -> None:
    turn = add_turn(conn, "Dinner Friday?", "Sure.", ("Victor Hugo", "Nadia"))
    add_memory(conn, "Lane", "Email from Victor Lane <vlane@example.com> about the lease.")
    m = add_memory(conn, "Dinner", "Victor said the dinner moves to Friday; Nadia agreed.")
    run(conn)
    names = mentioned(conn, m)
    assert names == {"Nadia": "alias"}  # "Victor" names two people: not linked
    amb = conn.execute(
        "SELECT alias, cardinality(candidates) FROM entity_ambiguities WHERE memory_id = %s", [m]
    ).fetchall()
    assert amb == [("victor", 2)]
    linked = conn.execute(
        "SELECT e.name, t.extractor FROM turn_entities t JOIN entities e ON e.id = t.entity_id"
        " WHERE t.turn_id = %s",
        [turn],
    ).fetchall()
    assert set(linked) == {("Victor Hugo", "speaker"), ("Nadia", "speaker")}


def test_lower_case_words_do_not_match_names(conn: psycopg.Connection) -> None:
    add_memory(conn, "Friend", "My friend Will moved to Lisbon last spring.")
    m = add_memory(conn, "Plan", "We will visit Lisbon; it will rain.")
    run(conn)
    assert mentioned(conn, m) == {"Lisbon": "alias"}


def test_a_second_run_changes_no_row(conn: psycopg.Connection) -> None:
    add_memory(conn, "Deps", "Ran `pip install httpx` and edited src/app/main.py on api.acme.io")
    add_memory(conn, "People", "My sister Maya works at Globex; Maya visited Oslo.")
    first = run(conn)
    assert first.mentions_added > 0
    before = snapshot(conn)
    second = run(conn)
    assert snapshot(conn) == before
    assert (second.mentions_added, second.mentions_removed, second.nodes_added) == (0, 0, 0)


def test_forget_of_the_last_mention_removes_the_node(conn: psycopg.Connection) -> None:
    a = add_memory(conn, "Oslo trip", "We visited Oslo in June.")
    b = add_memory(conn, "Oslo again", "Oslo was cold; the repo is github.com/acme/snow")
    add_memory(conn, "Snow", "Pushed https://github.com/acme/snow today.")
    run(conn)
    assert "Oslo" in nodes(conn)
    forget(conn, Selector(memory_ids=[a]))
    assert "Oslo" in nodes(conn)  # still mentioned by b
    forget(conn, Selector(memory_ids=[b]))
    assert "Oslo" not in nodes(conn)
    assert conn.execute("SELECT count(*) FROM entity_aliases WHERE alias = 'oslo'").fetchone() == (
        0,
    )
    assert "acme/snow" in nodes(conn)  # the other memory still names it
    # a re-run over the day brings nothing forgotten back
    run(conn)
    assert "Oslo" not in nodes(conn)


def test_a_node_a_turn_still_mentions_survives_a_forget(conn: psycopg.Connection) -> None:
    add_turn(conn, "Deploy to db1.acme.io tonight", "Done.", (None, None))
    m = add_memory(conn, "Deploy", "Deploy target is db1.acme.io.")
    run(conn)
    forget(conn, Selector(memory_ids=[m]))
    assert "db1.acme.io" in nodes(conn)


def test_ollama_proposals_pass_the_staged_precheck(conn: psycopg.Connection) -> None:
    m = add_memory(conn, "Climb", "Went bouldering with Joanna at the Castle Climbing Centre.")
    answer = {
        "entities": [
            {"memory": 0, "type": "person", "name": "Joanna", "confidence": 0.9},
            {"memory": 0, "type": "place", "name": "Castle Climbing Centre", "confidence": 0.8},
            {"memory": 0, "type": "person", "name": "Marcus", "confidence": 0.9},  # not there
            {"memory": 0, "type": "tool", "name": "bouldering", "confidence": 0.3},  # unsure
        ]
    }
    with running_fake_ollama() as fake:
        fake.script_chat(json.dumps(answer))
        backend = OllamaEntities(fake.host, DEFAULT_CHAT_MODEL, 5)
        report = run(conn, backend)
        assert len(fake.chat_requests) == 1
        assert report.proposals == {
            "accepted": 2,
            "rejected_not_in_text": 1,
            "rejected_unsure": 1,
        }
        assert mentioned(conn, m)["Joanna"] == "ollama"
        assert set(mentioned(conn, m)) == {"Joanna", "Castle Climbing Centre"}
        assert nodes(conn)["Castle Climbing Centre"] == "place"
        before = snapshot(conn)
        again = run(conn, backend)  # the text was read: no model call, no change
        assert len(fake.chat_requests) == 1
        assert snapshot(conn) == before and again.proposals == {}


def test_a_failed_model_batch_keeps_the_offline_mentions(conn: psycopg.Connection) -> None:
    m = add_memory(conn, "Repo", "See https://github.com/acme/widget-api with Joanna.")
    with running_fake_ollama() as fake:
        fake.script_chat("not json at all")
        report = run(conn, OllamaEntities(fake.host, DEFAULT_CHAT_MODEL, 5))
        assert len(report.failures) == 1
        assert mentioned(conn, m) == {"acme/widget-api": "identifier"}
        fake.script_chat(json.dumps({"entities": []}))
        run(conn, OllamaEntities(fake.host, DEFAULT_CHAT_MODEL, 5))
        assert len(fake.chat_requests) == 2  # asked again
