"""A search or context pack that fails partway (issue 35: a pack now sends several statements in
one round trip and runs in one transaction) raises the database's own error and leaves the
reader's connection as it was: idle, out of any transaction or pipeline, and the next call gives
the same answer as before the failure (the hook server and the MCP workers keep one connection).

The failure is deterministic: another session holds an exclusive lock on the passages, and the
reader gives up waiting for it after a short lock timeout."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import errors
from psycopg.pq import TransactionStatus

from memory_pipeline.bench.corpus import CORPUS_END, load_corpus
from memory_pipeline.db.connection import connect
from serving.context_pack import context
from serving.search import search

QUERY = "which retry policy did we settle on for the billing sync"


def _both(reader: psycopg.Connection, embedder: Any) -> tuple[Any, Any]:
    found = search(reader, QUERY, embedder=embedder, now=CORPUS_END)
    pack = context(reader, QUERY, 1000, embedder=embedder, now=CORPUS_END)
    return found.model_dump(mode="json"), pack.model_dump(mode="json")


@pytest.mark.parametrize("call", ["search", "context"])
def test_a_call_that_fails_midway_leaves_the_connection_usable(
    db_url: str, reader_url: str, embedder: Any, call: str
) -> None:
    load_corpus(db_url, 300)
    with connect(reader_url, autocommit=True) as reader:
        before = _both(reader, embedder)
        assert before[1]["items"], "the corpus answers the query"
        with connect(db_url) as owner:
            owner.execute("LOCK TABLE memory_passages IN ACCESS EXCLUSIVE MODE")
            reader.execute("SET lock_timeout = '200ms'")
            with pytest.raises(errors.LockNotAvailable):
                if call == "search":
                    search(reader, QUERY, embedder=embedder, now=CORPUS_END)
                else:
                    context(reader, QUERY, 1000, embedder=embedder, now=CORPUS_END)
            assert reader.info.transaction_status == TransactionStatus.IDLE
            owner.rollback()
        reader.execute("RESET lock_timeout")
        assert _both(reader, embedder) == before
