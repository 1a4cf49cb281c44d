"""Inbox documents through the later stages: embedded, linked to agent memories, found with
`--source`, quoted in context packs with their URL and position; a revision re-derives them."""

from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path

import pytest

from memory_pipeline.cli.serving import search_origin
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.inbox.store import capture_inbox
from memory_pipeline.relationships.judge_offline import OfflineJudge
from memory_pipeline.relationships.store import discover_window
from memory_pipeline_tests.inbox.files import write
from memory_pipeline_tests.inbox.test_readers import INFO, VTT
from memory_pipeline_tests.support.memories import NOW, add_memory, add_task, link
from serving.context_pack import context
from serving.models import SearchFilters
from serving.render import pack_text
from serving.search import QueryEmbedder, search

DAY = date(2026, 11, 1)
START, END = DAY, DAY + timedelta(days=1)
DECISION = (
    "Use pgBackRest block incremental backups for the homelab Postgres",
    "Decision: the homelab Postgres is backed up with pgBackRest block-level incremental "
    "backups that copy only the changed pages, because the nightly pg_dump took hours.",
)


@pytest.fixture(scope="module")
def embedder() -> QueryEmbedder:
    e = QueryEmbedder("http://127.0.0.1:9")
    e.embed(LOCAL_SPACE, "warm up")
    return e


def stages(conn) -> None:
    embed_window(conn, get_minilm(), START, END)
    discover_window(conn, OfflineJudge(), START, END)


def test_sources_are_embedded_linked_searched_and_cited(conn, reader, embedder, tmp_path):
    mid = add_memory(conn, *DECISION, type="decision", partition_day=DAY, created_at=NOW)
    task, turns = add_task(conn, turns=1)
    link(conn, mid, task, turns)
    inbox = tmp_path / "inbox"
    write(inbox / "Postgres backups [abc123].en.vtt", VTT)
    write(inbox / "Postgres backups [abc123].info.json", INFO)
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    stages(conn)
    missing = conn.execute(
        "SELECT count(*) FROM memories m WHERE m.type = 'source' AND NOT EXISTS"
        " (SELECT 1 FROM passage_embeddings e JOIN memory_passages p ON p.id = e.passage_id"
        "  WHERE p.memory_id = m.id)"
    ).fetchone()
    assert missing == (0,)  # every passage of the video embedded
    edge = conn.execute(
        "SELECT r.relation_type FROM memory_relationships r JOIN memories s ON s.id IN"
        " (r.source_id, r.target_id) WHERE s.type = 'source' AND %s IN (r.source_id, r.target_id)"
        " AND r.expired_at IS NULL",
        [mid],
    ).fetchall()
    assert ("related_to",) in edge  # the 12:31 passage bears on the decision

    hits = search(
        reader,
        "incremental backups copy only changed pages",
        embedder=embedder,
        filters=SearchFilters(sources=["video"]),
        record_surface=None,
    ).results
    assert hits and {h.source_type for h in hits} == {"video"}
    assert hits[0].cite == "https://www.youtube.com/watch?v=abc123 12:31"
    # `memory-pipeline search` shows where a source's passage sits in its `from` column
    assert search_origin(hits[0]) == "https://www.youtube.com/watch?v=abc123 12:31"
    pack = context(reader, "incremental backups copy only changed pages", 800, embedder=embedder)
    text = pack_text(pack)
    assert 'from="https://www.youtube.com/watch?v=abc123 12:31"' in text
    assert "Block-level incremental backups" in text


def test_a_revision_is_re_embedded_and_re_linked(conn, reader, embedder, tmp_path: Path):
    inbox = tmp_path / "inbox"
    doc = write(inbox / "plan.md", "# Plan\n\nWe keep nightly restic snapshots of the photos.\n")
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    stages(conn)
    old = conn.execute(
        "SELECT e.content_sha256 FROM passage_embeddings e JOIN memory_passages p"
        " ON p.id = e.passage_id JOIN memories m ON m.id = p.memory_id WHERE m.type = 'source'"
    ).fetchall()
    doc.write_text("# Plan\n\nThe Terraform state lives in a MinIO bucket with locking.\n")
    os.utime(doc, ns=(3 * 10**18, 3 * 10**18))
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    stages(conn)
    new = conn.execute(
        "SELECT e.content_sha256 FROM passage_embeddings e JOIN memory_passages p"
        " ON p.id = e.passage_id JOIN memories m ON m.id = p.memory_id WHERE m.type = 'source'"
    ).fetchall()
    assert len(new) == len(old) == 1 and new != old
    hits = search(reader, "terraform state minio", embedder=embedder, record_surface=None).results
    assert hits[0].type == "source" and "MinIO" in hits[0].content
    assert not search(reader, "restic photos", embedder=None, record_surface=None).results
