"""The Explorer: runs every strategy and interleaves their slices within the run's bound.

Strategies (strategies.py) take turns, so one prolific strategy cannot crowd out the others;
contradiction slices come first because they always reach the panel.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import psycopg

from memory_pipeline import tuning
from memory_pipeline.dream.explorer.strategies import STRATEGIES, ExploreContext
from memory_pipeline.dream.models import Slice


def similarity_space(conn: psycopg.Connection) -> str | None:
    """The serving space, else the space holding the most memory vectors, else None."""
    row = conn.execute("SELECT name FROM embedding_spaces WHERE serving").fetchone()
    if row:
        return str(row[0])
    row = conn.execute(
        "SELECT space FROM memory_embeddings GROUP BY space ORDER BY count(*) DESC LIMIT 1"
    ).fetchone()
    return str(row[0]) if row else None


def context(conn: psycopg.Connection) -> ExploreContext:
    row = conn.execute("SELECT max(created_at) FROM memories").fetchone()
    reference = row[0] if row and row[0] else datetime.now(UTC)
    return ExploreContext(space=similarity_space(conn), reference=reference)


def explore(
    conn: psycopg.Connection,
    limit: int = tuning.DREAM_SLICES_PER_RUN,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Slice], dict[str, int]]:
    """Slices of every strategy, contradictions first, then round-robin, at most `limit`;
    and how many slices each strategy found."""
    ctx = context(conn)
    found = {name: strategy(conn, ctx) for name, strategy in STRATEGIES.items()}
    counts = {name: len(slices) for name, slices in found.items()}
    if progress:
        progress("explorer: " + ", ".join(f"{k}={v}" for k, v in counts.items() if v))
    ordered: list[Slice] = list(found.pop("contradiction_hunt"))
    queues = [list(s) for s in found.values()]
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered[:limit] if len(ordered) > limit else ordered, counts
