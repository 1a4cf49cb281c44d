"""Relationship discovery over the whole demo corpus (capture, offline semantic pass, MiniLM
vectors, offline judge), scored against `memory_pipeline/demo/relationships_gold.jsonl`.

Targets (issue 14) for the offline backend: contradiction/reversal recall 1.0 with precision at
least 0.8; near-duplicate recall at least 0.9 with precision at least 0.9; no must-not pair
linked. At the time of writing: contradicts 4/4 gold pairs, 9 edges all correct (a reversing
decision links both the reversed decision and its segment); duplicate_of 1/1, 1 edge.
"""

from __future__ import annotations

from datetime import date

import pytest

from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import SourceRoots
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embedding_text, text_sha256
from memory_pipeline.entities.store import extract_window
from memory_pipeline.relationships.evaluation import (
    DEMO_RELATIONSHIPS_GOLD,
    evaluate,
    load_gold,
    report_table,
)
from memory_pipeline.relationships.judge_offline import OfflineJudge
from memory_pipeline.relationships.store import discover_window
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
from memory_pipeline.settings import DEMO_CORPUS

pytestmark = pytest.mark.slow

START, END = date(2026, 9, 1), date(2026, 11, 30)
FLOORS = {"contradicts": (1.0, 0.8), "duplicate_of": (0.9, 0.9)}  # (recall, precision)


def embed_memories(conn) -> None:  # type: ignore[no-untyped-def]
    """Memory vectors only, as embed_window writes them (discovery reads no passage vectors;
    cutting and embedding every passage would triple this test's time)."""
    rows = conn.execute("SELECT id, title, content FROM memories ORDER BY id").fetchall()
    texts = [embedding_text(r[1], r[2]) for r in rows]
    vectors = get_minilm().embed(texts)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memory_embeddings (memory_id, space, embedding, content_sha256)"
            " VALUES (%s, %s, %s, %s)",
            [
                (r[0], LOCAL_SPACE, v, text_sha256(t))
                for r, v, t in zip(rows, vectors, texts, strict=True)
            ],
        )
    conn.execute("UPDATE embedding_spaces SET serving = (name = %s)", [LOCAL_SPACE])


def test_offline_discovery_meets_the_gold_floors_on_the_demo_corpus(conn, reader_url) -> None:
    roots = SourceRoots(
        codex_home=DEMO_CORPUS / "codex_home",
        claude_home=DEMO_CORPUS / "claude_home",
        import_dir=DEMO_CORPUS / "imports",
        kind="demo",
        quiet_minutes=0,
    )
    capture_window(conn, roots.connectors(), START, END)
    from memory_pipeline.semantic.process import process_window

    process_window(conn, OfflineRulesBackend(embedder=get_minilm()), START, END, 0)
    embed_memories(conn)
    extract_window(conn, START, END)  # the ingest job's order: entities before edges
    report = discover_window(conn, OfflineJudge(), START, END)
    assert report.scanned > 100 and not report.failures

    with connect(reader_url, autocommit=True) as reader:
        scores = {s.relation: s for s in evaluate(reader, load_gold(DEMO_RELATIONSHIPS_GOLD))}
        print(report_table(list(scores.values())))
    assert set(scores) == set(FLOORS)
    for relation, (recall, precision) in FLOORS.items():
        s = scores[relation]
        assert s.recall >= recall and s.precision >= precision, report_table([s])
        assert s.violations == []
    # Idempotent over the whole corpus: nothing is scanned, added or expired again.
    again = discover_window(conn, OfflineJudge(), START, END)
    assert (again.scanned, again.added, again.expired) == (0, {}, {})
