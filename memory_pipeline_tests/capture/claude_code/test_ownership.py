"""Which sessions are the user's own (§2.4 of the notes): history.jsonl, SDK evidence, prompts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memory_pipeline_tests.support.claude_transcript import (
    MAIN_2_0_64,
    Transcript,
    connector,
    only_task,
    project,
)


@pytest.mark.parametrize(
    ("envelope", "prompt_fields", "history", "ownership", "reason"),
    [
        (
            {"entrypoint": "cli"},
            {"promptSource": "typed"},
            False,
            "user_owned",
            "claude_code:typed-prompt",
        ),
        (
            {"entrypoint": "claude-vscode"},
            {"origin": {"kind": "human"}},
            False,
            "user_owned",
            "claude_code:typed-prompt",
        ),
        (
            {"entrypoint": "sdk-cli"},
            {"promptSource": "typed"},
            True,
            "delegated",
            "claude_code:sdk-entrypoint",
        ),
        ({"entrypoint": "sdk-py"}, {}, False, "delegated", "claude_code:sdk-entrypoint"),
        (
            {"entrypoint": "cli"},
            {"promptSource": "sdk"},
            True,
            "delegated",
            "claude_code:sdk-prompt",
        ),
        (
            {"entrypoint": "cli"},
            {"turnOrigin": "sdk"},
            False,
            "delegated",
            "claude_code:sdk-prompt",
        ),
        ({"entrypoint": None}, {}, False, "unknown", "claude_code:no-entrypoint"),
        ({"entrypoint": None}, {}, True, "user_owned", "claude_code:history-match"),
        ({"entrypoint": "cli"}, {}, False, "unknown", "claude_code:unconfirmed-prompt"),
        ({"entrypoint": "cli"}, {}, True, "user_owned", "claude_code:history-match"),
        (
            {"entrypoint": "mcp"},
            {"promptSource": "typed"},
            False,
            "unknown",
            "claude_code:unrecognized-entrypoint",
        ),
    ],
)
def test_session_ownership_matrix(
    home: Path,
    envelope: dict[str, Any],
    prompt_fields: dict[str, Any],
    history: bool,
    ownership: str,
    reason: str,
) -> None:
    t = Transcript(**envelope)
    t.sidecar(
        {
            "type": "bridge-session",
            "sessionId": t.session_id,
            "bridgeSessionId": "bridge-1",
            "ownerAccountUuid": "acct-0000-secret",
            "ownerOrganizationUuid": "org-0000-secret",
        }
    )
    t.turn("fix the flaky test", "Fixed: the retry loop now waits.", 1, **prompt_fields)
    path = t.write(project(home))
    if history:
        entry = {
            "display": "fix the flaky test",
            "pastedContents": {},
            "timestamp": 1788256801000,
            "project": "/home/dev/app",
            "sessionId": t.session_id,
        }
        (home / "history.jsonl").write_text(json.dumps(entry) + "\n")
    task = only_task(connector(home).parse(path))
    assert (task.ownership.ownership, task.ownership.reason) == (ownership, reason)
    if envelope["entrypoint"]:
        assert task.ownership.evidence["entrypoint"] == envelope["entrypoint"]
    dumped = task.model_dump_json()
    assert "acct-0000-secret" not in dumped and "org-0000-secret" not in dumped
    assert "ownerAccountUuid" not in dumped
    assert len(task.turns) == 1  # ownership never changes what a turn is


def test_real_2_0_64_session_is_user_owned_when_history_jsonl_has_it(home: Path) -> None:
    path = project(home) / MAIN_2_0_64.name
    shutil.copy(MAIN_2_0_64, path)
    entry = {
        "display": "create hello.py, md and js",
        "pastedContents": {},
        "timestamp": 1765395465343,
        "project": "/tmp/private",
        "sessionId": "4c2ddfdc-b619-4525-8d03-1950fb1b0257",
    }
    (home / "history.jsonl").write_text(json.dumps(entry) + "\n")
    task = only_task(connector(home).parse(path))
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.reason == "claude_code:history-match"
    assert task.ownership.evidence == {"history_match": "sessionId"}


def test_history_without_session_id_matches_project_and_prompt(home: Path) -> None:
    t = Transcript(entrypoint=None, version="2.0.64")
    t.turn("explain the build", "It uses hatch.", 1)
    path = t.write(project(home))
    lines = [
        {"display": "something else", "project": "/home/dev/app", "timestamp": 1},
        {"display": "explain the build", "project": "/home/dev/app", "timestamp": 2},
    ]
    (home / "history.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    task = only_task(connector(home).parse(path))
    assert task.ownership.ownership == "user_owned"
    assert task.ownership.evidence["history_match"] == "project+display"


def test_sdk_evidence_on_a_later_prompt_wins_over_a_typed_first_prompt(home: Path) -> None:
    t = Transcript()
    t.turn("typed by me", "ok", 1, promptSource="typed")
    t.turn("sent by a script", "ok", 2, promptSource="sdk")
    task = only_task(connector(home).parse(t.write(project(home))))
    assert task.ownership.ownership == "delegated"
    assert task.ownership.evidence["promptSource"] == "sdk"
