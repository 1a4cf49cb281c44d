"""Hand-made memories, vectors and edges for dream-cycle tests."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import psycopg

from memory_pipeline.dream.cycle import DreamConfig, DreamReport, run_dream_cycle
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.entities.store import extract_window
from memory_pipeline_tests.support.memories import add_memory, add_vector

SPACE = "local:all-minilm-l6-v2:384"
T0 = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
DAY = T0.date() + timedelta(days=60)


def unit(*weights: float, dims: int = 384) -> np.ndarray:
    """A unit vector with the given leading components (cosines are then easy to choose)."""
    v = np.zeros(dims, dtype=np.float32)
    v[: len(weights)] = weights
    return v / np.linalg.norm(v)


def mem(
    conn: psycopg.Connection,
    title: str,
    content: str,
    *,
    days: float = 0,
    vector: np.ndarray | None = None,
    **fields: object,
) -> str:
    when = T0 + timedelta(days=days)
    mid = add_memory(
        conn,
        title,
        content,
        created_at=when,
        partition_day=when.date(),
        source_type=fields.pop("source_type", "codex"),
        **fields,
    )
    if vector is not None:
        add_vector(conn, mid, SPACE, vector)
    return mid


def edge(conn: psycopg.Connection, source: str, target: str, kind: str) -> None:
    conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type)"
        " VALUES (%s, %s, %s)",
        [source, target, kind],
    )


def reversed_decisions(conn: psycopg.Connection) -> tuple[str, str]:
    """An older decision and the newer one that reverses it, with the `contradicts` edge E's
    relationships asset would write (newer -> older). Returns (older, newer)."""
    older = mem(
        conn,
        "Rate limiting on Redis",
        "We will keep the API rate limit counters in Redis with a fixed window because it is fast.",
        type="decision",
        project="ledgerline",
        days=0,
    )
    newer = mem(
        conn,
        "Rate limits move to Postgres",
        "We move the rate limit counters from Redis to Postgres because Redis evicted them.",
        type="decision",
        project="ledgerline",
        days=28,
    )
    edge(conn, newer, older, "contradicts")
    return older, newer


def run(
    conn: psycopg.Connection,
    home: Path,
    *,
    run_type: str = "user_triggered",
    embedder: Embedder | None = None,
    **config: object,
) -> DreamReport:
    """A dream run after the entity stage, as the daily job orders them (the cycle reads which
    memories share a subject entity)."""
    extract_window(conn, date(2000, 1, 1), date(2100, 1, 1))
    return run_dream_cycle(
        conn,
        run_type=run_type,
        day=DAY,
        embedder=embedder or get_minilm(),
        config=DreamConfig(memory_home=home, **config),  # type: ignore[arg-type]
    )
