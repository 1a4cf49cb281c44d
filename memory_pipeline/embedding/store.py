"""Embedding what is missing in the active space, and deciding which space search serves.

A memory's vector is stale when the text it was computed from changed (a growing tail segment):
`content_sha256` of the embedded text tells. Search reads only the space marked `serving`, and a
space becomes the serving one only once every memory has a current vector in it, so switching
spaces never leaves search with half an index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import date

import psycopg
from pydantic import BaseModel

from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.tuning import EMBED_BATCH_SIZE


class EmbeddingReport(BaseModel):
    space: str
    embedded: int = 0
    up_to_date: int = 0
    serving_space: str | None = None
    space_coverage: float = 0.0  # share of all memories with a current vector in `space`


def embedding_text(title: str, content: str) -> str:
    """What is embedded for a memory: its title, then its content."""
    return f"{title}\n{content}"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def ensure_space(conn: psycopg.Connection, embedder: Embedder) -> None:
    row = conn.execute("SELECT dims FROM embedding_spaces WHERE name = %s", [embedder.space])
    found = row.fetchone()
    if found is None:
        raise ValueError(
            f"embedding space {embedder.space} has no index; add it in a new sql/ migration"
        )
    if found[0] != embedder.dims:
        raise ValueError(f"{embedder.space} has {found[0]} dims in the database")


def embed_window(
    conn: psycopg.Connection,
    embedder: Embedder,
    start: date,
    end: date,
    progress: Callable[[str], None] | None = None,
) -> EmbeddingReport:
    """Embed every memory of the window that lacks a current vector in the embedder's space."""
    ensure_space(conn, embedder)
    report = EmbeddingReport(space=embedder.space)
    rows = conn.execute(
        "SELECT m.id, m.title, m.content, e.content_sha256 FROM memories m"
        " LEFT JOIN memory_embeddings e ON e.memory_id = m.id AND e.space = %s"
        " WHERE m.partition_day >= %s AND m.partition_day < %s ORDER BY m.id",
        [embedder.space, start, end],
    ).fetchall()
    todo = []
    for memory_id, title, content, stored_sha in rows:
        text = embedding_text(title, content)
        sha = text_sha256(text)
        if sha == stored_sha:
            report.up_to_date += 1
        else:
            todo.append((memory_id, text, sha))
    for i in range(0, len(todo), EMBED_BATCH_SIZE):
        batch = todo[i : i + EMBED_BATCH_SIZE]
        vectors = embedder.embed([text for _, text, _ in batch])
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (memory_id, space) DO UPDATE"
                " SET embedding = EXCLUDED.embedding, content_sha256 = EXCLUDED.content_sha256,"
                " embedded_at = now()",
                [
                    (memory_id, embedder.space, vector, sha)
                    for (memory_id, _, sha), vector in zip(batch, vectors, strict=True)
                ],
            )
        report.embedded += len(batch)
        if progress:
            progress(f"embedded {report.embedded}/{len(todo)} memories in {embedder.space}")
    report.serving_space, report.space_coverage = promote_if_complete(conn, embedder.space)
    return report


def days_missing_vectors(conn: psycopg.Connection, space: str) -> set[date]:
    """Partition days holding a memory without a vector in `space`."""
    rows = conn.execute(
        "SELECT DISTINCT m.partition_day FROM memories m WHERE NOT EXISTS"
        " (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = m.id AND e.space = %s)",
        [space],
    ).fetchall()
    return {r[0] for r in rows}


def promote_if_complete(conn: psycopg.Connection, space: str) -> tuple[str | None, float]:
    """Make `space` the serving space once every memory has a current vector in it."""
    with conn.transaction():
        total, covered = conn.execute(
            "SELECT count(*), count(e.memory_id) FROM memories m"
            " LEFT JOIN memory_embeddings e ON e.memory_id = m.id AND e.space = %s",
            [space],
        ).fetchone()  # type: ignore[misc]
        coverage = covered / total if total else 0.0
        if total and covered == total:
            conn.execute(
                "UPDATE embedding_spaces SET serving = false WHERE serving AND name <> %s", [space]
            )
            conn.execute(
                "UPDATE embedding_spaces SET serving = true,"
                " completed_at = coalesce(completed_at, now()) WHERE name = %s",
                [space],
            )
        serving = conn.execute("SELECT name FROM embedding_spaces WHERE serving").fetchone()
    return (serving[0] if serving else None), round(coverage, 4)
