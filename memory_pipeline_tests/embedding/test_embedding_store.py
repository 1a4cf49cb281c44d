"""Embedding only what is missing, never mixing spaces, and switching spaces safely."""

from __future__ import annotations

from datetime import date

import dagster as dg
import numpy as np
import psycopg
import pytest

from memory_pipeline.embedding.definitions import memory_embeddings
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.ollama_embedder import OllamaEmbedder
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.errors import UserError
from memory_pipeline.jobs import RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline.resources import DatabaseResource, EmbeddingResource
from memory_pipeline_tests.support.fake_ollama import HttpError, running_fake_ollama
from memory_pipeline_tests.support.memories import add_memory

BGE = "ollama:bge-m3:1024"
ALL = (date(2026, 1, 1), date(2027, 1, 1))


def vectors(conn: psycopg.Connection, space: str) -> dict[str, np.ndarray]:
    rows = conn.execute(
        "SELECT memory_id, embedding FROM memory_embeddings WHERE space = %s", [space]
    ).fetchall()
    return {str(mid): vec.to_numpy() for mid, vec in rows}


def serving(conn: psycopg.Connection) -> str | None:
    row = conn.execute("SELECT name FROM embedding_spaces WHERE serving").fetchone()
    return row[0] if row else None


def test_embeds_only_what_is_missing_and_is_idempotent(conn: psycopg.Connection) -> None:
    a = add_memory(conn, "Rate limits", "Throttle API callers.")
    add_memory(conn, "Backups", "Encrypt nightly dumps.")
    first = embed_window(conn, get_minilm(), *ALL)
    assert (first.embedded, first.up_to_date) == (2, 0)
    assert first.serving_space == LOCAL_SPACE and first.space_coverage == 1.0
    stored = vectors(conn, LOCAL_SPACE)
    expected = get_minilm().embed(["Rate limits\nThrottle API callers."])[0]
    assert float(stored[a] @ expected) > 0.9999
    again = embed_window(conn, get_minilm(), *ALL)
    assert (again.embedded, again.up_to_date) == (0, 2)


def test_a_changed_memory_is_re_embedded(conn: psycopg.Connection) -> None:
    a = add_memory(conn, "Segment", "first turn")
    embed_window(conn, get_minilm(), *ALL)
    before = vectors(conn, LOCAL_SPACE)[a]
    conn.execute("UPDATE memories SET content = 'first turn, then a second one' WHERE id = %s", [a])
    report = embed_window(conn, get_minilm(), *ALL)
    assert report.embedded == 1
    assert not np.allclose(vectors(conn, LOCAL_SPACE)[a], before)


def test_partition_window_limits_the_work(conn: psycopg.Connection) -> None:
    add_memory(conn, "October", "x", partition_day="2026-10-01")
    add_memory(conn, "November", "y", partition_day="2026-11-01")
    report = embed_window(conn, get_minilm(), date(2026, 10, 1), date(2026, 10, 2))
    assert report.embedded == 1 and report.space_coverage == 0.5
    assert report.serving_space is None  # half a space is never served


def test_switching_spaces_keeps_serving_the_old_one_until_the_new_is_complete(
    conn: psycopg.Connection,
) -> None:
    add_memory(conn, "October", "rate limits in postgres", partition_day="2026-10-01")
    add_memory(conn, "November", "backups with age", partition_day="2026-11-01")
    embed_window(conn, get_minilm(), *ALL)
    assert serving(conn) == LOCAL_SPACE
    with running_fake_ollama(embed_dims={"bge-m3": 1024}) as fake:
        bge = OllamaEmbedder(fake.host, BGE)
        # The backfill's first partition: the new space is half built, search stays on MiniLM.
        partial = embed_window(conn, bge, date(2026, 10, 1), date(2026, 10, 2))
        assert partial.space_coverage == 0.5 and serving(conn) == LOCAL_SPACE
        done = embed_window(conn, bge, date(2026, 11, 1), date(2026, 11, 2))
        assert done.serving_space == BGE and serving(conn) == BGE
        assert len(fake.embed_requests) == 2
    assert {v.shape for v in vectors(conn, BGE).values()} == {(1024,)}
    assert {v.shape for v in vectors(conn, LOCAL_SPACE).values()} == {(384,)}


def test_ollama_errors_say_what_to_do(conn: psycopg.Connection) -> None:
    add_memory(conn, "A", "b")
    with running_fake_ollama(embed_dims={"bge-m3": 1024}) as fake:
        fake.script_embed(HttpError(404, 'model "bge-m3" not found, try pulling it first'))
        with pytest.raises(UserError, match="ollama pull bge-m3"):
            embed_window(conn, OllamaEmbedder(fake.host, BGE), *ALL)
    assert vectors(conn, BGE) == {}


def test_a_space_change_is_a_backfill_of_the_embedding_asset(conn, db_url) -> None:  # type: ignore[no-untyped-def]
    add_memory(conn, "October", "rate limits in postgres", partition_day="2026-10-01")
    add_memory(conn, "November", "backups with age", partition_day="2026-11-01")
    embed_window(conn, get_minilm(), *ALL)
    with running_fake_ollama(embed_dims={"bge-m3": 1024}) as fake:
        defs = dg.Definitions(
            assets=[memory_embeddings],
            jobs=[dg.define_asset_job("reembed", selection=[memory_embeddings])],
            resources={
                "db": DatabaseResource(url=db_url),
                "embedding": EmbeddingResource(space=BGE, ollama_host=fake.host),
            },
        )
        job = defs.resolve_job_def("reembed")
        partial = job.execute_in_process(partition_key="2026-10-01")
        assert partial.success and serving(conn) == LOCAL_SPACE
        backfill = job.execute_in_process(
            tags={RANGE_START_TAG: "2026-09-01", RANGE_END_TAG: "2026-11-30"}
        )
    assert backfill.success and serving(conn) == BGE
    metadata = backfill.asset_materializations_for_node("memory_embeddings")[0].metadata
    assert metadata["serving_space"].value == BGE
    assert metadata["active_space_coverage"].value == 1.0
