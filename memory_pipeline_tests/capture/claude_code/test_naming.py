"""Task titles: custom title, then the latest AI title, then the summary."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline_tests.support.claude_transcript import (
    Transcript,
    connector,
    only_task,
    project,
)


def test_custom_title_beats_ai_title(home: Path) -> None:
    t = Transcript()
    t.sidecar({"type": "custom-title", "sessionId": t.session_id, "customTitle": "My rename"})
    t.turn("one", "answer one", 1)
    t.sidecar({"type": "ai-title", "sessionId": t.session_id, "aiTitle": "Fix flaky test"})
    task = only_task(connector(home).parse(t.write(project(home))))
    assert task.title is not None
    assert (task.title.text, task.title.source) == ("My rename", "claude_code:custom-title")
    assert task.title.observed_at is None  # these sidecars carry no timestamp


def test_latest_ai_title_then_summary_then_none(home: Path) -> None:
    t = Transcript()
    leaf = t.turn("one", "answer one", 1)
    t.sidecar({"type": "ai-title", "sessionId": t.session_id, "aiTitle": "First guess"})
    t.sidecar({"type": "ai-title", "sessionId": t.session_id, "aiTitle": "Better title"})
    task = only_task(connector(home).parse(t.write(project(home))))
    assert task.title is not None
    assert (task.title.text, task.title.source) == ("Better title", "claude_code:ai-title")

    old = Transcript(session_id="01d00000-0000-4000-8000-000000000000", entrypoint=None)
    old.sidecar({"type": "summary", "summary": "Someone else's session", "leafUuid": "nowhere"})
    leaf = old.turn("one", "answer one", 1)
    old.sidecar({"type": "summary", "summary": "Parser refactor", "leafUuid": leaf})
    task = only_task(connector(home).parse(old.write(project(home))))
    assert task.title is not None
    assert (task.title.text, task.title.source) == ("Parser refactor", "claude_code:summary")

    bare = Transcript(session_id="0b000000-0000-4000-8000-000000000000")
    bare.turn("one", "answer one", 1)
    assert only_task(connector(home).parse(bare.write(project(home)))).title is None
