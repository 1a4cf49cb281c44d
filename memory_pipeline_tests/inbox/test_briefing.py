"""The daily briefing tells of a new inbox document that bears on an agent memory."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memory_pipeline.express.briefing import make_briefing
from memory_pipeline.express.store import load_briefing
from memory_pipeline.inbox.store import capture_inbox
from memory_pipeline_tests.express.rows import edge
from memory_pipeline_tests.inbox.files import write
from memory_pipeline_tests.inbox.test_readers import ARTICLE
from memory_pipeline_tests.support.memories import add_memory


def test_a_new_source_related_to_a_decision_is_a_briefing_item(conn, tmp_path: Path) -> None:
    now = datetime.now(UTC)
    decision = add_memory(
        conn,
        "Back up the homelab Postgres with pgBackRest",
        "x",
        type="decision",
        project="homelab",
        created_at=now,
    )
    inbox = tmp_path / "inbox"
    write(inbox / "post.html", ARTICLE)
    write(inbox / "unrelated.md", "# Notes\n\nNothing here bears on any decision.\n")
    capture_inbox(conn, inbox, tmp_path / "cache", now.date())
    passage = conn.execute(
        "SELECT id::text FROM memories WHERE type = 'source' AND source_type = 'article'"
        " ORDER BY title LIMIT 1"
    ).fetchone()[0]
    edge(conn, passage, decision, "related_to", at=now)
    now = datetime.now(UTC)  # after the capture: its rows are inside the briefing's window
    make_briefing(conn, now.date(), now=now)
    stored = load_briefing(conn, now.date())
    assert stored is not None
    items = [i for i in stored.items if i.kind == "source"]
    assert len(items) == 1  # the unrelated note is no item
    item = items[0]
    assert item.headline == "New web article in your inbox: Why we moved backups to pgBackRest"
    assert "Back up the homelab Postgres with pgBackRest" in item.detail
    assert "https://opsnotes.example/pgbackrest" in item.detail
    assert item.topic == "homelab"
    assert {m.id for m in item.memories} == {passage, decision}
