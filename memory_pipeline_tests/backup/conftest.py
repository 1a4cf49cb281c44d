"""Fixtures for backup tests: a backup configuration in tmp_path and a database with content."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
import pytest
from pgvector import Vector
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.crypto import KEY_ENV_VAR, MAGIC
from memory_pipeline.db.connection import connect
from memory_pipeline_tests.support.memories import (
    add_memory,
    add_task,
    add_vector,
    link,
    set_serving,
)

MINILM = "local:all-minilm-l6-v2:384"
BGE = "ollama:bge-m3:1024"
# Distinctive text that must never appear unencrypted in a backup directory.
SECRET_TITLE = "Plaintext canary 7f3a9c"


@pytest.fixture
def backup_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BackupConfig:
    monkeypatch.delenv(KEY_ENV_VAR, raising=False)  # the key file under tmp_path is used
    return BackupConfig(
        backup_dir=tmp_path / "backups",
        key_file=tmp_path / "home" / "backup.key",
        keep_daily=7,
        keep_weekly=4,
    )


@dataclass(frozen=True)
class Seeded:
    memories: list[str]
    vectors: dict[tuple[str, str], np.ndarray]  # (memory id, space) -> vector
    task_id: str


@pytest.fixture
def seeded(db_url: str) -> Iterator[Seeded]:
    """A small database with a row in every table a backup exports, and vectors in two spaces."""
    rng = np.random.default_rng(7)
    with connect(db_url, autocommit=True) as conn:
        ids = [
            add_memory(
                conn,
                "Use pgvector",
                "We decided to use pgvector because one server is simpler.",
                type="decision",
                tags=["db", "vectors"],
                metadata={"questions": ["which vector store?"], "n": 1.5},
            ),
            add_memory(conn, SECRET_TITLE, "Losing the backup key loses the backups."),
            add_memory(
                conn,
                'Zürich "quoted" ✓',
                "line one\nline two\ttab \\ backslash, emoji 🧠, NUL-free",
                depth_score=0.123456789012345,
                project="memory-pipeline",
            ),
        ]
        vectors: dict[tuple[str, str], np.ndarray] = {}
        for memory_id in ids:
            vectors[(memory_id, MINILM)] = rng.standard_normal(384).astype(np.float32)
        for memory_id in ids[:2]:
            vectors[(memory_id, BGE)] = rng.standard_normal(1024).astype(np.float32)
        for (memory_id, space), vector in vectors.items():
            add_vector(conn, memory_id, space, vector)
        set_serving(conn, MINILM)
        conn.execute(
            "INSERT INTO memory_relationships (source_id, target_id, relation_type, note)"
            " VALUES (%s, %s, 'supports', 'why'), (%s, %s, 'related_to', NULL)",
            [ids[0], ids[1], ids[2], ids[0]],
        )
        task_id, turns = add_task(conn, turns=3)
        link(conn, ids[0], task_id, turns[:2])
        run_id = conn.execute(
            "INSERT INTO dream_cycle_runs (run_type, explorer_output, digest,"
            " candidates_generated) VALUES ('scheduled', %s, 'a digest', 1) RETURNING id",
            [Jsonb({"ideas": [1, 2], "note": "x"})],
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO dream_cycle_candidates (run_id, candidate_json, operation,"
            " target_memory_id, final_verdict, created_memory_id)"
            " VALUES (%s, %s, 'CREATE', %s, 'ACCEPTED', %s)",
            [run_id, Jsonb({"title": "candidate"}), ids[0], ids[1]],
        )
        conn.execute(
            "INSERT INTO retrieval_events (memory_id, surface, rank) VALUES (%s, 'cli', 1)",
            [ids[0]],
        )
    yield Seeded(ids, vectors, task_id)


def dbname(url: str) -> str:
    return conninfo_to_dict(url)["dbname"]  # type: ignore[return-value]


def snapshot(url: str) -> dict[str, list[tuple]]:
    """Every row of every table, vectors as float lists, sorted: equal means identical content."""
    with connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            )
        ]
        out = {}
        for table in tables:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            out[table] = sorted((tuple(_plain(v) for v in row) for row in rows), key=repr)
    return out


def _plain(value: object) -> object:
    if isinstance(value, Vector):
        return ("vector", *value.to_list())
    return tuple(value.tolist()) if isinstance(value, np.ndarray) else value


def databases_like(admin_url: str, pattern: str) -> list[str]:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", [pattern]
        ).fetchall()
    return [r[0] for r in rows]


def assert_no_plaintext(root: Path) -> None:
    """Every file under `root` is ciphertext in our format (the lock file is empty)."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath, name)
            data = path.read_bytes()
            if name == ".lock":
                assert data == b""
                continue
            assert data.startswith(MAGIC), path
            assert SECRET_TITLE.encode() not in data, path
            assert b"PGDMP" not in data, path  # the custom-format dump's magic


def flip_byte(path: Path, offset: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if offset is None else offset] ^= 0x01
    path.write_bytes(bytes(data))
