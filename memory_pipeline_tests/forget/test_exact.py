"""Forget is exact: `--query` takes what literally holds the query and nothing else (never
search's vector neighbours); forgetting a distilled memory by id names the evidence that still
holds its text, and `--with-evidence` forgets it too; a dream synthesis that rests on a forgotten
memory and a surviving one goes, with its candidate draft and its passages."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb
from typer.testing import CliRunner, Result

from memory_pipeline.cli import app
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.errors import UserError
from memory_pipeline.forget.select import python_regex, query_matches
from memory_pipeline_tests.forget.data import add_task, passages, provenance
from memory_pipeline_tests.support.memories import add_memory

WORD = "quillfeather"
# Near-identical wording on one topic: a vector search for the planted word ranks all of them.
SIMILAR = [
    "We chose the LRU policy for the session cache: evict the least recently used entry.",
    "We chose an LRU policy for the session cache; the least recently used entry is evicted.",
    "The session cache evicts the least recently used entry first (LRU), as we chose.",
    "LRU for the session cache: the least recently used entry goes first, we decided.",
]


@pytest.fixture
def env(db_url: str, dagster_pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("DAGSTER_PG_URL", dagster_pg_url)


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, ["forget", *args], input=stdin)


def ids(conn: psycopg.Connection, table: str) -> set[str]:
    return {str(r[0]) for r in conn.execute(f"SELECT id FROM {table}")}


def test_a_query_forgets_only_the_memory_and_turn_that_hold_it(
    conn: psycopg.Connection, env: None
) -> None:
    similar = []
    for n in range(24):
        text = SIMILAR[n % len(SIMILAR)]
        memory = add_memory(conn, f"Session cache eviction {n}", text, type="decision")
        passages(conn, memory, "session cache")
        similar.append(memory)
    planted = add_memory(
        conn,
        "Session cache eviction, the quill variant",
        SIMILAR[0].replace("LRU policy", "LRU policy (the QuillFeather variant)"),
        type="decision",
    )
    passages(conn, planted, "session cache")
    # Not the word: inside a longer word, a prefix of it, hyphen-free near spellings.
    longer = add_memory(conn, "Session cache quillfeathers", SIMILAR[1] + " quillfeathers")
    prefix = add_memory(conn, "Session cache quill", SIMILAR[2] + " quill feather")
    # A chat about the same cache; one of its turns mentions the word.
    task = add_task(conn, "cache", "chat-cache", turns=4)
    turn = conn.execute(
        "INSERT INTO agent_turns (task_id, ordinal, prompt, outcome, content_sha256)"
        " VALUES (%s, 4, 'is the session cache LRU?', 'yes, the quillfeather build is LRU.',"
        " 'h-quill') RETURNING id",
        [task.id],
    ).fetchone()[0]  # type: ignore[index]
    memories_before, turns_before = ids(conn, "memories"), ids(conn, "agent_turns")

    dry = run("--query", WORD, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"1 memories and 1 turns hold '{WORD}':" in dry.stdout
    assert planted in dry.stdout and str(turn) in dry.stdout
    assert "the QuillFeather variant" in dry.stdout  # the snippet around the match
    assert "quillfeather build is LRU" in dry.stdout
    assert "dry run, nothing changed; this would forget: 1 memories, 1 turns, 0 tasks" in dry.stdout
    assert ids(conn, "memories") == memories_before

    done = run("--query", WORD, "--yes")
    assert done.exit_code == 0, done.output
    assert memories_before - ids(conn, "memories") == {planted}
    assert turns_before - ids(conn, "agent_turns") == {str(turn)}
    assert {longer, prefix, *similar} <= ids(conn, "memories")
    (selector,) = conn.execute("SELECT selector FROM forget_audit").fetchone()  # type: ignore[misc]
    assert selector["query_matches"] == 1 and selector["query_turns"] == 1


@pytest.mark.parametrize(
    ("query", "text", "holds"),
    [
        ("quillfeather", "QUILLFEATHER.", True),
        ("quillfeather", "a quillfeather_x id", False),  # _ joins words
        ("quill feather", "the quill\n  feather pen", True),  # any whitespace between words
        ("quill feather", "quill-feather", False),
        ("c++", "we use c++ here", True),  # regex characters are literal
        ("c++", "we use cxx", False),
        ("a.b", "axb", False),
        ("$HOME/x", "cd $HOME/x now", True),
        ("naïve café", "NAÏVE café", True),
    ],
)
def test_the_match_rule(conn: psycopg.Connection, query: str, text: str, holds: bool) -> None:
    memory = add_memory(conn, "t", text)
    found = {m.id for m in query_matches(conn, query)}
    assert (memory in {str(i) for i in found}) is holds
    assert (python_regex(query).search(text) is not None) is holds


def test_the_query_matches_metadata_strings_not_keys(conn: psycopg.Connection) -> None:
    quoted = add_memory(conn, "t", "x", metadata={"dream_cycle": {"quotes": [f"a {WORD} b"]}})
    keyed = add_memory(conn, "t", "x", metadata={WORD: 1})
    found = {str(m.id) for m in query_matches(conn, WORD)}
    assert quoted in found and keyed not in found


def test_forgetting_a_distilled_memory_names_its_evidence_and_can_take_it(
    conn: psycopg.Connection, env: None
) -> None:
    task = add_task(conn, "ZEBRAWOOD", "chat-zebra", turns=3)
    other = add_task(conn, "KEEPALIVE", "chat-keep", turns=2)
    decision = add_memory(
        conn, "ZEBRAWOOD decision", "We chose ZEBRAWOOD eviction.", type="decision"
    )
    provenance(conn, decision, task.turn_ids[1], task, "supports")
    passages(conn, decision, "ZEBRAWOOD")

    alone = run(decision, "--dry-run")
    assert alone.exit_code == 0, alone.output
    assert "this would forget: 1 memories, 0 turns, 0 tasks" in alone.stdout
    assert f"segment memory {task.segment_memory}" in alone.stderr
    assert "1 turns of chat_import:chat-zebra" in alone.stderr
    assert "add --with-evidence to forget that too" in alone.stderr

    taken = run(decision, "--with-evidence", "--yes")
    assert taken.exit_code == 0, taken.output
    assert "forgot: 2 memories, 3 turns, 1 tasks" in taken.stdout
    assert "--with-evidence" not in taken.stderr
    left = conn.execute(
        "SELECT (SELECT count(*) FROM memories WHERE title ILIKE '%zebrawood%')"
        " + (SELECT count(*) FROM agent_turns WHERE prompt ILIKE '%zebrawood%')"
        " + (SELECT count(*) FROM captured_tasks WHERE title ILIKE '%zebrawood%')"
    ).fetchone()[0]  # type: ignore[index]
    assert left == 0
    assert ids(conn, "agent_turns") == set(other.turn_ids)


def test_a_dream_synthesis_quoting_a_forgotten_memory_goes_with_its_draft(
    conn: psycopg.Connection, env: None
) -> None:
    gone = add_memory(
        conn, "Fixed window", "Use a fixed window because it is fast.", type="decision"
    )
    kept = add_memory(conn, "Sliding window", "Use a sliding window for fairness.", type="decision")
    dream = add_memory(
        conn,
        "Window choice pattern",
        'Both rest on speed: "fixed window because it is fast" versus fairness.',
        source_type="dream_cycle",
        metadata={"dream_cycle": {"quotes": ["fixed window because it is fast"]}},
    )
    passages(conn, dream, "fixed window because it is fast")
    for target in (gone, kept):
        conn.execute(
            "INSERT INTO memory_relationships (source_id, target_id, relation_type)"
            " VALUES (%s, %s, 'derived_from')",
            [dream, target],
        )
    run_id = conn.execute(
        "INSERT INTO dream_cycle_runs (run_type, digest) VALUES ('scheduled',"
        " 'quoted: fixed window because it is fast') RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    candidate = conn.execute(
        "INSERT INTO dream_cycle_candidates (run_id, candidate_json, operation, created_memory_id)"
        " VALUES (%s, %s, 'CREATE', %s) RETURNING id",
        [run_id, Jsonb({"content": "fixed window because it is fast"}), dream],
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "INSERT INTO dream_candidate_memories (candidate_id, memory_id) VALUES (%s, %s), (%s, %s)",
        [candidate, gone, candidate, kept],
    )

    done = run(gone, "--yes")
    assert done.exit_code == 0, done.output
    assert ids(conn, "memories") >= {kept} and not ids(conn, "memories") & {gone, dream}
    holding = conn.execute(
        "SELECT (SELECT count(*) FROM memory_passages WHERE text ILIKE '%because it is fast%')"
        " + (SELECT count(*) FROM dream_cycle_candidates"
        "    WHERE candidate_json::text ILIKE '%because it is fast%')"
        " + (SELECT count(*) FROM dream_cycle_runs WHERE digest ILIKE '%because it is fast%')"
    ).fetchone()[0]  # type: ignore[index]
    assert holding == 0


def test_a_task_whose_title_holds_the_query_goes_whole(conn: psycopg.Connection, env: None) -> None:
    named = add_task(conn, "cache", "chat-named", turns=2)
    conn.execute(
        "UPDATE captured_tasks SET title = %s WHERE id = %s", [f"the {WORD} chat", named.id]
    )
    other = add_task(conn, "cache", "chat-other", turns=2)

    done = run("--query", WORD, "--yes")
    assert done.exit_code == 0, done.output
    assert "0 memories and 0 turns, and 1 task titles hold" in done.stdout
    assert "(its title; the whole task goes)" in done.stdout
    assert ids(conn, "captured_tasks") == {other.id}
    assert ids(conn, "agent_turns") == set(other.turn_ids)


def test_a_file_under_memory_home_that_still_holds_the_query_is_named(
    conn: psycopg.Connection, env: None
) -> None:
    add_memory(conn, "t", f"the {WORD} plan")
    stray = Path(os.environ["MEMORY_HOME"]) / "logs" / f"stray-{uuid.uuid4().hex}.log"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_text(f"someone pasted the {WORD.upper()} plan here\n")
    try:
        done = run("--query", WORD, "--yes")
        assert done.exit_code == 0, done.output
        assert f"{stray} still holds '{WORD}'" in done.stderr
    finally:
        stray.unlink()


def test_rows_a_trigger_deleted_leave_no_bytes_in_the_relation_files(
    conn: psycopg.Connection, db_url: str, pg_server: EmbeddedServer, env: None
) -> None:
    """A later stage's table, cleaned by its own trigger when a memory goes (as briefing items
    are): the forget never counted those rows, and their dead tuples still go from the disk."""
    conn.execute("CREATE TABLE later_quotes (memory_id uuid NOT NULL, quote text NOT NULL)")
    conn.execute(
        "CREATE FUNCTION later_quotes_gone() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN DELETE FROM later_quotes WHERE memory_id = OLD.id; RETURN OLD; END $$"
    )
    conn.execute(
        "CREATE TRIGGER later_quotes_gone AFTER DELETE ON memories"
        " FOR EACH ROW EXECUTE FUNCTION later_quotes_gone()"
    )
    gone = add_memory(conn, "t", "x")
    kept = add_memory(conn, "t", "y")
    conn.execute(
        "INSERT INTO later_quotes SELECT %s::uuid, 'quoted: ' || %s || ' ' || g"
        " FROM generate_series(1, 50) g"
        " UNION ALL SELECT %s::uuid, 'kept quote ' || g FROM generate_series(1, 50) g",
        [gone, WORD, kept],
    )
    oid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()
    base = pg_server.pgdata / "base" / str(oid[0])  # type: ignore[index]
    conn.execute("CHECKPOINT")
    needle = WORD.encode()
    assert any(needle in f.read_bytes() for f in base.iterdir() if f.is_file())

    done = run(gone, "--yes")
    assert done.exit_code == 0, done.output
    assert "could not run" not in done.stderr
    assert conn.execute("SELECT count(*) FROM later_quotes").fetchone() == (50,)
    assert [f.name for f in base.iterdir() if f.is_file() and needle in f.read_bytes()] == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(min_size=1, max_size=24))
def test_any_query_finds_its_own_words_or_is_refused_in_one_line(
    conn: psycopg.Connection, query: str
) -> None:
    """Whatever the user types: regex characters are literal (a text holding the query's words
    is found), and what no text can hold (NUL, a lone surrogate) is one line, never a crash."""
    words = query.split()
    try:
        python_regex(query) if words else None
        found = query_matches(conn, query)
    except UserError as exc:
        assert "\n" not in str(exc)
        assert not words or any(ch == "\0" or "\ud800" <= ch <= "\udfff" for ch in query)
        return
    assert found == []  # nothing holds it yet
    memory = add_memory(conn, "t", f"before {' '.join(words)} after")
    try:
        assert memory in {str(m.id) for m in query_matches(conn, query)}
    finally:
        conn.execute("DELETE FROM memories WHERE id = %s", [memory])
