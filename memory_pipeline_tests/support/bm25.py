"""The BM25 channel as its tests drive it: passages cut as the embedding asset cuts them, and the
channel's ranking beside the exhaustive reference (memory ids, best first)."""

from __future__ import annotations

from datetime import date

import psycopg

from memory_pipeline.bench.search import bm25_exhaustive
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.passages import sync_passages
from serving.models import SearchFilters
from serving.search import bm25_channel


def cut_passages(conn: psycopg.Connection) -> None:
    """What the embedding asset does for full text (passages and their tsvectors)."""
    sync_passages(conn, get_minilm(), date(2026, 1, 1), date(2027, 1, 1))


def bm25(reader: psycopg.Connection, query: str, **filters: object) -> list[str]:
    with reader.transaction():
        return bm25_channel(reader, query, SearchFilters(**filters)).memories  # type: ignore[arg-type]


def reference(reader: psycopg.Connection, query: str, **filters: object) -> list[str]:
    with reader.transaction():
        return bm25_exhaustive(reader, query, SearchFilters(**filters)).memories  # type: ignore[arg-type]
