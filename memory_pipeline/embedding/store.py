"""Embedding what is missing in the active space, and deciding which space search serves.

Memories, their passages and the messages a passage quotes (embedding/passages.py) each get a
vector. A vector is stale when
the text it was computed from changed (a growing tail segment): `content_sha256` of the embedded
text tells. Search reads only the space marked `serving`, and a
space becomes the serving one only once every memory has a current vector in it, so switching
spaces never leaves search with half an index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import date

import numpy as np
import psycopg
from pydantic import BaseModel

from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.embedding.passages import (
    EMBED_TEXT_SQL,
    PIECE_END,
    PIECE_NUMBER,
    PIECE_START,
    PIECE_TURN_TEXT,
    PIECES_FROM,
    PIECES_WHERE,
    sync_passages,
)
from memory_pipeline.embedding.reuse import embed_reusing, span_vectors_reusing
from memory_pipeline.tuning import EMBED_BATCH_SIZE


class EmbeddingReport(BaseModel):
    space: str
    embedded: int = 0  # memory vectors written
    up_to_date: int = 0  # memories whose vector was already current
    passages_cut: int = 0  # memories whose passages were (re)written
    passages_embedded: int = 0  # passage vectors computed
    passages_reused: int = 0  # passage vectors copied from the memory's own (same text)
    pieces_embedded: int = 0  # vectors of a passage's messages (passage_piece_embeddings)
    passages: int = 0  # passages of the window
    serving_space: str | None = None
    space_coverage: float = 0.0  # share of all memories complete (passages too) in `space`


def embedding_text(title: str, content: str) -> str:
    """What is embedded for a memory: its title, then its content."""
    return f"{title}\n{content}"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sql_sha(expr: str) -> str:
    """SQL for text_sha256() of a text expression (UTF-8 bytes, hex digest)."""
    return f"encode(sha256(convert_to({expr}, 'UTF8')), 'hex')"


_MEMORY_TEXT = "m.title || E'\\n' || m.content"
_WINDOW = "m.partition_day >= %(start)s AND m.partition_day < %(end)s"


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
    """Embed every memory and passage of the window that lacks a current vector in the
    embedder's space, cutting passages first where they are missing or stale.

    Concurrent runs over the same days split the work: each batch is claimed with
    FOR UPDATE SKIP LOCKED and chosen by a staleness test evaluated under the lock, so a row
    another run is embedding is skipped and a row it has finished is no longer stale.
    """
    ensure_space(conn, embedder)
    report = EmbeddingReport(space=embedder.space)
    space = embedder.space
    report.embedded = _embed_claimed(
        conn,
        embedder,
        what="memories",
        select=(
            f"SELECT m.id, {_MEMORY_TEXT} FROM memories m"
            " LEFT JOIN memory_embeddings e ON e.memory_id = m.id AND e.space = %(space)s"
            f" WHERE {_WINDOW}"
            f" AND (e.memory_id IS NULL OR e.content_sha256 <> {_sql_sha(_MEMORY_TEXT)})"
        ),
        key="m.id",
        lock="m",
        insert=(
            "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (memory_id, space) DO UPDATE"
            " SET embedding = EXCLUDED.embedding, content_sha256 = EXCLUDED.content_sha256,"
            " embedded_at = now()"
        ),
        params={"space": space, "start": start, "end": end},
        progress=progress,
    )
    params = {"space": space, "start": start, "end": end}
    report.up_to_date = (
        conn.execute(f"SELECT count(*) FROM memories m WHERE {_WINDOW}", params).fetchone()[0]
        - report.embedded
    )  # type: ignore[index]

    report.passages_cut = sync_passages(conn, embedder, start, end).memories_cut
    stale_passage = (
        f" WHERE {_WINDOW}"
        f" AND (e.passage_id IS NULL OR e.content_sha256 <> {_sql_sha(EMBED_TEXT_SQL)})"
    )
    passage_from = (
        " FROM memory_passages p JOIN memories m ON m.id = p.memory_id"
        " LEFT JOIN passage_embeddings e ON e.passage_id = p.id AND e.space = %(space)s"
    )
    upsert_passage = (
        " ON CONFLICT (passage_id, space) DO UPDATE SET embedding = EXCLUDED.embedding,"
        " content_sha256 = EXCLUDED.content_sha256, embedded_at = now()"
    )
    # A one-passage memory embeds the same text as the memory itself: reuse that vector. Only
    # for the passages this run can lock: one another run holds is its to write, and waiting
    # for it while holding others deadlocks two runs.
    with conn.transaction():
        report.passages_reused = conn.execute(
            "WITH claimed AS (SELECT p.id, me.space, me.embedding, me.content_sha256"
            + passage_from
            + " JOIN memory_embeddings me ON me.memory_id = m.id AND me.space = %(space)s"
            " AND me.content_sha256 = "
            + _sql_sha(EMBED_TEXT_SQL)
            + stale_passage
            + " FOR UPDATE OF p SKIP LOCKED)"
            " INSERT INTO passage_embeddings (passage_id, space, embedding, content_sha256)"
            " SELECT * FROM claimed" + upsert_passage,
            params,
        ).rowcount
    report.passages_embedded = _embed_claimed(
        conn,
        embedder,
        what="passages",
        select=f"SELECT p.id, {EMBED_TEXT_SQL}" + passage_from + stale_passage,
        key="p.id",
        lock="p",
        insert=(
            "INSERT INTO passage_embeddings (passage_id, space, embedding, content_sha256)"
            " VALUES (%s, %s, %s, %s)" + upsert_passage
        ),
        params=params,
        progress=progress,
    )
    # Each message of a passage of several (a turn's question and answer): ranked and quoted
    # alone by context packs. Its vector is pooled from its turn's text (passages.py), so that
    # text is what is hashed, and the semantic pass usually left it in the reuse cache.
    report.pieces_embedded = _embed_claimed(
        conn,
        embedder,
        what="messages of passages",
        select=(
            f"SELECT p.id, {PIECE_NUMBER}, {PIECE_TURN_TEXT}, {PIECE_START}, {PIECE_END}"
            f" FROM {PIECES_FROM} JOIN memories m ON m.id = p.memory_id"
            " LEFT JOIN passage_piece_embeddings e ON e.passage_id = p.id"
            f" AND e.piece = {PIECE_NUMBER} AND e.space = %(space)s"
            f" WHERE {_WINDOW} AND {PIECES_WHERE}"
            f" AND (e.passage_id IS NULL OR e.content_sha256 <> {_sql_sha(PIECE_TURN_TEXT)})"
        ),
        key=f"p.id, {PIECE_NUMBER}",
        vectors=lambda rows: span_vectors_reusing(embedder, [(r[2], (r[3], r[4])) for r in rows]),
        lock="p",
        insert=(
            "INSERT INTO passage_piece_embeddings"
            " (passage_id, piece, space, embedding, content_sha256) VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (passage_id, piece, space) DO UPDATE SET embedding = EXCLUDED.embedding,"
            " content_sha256 = EXCLUDED.content_sha256, embedded_at = now()"
        ),
        params=params,
        progress=progress,
    )
    report.passages = conn.execute(
        f"SELECT count(*) FROM memory_passages p JOIN memories m ON m.id = p.memory_id"
        f" WHERE {_WINDOW}",
        params,
    ).fetchone()[0]  # type: ignore[index]
    report.serving_space, report.space_coverage = promote_if_complete(conn, space)
    return report


def _embed_claimed(
    conn: psycopg.Connection,
    embedder: Embedder,
    *,
    what: str,
    select: str,
    lock: str,
    insert: str,
    params: dict[str, object],
    progress: Callable[[str], None] | None,
    key: str,
    vectors: Callable[[list[tuple]], np.ndarray] | None = None,
) -> int:
    """Embed stale rows batch by batch, each batch claimed under row locks for its transaction.

    `select` (ending in its WHERE clause) returns the key columns, `key` (their SQL, comma
    separated), and then the text of the stale rows (and what else `vectors` needs to embed a
    batch of rows; by default the text is embedded), claimed in key order; `insert` takes the
    key, the space, the vector and the text's hash. Rows locked by another run are skipped and
    the staleness test runs again for every batch, so nothing is embedded twice. Each batch
    starts after the last key of the one before: the staleness test (a hash of every row's
    text) then runs once per row, not once per row per batch (issue 36: at 10,000 turns that
    repetition cost the embedding step a third of its time).
    """
    keys = key.count(",") + 1
    vectors = vectors or (lambda rows: embed_reusing(embedder, [row[keys] for row in rows]))
    order = ", ".join(str(k) for k in range(1, keys + 1))
    todo = conn.execute(f"SELECT count(*) FROM ({select}) s", params).fetchone()[0]  # type: ignore[index]
    after = f" AND ({key}) > ({', '.join(f'%(after{k})s' for k in range(keys))})"
    last: dict[str, object] = {}
    done = 0
    while True:
        with conn.transaction():
            rows = conn.execute(
                f"{select}{after if last else ''} ORDER BY {order} LIMIT %(batch)s"
                f" FOR UPDATE OF {lock} SKIP LOCKED",
                {**params, **last, "batch": EMBED_BATCH_SIZE},
            ).fetchall()
            if not rows:
                break
            last = {f"after{k}": rows[-1][k] for k in range(keys)}
            with conn.cursor() as cur:
                cur.executemany(
                    insert,
                    [
                        (*row[:keys], embedder.space, vector, text_sha256(row[keys]))
                        for row, vector in zip(rows, vectors(rows), strict=True)
                    ],
                )
        done += len(rows)
        if progress:
            progress(f"embedded {done}/{todo} {what} in {embedder.space}")
    return done


def days_missing_vectors(conn: psycopg.Connection, space: str) -> set[date]:
    """Partition days holding a memory without a vector in `space`, without passages, or with
    a passage (or a message of one) without a vector in `space`."""
    rows = conn.execute(
        "SELECT DISTINCT m.partition_day FROM memories m WHERE NOT EXISTS"
        " (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = m.id AND e.space = %(space)s)"
        " OR NOT EXISTS (SELECT 1 FROM memory_passages p WHERE p.memory_id = m.id)"
        " OR EXISTS (SELECT 1 FROM memory_passages p WHERE p.memory_id = m.id AND NOT EXISTS"
        "   (SELECT 1 FROM passage_embeddings pe WHERE pe.passage_id = p.id"
        "    AND pe.space = %(space)s))"
        f" OR EXISTS (SELECT 1 FROM {PIECES_FROM} WHERE p.memory_id = m.id AND {PIECES_WHERE}"
        "   AND NOT EXISTS (SELECT 1 FROM passage_piece_embeddings pe WHERE pe.passage_id = p.id"
        f"   AND pe.piece = {PIECE_NUMBER} AND pe.space = %(space)s))",
        {"space": space},
    ).fetchall()
    return {r[0] for r in rows}


def promote_if_complete(conn: psycopg.Connection, space: str) -> tuple[str | None, float]:
    """Make `space` the serving space once every memory is complete in it: a vector of its own,
    passages, and a vector for each passage (search ranks passages: half of them would be half
    a space). Returns the serving space and the share of memories complete in `space`."""
    with conn.transaction():
        total, covered = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE"
            "   EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = m.id"
            "           AND e.space = %(space)s)"
            "   AND EXISTS (SELECT 1 FROM memory_passages p WHERE p.memory_id = m.id)"
            "   AND NOT EXISTS (SELECT 1 FROM memory_passages p WHERE p.memory_id = m.id"
            "     AND NOT EXISTS (SELECT 1 FROM passage_embeddings pe WHERE pe.passage_id = p.id"
            "                     AND pe.space = %(space)s)))"
            " FROM memories m",
            {"space": space},
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
