"""search() was restructured for speed (issue 12: fewer round trips, candidate rows that carry
their observation counts, temporal neighbours read with their candidate columns, a faster
tokenizer): every response must stay exactly what it was, field for field.

The reference is the output of the code before that change, recorded on the benchmark corpus
at scale 300 (deterministic: same rows and ids for a scale and seed) for its own varied
queries (gold questions, common and rare words, sentence prefixes, long questions; one in five
filtered by project, type, source or a 30-day window), plus the wider passage options context
packs use. The BM25 channel is pinned to its SQL statement so that the keyword backend, which
is measured on its own, does not enter this comparison.

To record it again after an intended change of ranking or output:
    MEMORY_SEARCH_SNAPSHOT_WRITE=1 .venv/bin/pytest -q -p no:cacheprovider \\
        memory_pipeline_tests/serving/test_search_same_output.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memory_pipeline.bench.corpus import CORPUS_END, load_corpus
from memory_pipeline.bench.search import build_queries
from memory_pipeline.db.connection import connect
from serving import search as S
from serving.models import SearchFilters
from serving.search import pipeline

SNAPSHOT = Path(__file__).parent / "data" / "search_snapshot_scale300.json"
QUERIES = 60


def _sql_bm25(
    conn: psycopg.Connection,
    query: str,
    filters: Any,
    filtered: int | None = -1,
    view: Any = None,  # the keyword index's view search opened: not used here
) -> S.ChannelResult:
    statement, params = S.bm25_chosen_statement(conn, query, filters, filtered)
    return S.ChannelResult.of(conn.execute(statement, params).fetchall())


def _digest(response: dict[str, Any]) -> dict[str, Any]:
    """A response as its result ids (readable when they differ) and a hash of everything."""
    canonical = json.dumps(response, sort_keys=True, separators=(",", ":"))
    return {
        "query": response["query"],
        "ids": [h["id"] for h in response["results"]],
        "temporal": sum(h["temporal_context"] for h in response["results"]),
        "provenance": sum(len(h["provenance"]) for h in response["results"]),
        "passages": sum(len(h["passages"]) for h in response["results"]),
        "sha256": hashlib.sha256(canonical.encode()).hexdigest(),
    }


def _responses(reader: psycopg.Connection, embedder: Any, queries: list[Any]) -> list[Any]:
    out = []
    for i, q in enumerate(queries):
        kwargs: dict[str, Any] = {}
        if i % 7 == 3:  # what context packs ask for
            kwargs = {"passages_per_hit": 6, "near_passages": True, "limit": 20}
        elif i % 11 == 5:
            kwargs = {"limit": 3, "context": "postgres migration rollout"}
        response = S.search(
            reader, q.text, embedder=embedder, filters=q.filters, now=CORPUS_END, **kwargs
        )
        out.append(_digest(response.model_dump(mode="json")))
    return out


def test_search_returns_what_it_returned_before_the_speed_work(
    db_url: str, reader_url: str, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = load_corpus(db_url, 300)
    queries = build_queries(info, QUERIES)
    assert any(q.filters != SearchFilters() for q in queries)
    monkeypatch.setattr(pipeline, "bm25_channel", _sql_bm25)  # where search() calls it
    with connect(reader_url, autocommit=True) as reader:
        got = _responses(reader, embedder, queries)
    if os.environ.get("MEMORY_SEARCH_SNAPSHOT_WRITE") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    # The reference has substance: hits, temporal neighbours, provenance and passages.
    assert sum(len(r["ids"]) for r in expected) > QUERIES * 3
    assert all(sum(r[k] for r in expected) > 0 for k in ("temporal", "provenance", "passages"))
    for want, have in zip(expected, got, strict=True):
        assert have == want, want["query"]
