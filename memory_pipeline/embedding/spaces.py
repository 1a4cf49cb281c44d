"""The embedder for a configured embedding space, and which space search serves."""

from __future__ import annotations

import psycopg

from memory_pipeline import tuning
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.errors import UserError

LOCAL_SPACE = tuning.LOCAL_EMBEDDING_SPACE


def embedder_for(space: str, ollama_host: str) -> Embedder:
    if space == LOCAL_SPACE:
        from memory_pipeline.embedding.minilm import get_minilm

        return get_minilm()
    if space.startswith("ollama:"):
        from memory_pipeline.embedding.ollama_embedder import OllamaEmbedder

        return OllamaEmbedder(ollama_host, space)
    raise UserError(
        f"unknown embedding space {space!r}; use {LOCAL_SPACE} or ollama:<model>:<dims>"
    )


def serving_space(conn: psycopg.Connection) -> tuple[str, int] | None:
    """(name, dims) of the space search reads, or None before any space is complete."""
    row = conn.execute("SELECT name, dims FROM embedding_spaces WHERE serving").fetchone()
    return (row[0], row[1]) if row else None
