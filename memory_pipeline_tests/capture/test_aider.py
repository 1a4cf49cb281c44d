"""Aider connector: sessions and turns of `.aider.chat.history.md`, ownership from the logged
command line, append and drift, the waiting last turn, bad bytes, discovery (no database)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.capture.aider import AiderConnector
from memory_pipeline_tests.support.aider_history import History, chat, input_history

T1 = datetime(2026, 9, 22, 9, 14, 3)
T2 = datetime(2026, 9, 23, 17, 2, 41)


def aider(*repos: Path, **kw: object) -> AiderConnector:
    return AiderConnector(repos=repos, **kw)  # type: ignore[arg-type]


def repo_with_history(tmp_path: Path) -> tuple[Path, History]:
    repo = tmp_path / "logslice"
    (repo / ".git").mkdir(parents=True)
    return repo, History(repo / ".aider.chat.history.md")


def parse(repo: Path):  # type: ignore[no-untyped-def]
    connector = aider(repo)
    (path,) = connector.discover()
    return connector.parse(path)


def test_turns_are_typed_prompts_and_final_answers(tmp_path: Path) -> None:
    repo, h = repo_with_history(tmp_path)
    h.start(T1)
    h.user_input("/add src/window.rs")
    h.tool_output("Added src/window.rs to the chat")
    chat(
        h,
        "why does --since drop the first line?\nit should be inclusive",
        "The comparison uses `>` instead of `>=`.\n\n> note: quoted markdown stays\n\n"
        "src/window.rs\n```rust\n<<<<<<< SEARCH\n    if ts > since {\n=======\n"
        "    if ts >= since {\n>>>>>>> REPLACE\n```",
        ("Applied edit to src/window.rs", "Commit 3f2a1c9 fix: make --since inclusive"),
    )
    # A reflection: lint errors are sent back by aider itself; its second answer is not part
    # of the turn (it would change a turn already captured).
    chat(h, "add a test", "Here is a first test.", ("Applied edit", "Fix lint errors? (Y)es y"))
    h.ai_output("Fixed the lint error in the test.")
    chat(h, "/ask is the window half-open?", "Yes: [since, until).")
    h.user_input("/run cargo test")
    h.tool_output("test result: ok. 3 passed")
    result = parse(repo)
    assert result.issues == []
    (task,) = result.tasks
    assert [(t.prompt, t.outcome) for t in task.turns] == [
        (
            "why does --since drop the first line?\nit should be inclusive",
            "The comparison uses `>` instead of `>=`.\n\n> note: quoted markdown stays\n\n"
            "src/window.rs\n```rust\n<<<<<<< SEARCH\n    if ts > since {\n=======\n"
            "    if ts >= since {\n>>>>>>> REPLACE\n```",
        ),
        ("add a test", "Here is a first test."),
        ("is the window half-open?", "Yes: [since, until)."),
    ]
    assert [t.ordinal for t in task.turns] == [0, 1, 2]
    assert task.started_at == T1.astimezone(UTC)
    assert task.native_context["repository"] == str(repo)
    assert task.native_context["aider_version"] == "0.86.1"
    assert (task.ownership.ownership, task.ownership.reason) == (
        "user_owned",
        "aider:interactive-chat",
    )
    assert not task.unfinished_turn


@pytest.mark.parametrize(
    ("argv", "ownership", "reason"),
    [
        ("/home/mara/.local/bin/aider --model sonnet", "user_owned", "aider:interactive-chat"),
        ("aider --message 'fix the tests' --yes-always", "delegated", "aider:scripted-message"),
        ("aider -m 'fix the tests'", "delegated", "aider:scripted-message"),
        ("aider --msg=refactor", "delegated", "aider:scripted-message"),
        ("C:\\Tools\\aider.exe --message-file task.md", "delegated", "aider:scripted-message"),
        (
            "/usr/lib/python3/site-packages/aider/__main__.py -f t.md",
            "delegated",
            "aider:scripted-message",
        ),
        ("Aider v0.86.1", "unknown", "aider:no-command-line"),  # no command line logged
    ],
)
def test_ownership_matrix(tmp_path: Path, argv: str, ownership: str, reason: str) -> None:
    repo, h = repo_with_history(tmp_path)
    h.start(T1, argv=argv)
    chat(h, "fix the tests", "Done.")
    (task,) = parse(repo).tasks
    assert (task.ownership.ownership, task.ownership.reason) == (ownership, reason)


def test_each_session_is_a_task_and_append_keeps_what_was_read(tmp_path: Path) -> None:
    repo, h = repo_with_history(tmp_path)
    h.start(T1)
    chat(h, "one", "1")
    chat(h, "left unanswered (the API failed)", None)
    first = parse(repo).tasks
    assert [len(t.turns) for t in first] == [1] and first[0].unfinished_turn
    h.tool_output("litellm.APIConnectionError: connection refused")
    h.start(T2)
    chat(h, "two", "2")
    h.start(T2)  # the same second, twice (two aider processes): still two tasks
    chat(h, "three", "3")
    second = parse(repo).tasks
    assert [[t.prompt for t in task.turns] for task in second] == [["one"], ["two"], ["three"]]
    assert second[0].turns == first[0].turns and second[0].native_id == first[0].native_id
    assert not second[0].unfinished_turn  # its session is over: the unanswered prompt is gone
    assert len({t.native_id for t in second}) == 3
    connector = aider(repo)
    assert connector.task_days(connector.discover()[0]) == {t.started_at.date() for t in second}


def test_a_reflection_never_changes_a_captured_answer(tmp_path: Path) -> None:
    repo, h = repo_with_history(tmp_path)
    h.start(T1)
    chat(h, "one", "first answer", ("Applied edit", "Fix lint errors? (Y)es y"))
    first = parse(repo).tasks[0].turns
    h.ai_output("the reflection's answer")
    h.tool_output("Applied edit")
    assert parse(repo).tasks[0].turns == first  # monotonic: what was captured stays


def test_bad_bytes_cost_only_their_turn(tmp_path: Path) -> None:
    repo, h = repo_with_history(tmp_path)
    h.start(T1)
    chat(h, "one", "1")
    chat(h, "two", "answer two")
    chat(h, "three", "3")
    path = repo / ".aider.chat.history.md"
    data = path.read_bytes().replace(b"answer two", b"answer \xff\xfe two")
    path.write_bytes(b"stray line of a rewritten file\n" + data + b"\x00\x00 binary junk\n")
    result = aider(repo).parse(path)
    assert sorted(i.reason for i in result.issues) == [
        "binary",
        "invalid_utf8",
        "no_session_header",
        "turn_damaged",
        "turn_damaged",
    ]
    (task,) = result.tasks
    # A bad line after an answer may have been a later (final) answer: that turn is not kept.
    assert [t.prompt for t in task.turns] == ["one"]
    path.write_bytes(data.replace(b"answer \xff\xfe two", b"answer two"))
    assert [t.prompt for t in aider(repo).parse(path).tasks[0].turns] == ["one", "two", "three"]


def test_an_unreadable_prompt_line_is_still_a_prompt(tmp_path: Path) -> None:
    """Found by `make fuzz`: a prompt line with bad bytes after an answer was read as more of
    that answer, and the intact turn before it was lost. Its `#### ` is still readable."""
    repo, h = repo_with_history(tmp_path)
    h.start(T1)
    chat(h, "one", "answer one")
    chat(h, "two", "answer two")
    chat(h, "three\nstill three", "answer three")
    path = repo / ".aider.chat.history.md"
    data = path.read_bytes()
    path.write_bytes(
        data.replace(b"#### two", b"#### tw\xf8o").replace(b"#### still", b"#### st\xffill")
    )
    result = aider(repo).parse(path)
    (task,) = result.tasks
    # "one" ends where the next prompt starts; "two" and the half-read "three" are damaged and
    # recorded, never stored as a part of a prompt
    assert [(t.prompt, t.outcome) for t in task.turns] == [("one", "answer one")]
    assert sorted(i.reason for i in result.issues) == [
        "invalid_utf8",
        "invalid_utf8",
        "turn_damaged",
        "turn_damaged",
    ]


def test_an_unreadable_session_header_ends_a_turn_and_costs_none(tmp_path: Path) -> None:
    """A header with bad bytes cannot be dated: the turns after it stay in the session before
    it, and the answer before it is kept (a header is no part of an answer)."""
    repo, h = repo_with_history(tmp_path)
    h.start(T1)
    chat(h, "one", "answer one")
    h.start(T2)
    chat(h, "two", "answer two")
    path = repo / ".aider.chat.history.md"
    stamp = f"{T2:%Y-%m-%d %H:%M:%S}".encode()
    path.write_bytes(path.read_bytes().replace(stamp, stamp[:4] + b"\xff" + stamp[5:]))
    result = aider(repo).parse(path)
    assert [[t.prompt for t in task.turns] for task in result.tasks] == [["one", "two"]]
    assert [i.reason for i in result.issues] == ["invalid_utf8"]


def test_prompt_times_come_from_the_input_history(tmp_path: Path) -> None:
    repo, h = repo_with_history(tmp_path)
    h.start(T1)
    chat(h, "one", "1")
    chat(h, "/ask two?", "2")
    input_history(repo / ".aider.input.history", T1 - timedelta(days=1), "one")  # older session
    input_history(repo / ".aider.input.history", T1 + timedelta(seconds=20), "one")
    input_history(repo / ".aider.input.history", T1 + timedelta(seconds=90), "/ask two?")
    (task,) = parse(repo).tasks
    assert [t.started_at for t in task.turns] == [
        (T1 + timedelta(seconds=20)).astimezone(UTC),
        (T1 + timedelta(seconds=90)).astimezone(UTC),
    ]


def test_discovery_of_named_repos_searched_roots_and_configured_names(tmp_path: Path) -> None:
    root = tmp_path / "src"
    for rel in ("a", "deep/er/b", "x/node_modules/pkg", "too/deep/for/the/walk/c"):
        History(root / rel / ".aider.chat.history.md").start(T1)
    custom = root / "d"
    custom.mkdir(parents=True)
    (custom / ".aider.conf.yml").write_text("model: sonnet\nchat-history-file: notes/chat.md\n")
    History(custom / "notes" / "chat.md").start(T1)
    os.mkfifo(root / "a" / "fifo.md")
    (root / "a" / ".aider.conf.yml").write_text("chat-history-file: fifo.md\n")
    named = tmp_path / "named"
    History(named / ".aider.chat.history.md").start(T1)
    elsewhere = tmp_path / "elsewhere.md"
    History(elsewhere).start(T1)
    connector = AiderConnector(repos=[named], roots=[root], history_file=str(elsewhere))
    found = {str(p.relative_to(tmp_path)) for p in connector.discover()}
    assert found == {
        "src/a/.aider.chat.history.md",
        "src/deep/er/b/.aider.chat.history.md",
        "src/d/notes/chat.md",
        "named/.aider.chat.history.md",
        "elsewhere.md",
    }
    assert [s.reason for s in connector.skipped_files] == ["not_a_regular_file"]


def test_a_file_without_sessions_is_recorded(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / ".aider.chat.history.md").write_text("just some notes\n")
    result = parse(repo)
    assert result.tasks == []
    assert [i.reason for i in result.issues] == ["no_session_header", "not_a_transcript"]
