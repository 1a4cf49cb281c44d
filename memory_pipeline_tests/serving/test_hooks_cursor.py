"""Cursor's session-start hook: its payload as Cursor sends it, its output as Cursor reads it,
and failing open."""

from __future__ import annotations

import json
from pathlib import Path

from memory_pipeline_tests.serving.test_hooks import (  # noqa: F401 (pytest fixtures)
    _log,
    corpus,
    embedder,
    hook_home,
    run_hook,
    running,
)
from serving.hooks import payload

# A sessionStart stdin as Cursor 3.17/3.18 writes it (fusengine/harness
# test/fixtures/cursor/sessionStart/, sanitized there), with a workspace open.
CURSOR_SESSION_START = {
    "conversation_id": "5b3f0a4e-2c1d-4e5f-8a9b-0c1d2e3f4a5b",
    "generation_id": "",
    "model": "unknown",
    "model_id": "default",
    "is_background_agent": False,
    "composer_mode": "agent",
    "session_id": "5b3f0a4e-2c1d-4e5f-8a9b-0c1d2e3f4a5b",
    "hook_event_name": "sessionStart",
    "cursor_version": "3.18.9",
    "workspace_roots": ["/home/u/kestrel"],
    "user_email": None,
    "transcript_path": None,
}


def test_cursors_session_start_payload_parses():
    event = payload.parse(json.dumps(CURSOR_SESSION_START), payload.SESSION_START)
    assert event.event == payload.SESSION_START
    assert event.cwd == "/home/u/kestrel"  # the first workspace root
    assert event.session_id == CURSOR_SESSION_START["session_id"]
    empty = payload.parse(
        json.dumps({**CURSOR_SESSION_START, "workspace_roots": [], "session_id": None}),
        payload.SESSION_START,
    )
    assert empty.cwd is None and empty.session_id == CURSOR_SESSION_START["conversation_id"]


def test_cursor_output_is_additional_context():
    assert json.loads(payload.output(payload.SESSION_START, "m", "cursor")) == {
        "additional_context": "m"
    }


def test_the_cursor_hook_prints_cursors_shape(hook_home: Path, corpus, running):  # noqa: F811
    running()
    result = run_hook(
        hook_home,
        "session-start",
        json.dumps(CURSOR_SESSION_START),
        "--agent",
        "cursor",
        "--deadline",
        "20",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) == {"additional_context"} and out["additional_context"].strip()


def test_the_cursor_hook_fails_open(hook_home: Path):  # noqa: F811
    """No server (and none in time), a bad payload: nothing printed, exit 0, one log line."""
    for body, expected in (
        ("{not json", "stdin is not JSON"),
        (json.dumps(CURSOR_SESSION_START), "not running"),
    ):
        before = len(_log(hook_home))
        result = run_hook(
            hook_home, "session-start", body, "--agent", "cursor", "--deadline", "0.3"
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
        lines = _log(hook_home)[before:]
        assert len(lines) == 1 and expected in lines[0], lines
