"""`memory-pipeline bench relationships` at a tiny scale, so the harness never rots."""

from __future__ import annotations

from memory_pipeline.bench.corpus import load_corpus
from memory_pipeline.bench.relationships import measure, uses_hnsw
from memory_pipeline.db.connection import connect


def test_relationship_bench_links_new_memories_through_the_hnsw_index(db_url: str) -> None:
    info = load_corpus(db_url, 300)
    figures = {f.name: f for f in measure(db_url, info.memories, 10, lambda _m: None)}
    with connect(db_url, autocommit=True) as conn:  # tiny table: the planner may scan
        assert uses_hnsw(conn, no_seqscan=True)
    assert figures["memories re-scanned by the re-run"].met is True
    timed = figures["link 10 new memories against 300"]
    assert timed.target is None and timed.value > 0
    assert figures["edges added: derived_from"].value > 0  # provenance was copied
