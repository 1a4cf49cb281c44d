"""Dagster's run records hold no memory text: a dream run whose digest quotes the memories it
rests on records counts and ids in the asset's metadata, and a grep of every table of the
Dagster instance's database (event log, runs, asset index) finds none of the memories' text, so
a forget never has to reach into Dagster's storage."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import psycopg
from psycopg import sql

from memory_pipeline.dream import definitions as dream_defs
from memory_pipeline.dream.definitions import RUN_TYPE_TAG
from memory_pipeline.resources import DatabaseResource, EmbeddingResource, SemanticResource
from memory_pipeline_tests.dream.helpers import reversed_decisions

QUOTED = ("fixed window because it is fast", "Rate limiting on Redis", "Redis evicted them")


def psycopg_url(sqlalchemy_url: str) -> str:
    return sqlalchemy_url.replace("postgresql+psycopg2://", "postgresql://", 1)


def test_a_dream_run_puts_no_memory_text_into_dagster(
    conn: psycopg.Connection, db_url: str, tmp_path: Path, dagster_home: Path, dagster_pg_url: str
) -> None:
    reversed_decisions(conn)
    result = dg.materialize(
        [dream_defs.dream_cycle],
        instance=dg.DagsterInstance.get(),
        partition_key="2026-11-30",
        tags={RUN_TYPE_TAG: "scheduled"},
        resources={
            "db": DatabaseResource(url=db_url),
            "embedding": EmbeddingResource(
                space="local:all-minilm-l6-v2:384", ollama_host="http://127.0.0.1:9"
            ),
            "dream": dream_defs.DreamResource(
                memory_home=str(tmp_path), ollama_host="http://127.0.0.1:9"
            ),
            "semantic": SemanticResource(ollama_host="http://127.0.0.1:9"),
        },
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("dream_cycle")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["memories_superseded"] == 1
    digest = Path(str(meta["digest_path"])).read_text()
    assert QUOTED[0] in digest  # the digest on disk quotes it: it is the user's to read

    holding = []
    with psycopg.connect(psycopg_url(dagster_pg_url), autocommit=True) as dagster:
        tables = dagster.execute(
            "SELECT schemaname, tablename FROM pg_tables"
            " WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        assert len(tables) > 5  # the instance's schema is there
        for schema, table in tables:
            for text in QUOTED:
                query = sql.SQL("SELECT count(*) FROM {} AS r WHERE strpos(r::text, %s) > 0")
                query = query.format(sql.Identifier(schema, table))
                if dagster.execute(query, [text]).fetchone()[0]:  # type: ignore[index]
                    holding.append(f"{table}: {text}")
    assert holding == []
