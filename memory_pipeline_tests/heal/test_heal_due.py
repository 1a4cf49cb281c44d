"""When `memory-pipeline run` heals by itself (cli/heal.py heal_if_due, sql/026): never on a
fresh home (it records the rules), once after the rules changed, again only if the last heal did
not finish; and a stored turn stays immutable to everything but the heal."""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.capture.redact import RULES_VERSION
from memory_pipeline.cli.heal import heal_if_due
from memory_pipeline.db.connection import DatabaseUrls
from memory_pipeline.heal import state
from memory_pipeline.settings import Settings
from memory_pipeline_tests.support.memories import add_memory, add_task, link

TOKEN = "ghp_" + "Q2w8E4r6T1y9U3i5O7p0A2s4D6f8G1h3J5k7"


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "home"))
    return Settings.from_env()


@pytest.fixture
def urls(db_url: str, reader_url: str, dagster_pg_url: str) -> DatabaseUrls:
    return DatabaseUrls(app=db_url, reader=reader_url, dagster=dagster_pg_url, embedded=False)


def test_a_fresh_home_records_the_rules_without_healing(
    conn: psycopg.Connection, settings: Settings, urls: DatabaseUrls
) -> None:
    assert state.due(conn) == "fresh"
    lines: list[str] = []
    heal_if_due(settings, urls, lines.append)
    assert lines == []
    recorded = state.read_state(conn)
    assert (recorded.rules_version, recorded.how) == (RULES_VERSION, "fresh")
    assert state.due(conn) is None


def test_rows_of_other_rules_are_healed_once_then_again_only_if_unfinished(
    conn: psycopg.Connection, settings: Settings, urls: DatabaseUrls
) -> None:
    task_id, turn_ids = add_task(conn, turns=2)
    conn.execute("SET memory_pipeline.heal = 'on'")  # as the old release stored it
    conn.execute(
        "UPDATE agent_turns SET prompt = %s WHERE id = %s",
        [f"deploy with GITHUB_TOKEN={TOKEN} please", turn_ids[0]],
    )
    conn.execute("RESET memory_pipeline.heal")
    memory = add_memory(
        conn,
        "Deploy token",
        f"The CI uses {TOKEN} for releases.",
        metadata={"questions": [f"which token is {TOKEN}?"], "n": 1},
        tags=["ci", TOKEN],
    )
    link(conn, memory, task_id, turn_ids)
    conn.execute("UPDATE redaction_state SET rules_version = 'sha256:older', how = 'heal'")
    assert state.due(conn) == "heal"

    lines: list[str] = []
    heal_if_due(settings, urls, lines.append)
    assert lines[0].startswith("redaction rules changed")
    assert len([line for line in lines if "healing it first" in line]) == 1
    assert "healed: " in lines[1] and "turns 1" in lines[1] and "memories 1" in lines[1]
    prompt, outcome, digest, redactions = conn.execute(
        "SELECT prompt, outcome, content_sha256, redactions FROM agent_turns WHERE id = %s",
        [turn_ids[0]],
    ).fetchone()  # type: ignore[misc]
    assert prompt == "deploy with GITHUB_TOKEN=[REDACTED:github_token] please"
    # The turn's hash is of its stored text, as capture computes it for the same source turn.
    assert digest == hashlib.sha256(f"{prompt}\x1f{outcome}".encode()).hexdigest()
    assert redactions == 1
    content, metadata, tags, vector = conn.execute(
        "SELECT content, metadata, tags, search_vector::text FROM memories WHERE id = %s",
        [memory],
    ).fetchone()  # type: ignore[misc]
    assert content == "The CI uses [REDACTED:github_token] for releases."
    assert metadata == {"questions": ["which token is [REDACTED:github_token]?"], "n": 1}
    assert tags == ["ci", "[REDACTED:github_token]"]
    assert "q2w8e4r6" not in vector.lower()
    # The healed memory was cut into passages and embedded from its healed text.
    passages = conn.execute(
        "SELECT p.text FROM memory_passages p JOIN passage_embeddings e ON e.passage_id = p.id"
        " WHERE p.memory_id = %s",
        [memory],
    ).fetchall()
    assert passages and all(TOKEN not in p[0] for p in passages)
    assert state.read_state(conn).rules_version == RULES_VERSION

    heal_if_due(settings, urls, lines.append)
    assert len(lines) == 2  # done: not again

    # A heal that died after its rewrites and before recomputing vectors and the keyword
    # index: the next run finishes it.
    conn.execute("UPDATE redaction_state SET derived_pending = true")
    heal_if_due(settings, urls, lines.append)
    assert len(lines) == 4 and "healed: 0 rows" in lines[3]
    assert not state.read_state(conn).derived_pending


def test_a_stored_turn_changes_only_by_the_heal_and_only_its_text(
    conn: psycopg.Connection,
) -> None:
    _, (turn_id, _) = add_task(conn, turns=2)
    with pytest.raises(psycopg.errors.RaiseException, match="immutable"):
        conn.execute("UPDATE agent_turns SET prompt = 'x' WHERE id = %s", [turn_id])
    with conn.transaction():
        conn.execute("SET LOCAL memory_pipeline.heal = 'on'")
        conn.execute(
            "UPDATE agent_turns SET prompt = 'x', content_sha256 = 'h', redactions = 1"
            " WHERE id = %s",
            [turn_id],
        )
        with pytest.raises(psycopg.errors.RaiseException, match="immutable"), conn.transaction():
            conn.execute("UPDATE agent_turns SET ordinal = 7 WHERE id = %s", [turn_id])
