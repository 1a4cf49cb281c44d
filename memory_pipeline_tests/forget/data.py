"""Hand-made data for forget tests: two tasks, one to forget and one to keep, with something in
every table that refers to memories, turns or tasks, and the text of each easy to grep for.

Everything derived from task A carries the word FORGETME (and its lexeme `forgetm`), everything
of task B the word KEEPALIVE; a few rows rest on both and must stay.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline_tests.support.memories import add_memory

SPACE = "local:all-minilm-l6-v2:384"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
GONE = "forgetme"  # lower-cased: matches the words, their lexemes and stems
KEPT = "keepalive"


@dataclass
class Task:
    id: str
    native_id: str
    turn_ids: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    segment_memory: str = ""
    segment_id: str = ""


@dataclass
class World:
    a: Task
    b: Task
    decision_a: str  # distilled from A only
    dream_a: str  # derived_from decision_a only: goes with it
    dream_ab: str  # derived_from decision_a and B's segment, not a dream synthesis: stays
    child_of_a: str  # parent_id = decision_a, no evidence of its own: stays, unlinked


def turn_text(word: str, task: str, i: int) -> tuple[str, str]:
    return (
        f"{word} prompt {i} of {task}: how should the {word} cache evict entries?",
        f"{word} answer {i}: evict the least recently used {word} entry first.",
    )


def add_task(
    conn: psycopg.Connection, word: str, native_id: str, turns: int = 3, private: bool = False
) -> Task:
    task_id = conn.execute(
        "INSERT INTO captured_tasks (source, native_id, title, started_at, partition_day,"
        " source_path, ownership_reason, turn_count, native_context, private)"
        " VALUES ('chat_import', %s, %s, %s, %s, '/imports/x.jsonl', 'test', %s, %s, %s)"
        " RETURNING id",
        [
            native_id,
            f"{word} task title",
            NOW,
            NOW.date(),
            turns,
            Jsonb({"cwd": f"/src/{word}"}),
            private,
        ],
    ).fetchone()[0]  # type: ignore[index]
    task = Task(str(task_id), native_id)
    for i in range(turns):
        prompt, outcome = turn_text(word, native_id, i)
        digest = hashlib.sha256(f"{prompt}\x1f{outcome}".encode()).hexdigest()
        turn_id = conn.execute(
            "INSERT INTO agent_turns (task_id, ordinal, native_turn_id, prompt, outcome,"
            " native_message_ids, content_sha256) VALUES (%s, %s, %s, %s, %s, %s, %s)"
            " RETURNING id",
            [task_id, i, f"{native_id}-m{i}", prompt, outcome, [f"m{i}"], digest],
        ).fetchone()[0]  # type: ignore[index]
        task.turn_ids.append(str(turn_id))
        task.hashes.append(digest)
    task.segment_memory = add_memory(
        conn, f"{word} segment", f"{word} the whole conversation", type="segment"
    )
    task.segment_id = str(
        conn.execute(
            "INSERT INTO topic_segments (task_id, first_ordinal, last_ordinal, title, memory_id)"
            " VALUES (%s, 0, %s, %s, %s) RETURNING id",
            [task_id, turns - 1, f"{word} segment", task.segment_memory],
        ).fetchone()[0]  # type: ignore[index]
    )
    for turn_id in task.turn_ids:
        provenance(conn, task.segment_memory, turn_id, task, "segment")
    passages(conn, task.segment_memory, word)
    return task


def provenance(conn: psycopg.Connection, memory: str, turn: str, task: Task, role: str) -> None:
    conn.execute(
        "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
        " VALUES (%s, %s, %s, %s, %s)",
        [memory, turn, task.segment_id, task.id, role],
    )


def passages(conn: psycopg.Connection, memory: str, word: str) -> None:
    rng = np.random.default_rng(abs(hash(memory)) % 2**32)
    passage = conn.execute(
        "INSERT INTO memory_passages (memory_id, ordinal, text, search_vector, source_sha256,"
        " cut_for) VALUES (%s, 0, %s, to_tsvector('english', %s), 'x', %s) RETURNING id",
        [memory, f"{word} passage text", f"{word} passage text", SPACE],
    ).fetchone()[0]  # type: ignore[index]
    vector = rng.standard_normal(384).astype(np.float32)
    conn.execute(
        "INSERT INTO passage_embeddings (passage_id, space, embedding, content_sha256)"
        " VALUES (%s, %s, %s, 'x')",
        [passage, SPACE, vector],
    )
    conn.execute(
        "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
        " VALUES (%s, %s, %s, 'x')",
        [memory, SPACE, vector],
    )


def edge(conn: psycopg.Connection, source: str, target: str, kind: str) -> None:
    conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type, note)"
        " VALUES (%s, %s, %s, %s)",
        [source, target, kind, "edge note"],
    )


def build(conn: psycopg.Connection, private_a: bool = False) -> World:
    """`private_a`: task A is in the private tier, as a MEMORY_PRIVATE rule would put it."""
    a = add_task(conn, "FORGETME", "chat-forget", private=private_a)
    b = add_task(conn, "KEEPALIVE", "chat-keep")
    decision_a = add_memory(
        conn, "FORGETME decision", "We chose FORGETME eviction.", type="decision"
    )
    provenance(conn, decision_a, a.turn_ids[1], a, "supports")
    passages(conn, decision_a, "FORGETME")
    dream_a = add_memory(conn, "FORGETME dream", "FORGETME pattern.", source_type="dream_cycle")
    edge(conn, dream_a, decision_a, "derived_from")
    # A dream synthesis resting on decision_a would go with it (it may quote it): this one is a
    # connection the relationships stage made.
    dream_ab = add_memory(
        conn, "KEEPALIVE dream", "KEEPALIVE pattern.", source_type="relationships"
    )
    edge(conn, dream_ab, decision_a, "derived_from")
    edge(conn, dream_ab, b.segment_memory, "derived_from")
    edge(conn, decision_a, b.segment_memory, "contradicts")
    child = add_memory(conn, "KEEPALIVE child", "KEEPALIVE note.", parent_id=decision_a)
    conn.execute(
        "INSERT INTO retrieval_events (memory_id, surface, query_sha256, rank)"
        " VALUES (%s, 'cli', 'q', 1), (%s, 'cli', 'q', 2)",
        [decision_a, b.segment_memory],
    )
    only_a = conn.execute(
        "INSERT INTO entities (category, name) VALUES ('tool', 'FORGETME entity') RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    shared = conn.execute(
        "INSERT INTO entities (category, name) VALUES ('tool', 'KEEPALIVE entity') RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "INSERT INTO memory_entities (memory_id, entity_id) VALUES (%s, %s), (%s, %s), (%s, %s)",
        [decision_a, only_a, decision_a, shared, b.segment_memory, shared],
    )
    run = conn.execute(
        "INSERT INTO dream_cycle_runs (run_type, digest) VALUES ('scheduled', 'FORGETME digest')"
        " RETURNING id"
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "INSERT INTO dream_cycle_candidates (run_id, candidate_json, operation, target_memory_id,"
        " created_memory_id) VALUES (%s, %s, 'CREATE', %s, %s)",
        [run, Jsonb({"text": "FORGETME candidate"}), decision_a, dream_a],
    )
    conn.execute(
        "INSERT INTO capture_skips (kind, source, native_id, path, reason, detail)"
        " VALUES ('task', 'chat_import', 'chat-forget', '/imports/x.jsonl', 'store_failed',"
        " 'FORGETME value refused')"
    )
    refresh_bm25_statistics(conn)
    return World(a, b, decision_a, dream_a, dream_ab, child)


def later_stage_tables(conn: psycopg.Connection) -> None:
    """Tables a later migration could add, which the cascade has never heard of: a note that
    refers to memories WITHOUT cascade, and items linked through a cascading join table."""
    conn.execute(
        "CREATE TABLE later_notes (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),"
        " memory_id uuid NOT NULL REFERENCES memories(id), note text NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE later_items (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), body text)"
    )
    conn.execute(
        "CREATE TABLE later_item_memories ("
        " item_id uuid NOT NULL REFERENCES later_items(id) ON DELETE CASCADE,"
        " memory_id uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,"
        " PRIMARY KEY (item_id, memory_id))"
    )


def fill_later_stage_tables(conn: psycopg.Connection, world: World) -> None:
    conn.execute(
        "INSERT INTO later_notes (memory_id, note) VALUES (%s, 'FORGETME note'),"
        " (%s, 'KEEPALIVE note')",
        [world.decision_a, world.b.segment_memory],
    )
    item_a, item_b = (
        conn.execute(
            "INSERT INTO later_items (body) VALUES (%s) RETURNING id", [f"{word} briefing item"]
        ).fetchone()[0]  # type: ignore[index]
        for word in ("FORGETME", "KEEPALIVE")
    )
    conn.execute(
        "INSERT INTO later_item_memories (item_id, memory_id) VALUES (%s, %s), (%s, %s), (%s, %s)",
        [item_a, world.decision_a, item_b, world.decision_a, item_b, world.b.segment_memory],
    )


def new_id() -> str:
    return str(uuid.uuid4())


def exists(conn: psycopg.Connection, table: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", [table]).fetchone()[0]  # type: ignore[index]


def fill_other_stages(conn: psycopg.Connection, world: World) -> list[str]:
    """Rows in the tables other stages' migrations add (016 relationships, 017 dream cycle, 018
    Express), where those migrations exist: each holds FORGETME text or rests on decision_a.
    Returns the tables filled."""
    filled = []
    if exists(conn, "relationship_scans"):
        conn.execute(
            "INSERT INTO relationship_scans (memory_id, content_sha256, backend)"
            " VALUES (%s, 'x', 'offline-rules')",
            [world.decision_a],
        )
        filled.append("relationship_scans")
    if exists(conn, "dream_candidate_memories"):
        candidate = conn.execute(
            "INSERT INTO dream_cycle_candidates (candidate_json, operation)"
            " VALUES (%s, 'CREATE') RETURNING id",
            [Jsonb({"text": "FORGETME resting candidate"})],
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO dream_candidate_memories (candidate_id, memory_id) VALUES (%s, %s)",
            [candidate, world.decision_a],
        )
        filled.append("dream_candidate_memories")
    if exists(conn, "briefing_item_memories"):
        briefing = conn.execute(
            "INSERT INTO briefings (day, window_from, window_to, editor)"
            " VALUES ('2026-11-30', '2026-11-29', '2026-11-30', 'offline') RETURNING id"
        ).fetchone()[0]  # type: ignore[index]
        for n, (word, memories) in enumerate(
            [("FORGETME", [world.decision_a]), ("KEEPALIVE", [world.b.segment_memory])], start=1
        ):
            item = conn.execute(
                "INSERT INTO briefing_items (briefing_id, position, kind, topic, headline,"
                " score, item_key) VALUES (%s, %s, 'digest', 't', %s, 1, %s) RETURNING id",
                [briefing, n, f"{word} headline", f"k{n}"],
            ).fetchone()[0]  # type: ignore[index]
            for i, memory in enumerate(memories):
                conn.execute(
                    "INSERT INTO briefing_item_memories (item_id, memory_id, role, ordinal)"
                    " VALUES (%s, %s, 'subject', %s)",
                    [item, memory, i],
                )
        filled.append("briefing_item_memories")
    return filled
