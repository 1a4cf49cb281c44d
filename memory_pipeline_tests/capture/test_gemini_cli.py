"""Gemini CLI connector: both session generations (the real legacy document and JSONL logs),
ownership, monotonic append, unfinished turns, bad records and damaged files (pure parsing)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.capture.gemini_cli import GeminiCliConnector
from memory_pipeline.capture.gemini_cli import records as gemini_records
from memory_pipeline.models.sources import resolve_roots, spec

DATA = Path(__file__).parent / "data" / "gemini_cli"
HOME = DATA / "gemini_home" / ".gemini"
REAL = DATA / "real" / "gemini-cli-pomodoro-timer.json"
INTERACTIVE = "3f9c1a2b-5d4e-4f60-8a71-92b3c4d5e6f7"
SUBAGENT = "8e7d6c5b-4a39-4281-b0c9-d8e7f6a5b4c3"
HEADLESS = "7d0e5f6a-1b2c-4d3e-9f40-a1b2c3d4e5f6"
WORKING = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"
LEGACY = "1a2b3c4d-5e6f-4071-8293-a4b5c6d7e8f9"
REAL_PROMPTS = [
    "add smooth transitions between states",
    "add a Pause/Resume feature",
    "Anything else we should add?",
    "Add a visual progress bar and long breaks suggestions",
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HOME, tmp_path / ".gemini"))


def chats(home: Path) -> Path:
    return home / "tmp" / "ledger" / "chats"


def session(home: Path, name: str) -> Path:
    return chats(home) / name


def only(c: GeminiCliConnector, path: Path):
    result = c.parse(path)
    assert len(result.tasks) == 1, result.issues
    return result.tasks[0]


def line(record: dict) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


def user(mid: str, text: str, at: str = "2026-10-12T08:10:00.000Z") -> dict:
    return {"id": mid, "timestamp": at, "type": "user", "content": [{"text": text}]}


def gemini(mid: str, text: str, at: str = "2026-10-12T08:10:09.000Z", **kw) -> dict:
    return {"id": mid, "timestamp": at, "type": "gemini", "content": text, "model": "m", **kw}


def by_id(c: GeminiCliConnector) -> dict:
    return {t.native_id: t for p in c.discover() for t in c.parse(p).tasks}


def test_roots_follow_gemini_cli_home():
    s = spec("gemini_cli")
    assert resolve_roots(s, {"GEMINI_CLI_HOME": "/srv/g"}, Path("/m")) == [Path("/srv/g/.gemini")]
    assert resolve_roots(s, {}, Path("/m")) == [Path("~/.gemini").expanduser()]


def test_discover_every_layout_and_skip_a_migrated_document(home: Path, tmp_path: Path):
    c = GeminiCliConnector([home, tmp_path / "missing"])
    names = sorted(p.name for p in c.discover())
    assert names == [
        f"{SUBAGENT}.jsonl",
        "session-2025-11-03T14-00-1a2b3c4d.json",
        "session-2026-10-12T08-05-3f9c1a2b.jsonl",
        "session-2026-10-12T09-30-7d0e5f6a.jsonl",
        "session-2026-10-13T10-00-5a6b7c8d.jsonl",
    ]
    # a resumed legacy session goes on in `<name>.jsonl`: only the log is read
    legacy = next(home.glob("tmp/3137*/chats/*.json"))
    shutil.copy(session(home, "session-2026-10-12T09-30-7d0e5f6a.jsonl"), f"{legacy}l")
    found = c.discover()
    assert legacy not in found and Path(f"{legacy}l") in found
    # a FIFO with a session's name is never opened, recorded once
    os.mkfifo(chats(home) / "session-2026-10-14T00-00-ffffffff.jsonl")
    c.discover()
    assert [i.reason for i in c.skipped_files] == ["not_a_regular_file"]
    assert GeminiCliConnector([tmp_path / "nothing"]).discover() == []


def test_the_real_legacy_session(tmp_path: Path):
    """The real 0.10-era document in a hash-named project directory beside its prompt log."""
    doc = json.loads(REAL.read_text())
    project = tmp_path / ".gemini" / "tmp" / doc["projectHash"]
    target = project / "chats" / "session-2025-10-21T20-04-0b23371a.json"
    target.parent.mkdir(parents=True)
    shutil.copy(REAL, target)
    first = doc["messages"][0]["content"]
    entries = [
        {
            "sessionId": doc["sessionId"],
            "messageId": i,
            "timestamp": "",
            "type": "user",
            "message": m,
        }
        for i, m in enumerate([first, *REAL_PROMPTS])
    ]
    (project / "logs.json").write_text(json.dumps(entries, indent=2))
    c = GeminiCliConnector([tmp_path / ".gemini"])
    assert c.discover() == [target]
    result = c.parse(target)
    assert result.issues == []
    (task,) = result.tasks
    assert task.native_id == "0b23371a-ce2e-4b1c-81a0-44af5d94d9ce"
    assert task.started_at.isoformat() == "2025-10-21T20:04:20.819000+00:00"
    assert (task.ownership.ownership, task.ownership.reason) == (
        "user_owned",
        "gemini_cli:typed-prompt",
    )
    assert [t.prompt for t in task.turns][1:] == REAL_PROMPTS
    assert task.turns[0].prompt.startswith("Build a simple Pomodoro timer web app")
    # the final answer of each turn, never the narration before a tool call
    assert task.turns[0].outcome.startswith("I've created the `index.html`, `style.css`")
    assert task.turns[4].outcome.startswith("My apologies, `resetTimer` was already correct.")
    assert all("Okay, I'll" not in t.outcome for t in task.turns)
    assert task.turns[4].native_message_ids == [
        "70534f4f-b711-46bd-a6fc-871cdfeff846",
        "fcb18f4e-9d36-40f5-8168-38611bcb2d6d",
    ]
    assert not task.unfinished_turn
    assert task.native_context["project_hash"] == doc["projectHash"]
    assert task.native_context["model"] == "gemini-2.5-pro"
    assert "cwd" not in task.native_context  # the hash is all that is known
    assert c.task_days(target) == {task.started_at.date()}


def test_project_root_from_the_registry_by_hash(home: Path):
    registry = home / "projects.json"
    data = json.loads(registry.read_text())
    data["projects"]["/home/dev/src/oldtool"] = "oldtool"
    registry.write_text(json.dumps(data))
    task = by_id(GeminiCliConnector([home]))[LEGACY]
    digest = hashlib.sha256(b"/home/dev/src/oldtool").hexdigest()
    assert task.native_context["project_hash"] == digest
    assert task.native_context["cwd"] == "/home/dev/src/oldtool"
    assert task.native_context["cwd_source"] == "gemini_cli:projects.json"


def test_jsonl_session_turns_title_and_context(home: Path):
    task = by_id(GeminiCliConnector([home]))[INTERACTIVE]
    # the SessionStart hook's context is no prompt; the tool response is part of the turn
    assert [t.prompt for t in task.turns] == [
        "Why does `ledger balance` print -0.00 for an empty account?",
        "Use Decimal then, and add a test for the empty account.",
    ]
    assert task.turns[0].outcome.startswith("The sum of an empty account is `-0.0`")
    assert task.turns[0].native_turn_id == "b0c1d2e3-0001-4000-8000-000000000001"
    assert task.title is not None and task.title.text == "Fix negative zero in ledger balance"
    assert task.title.source == "gemini_cli:summary"
    assert task.native_context["cwd"] == "/home/dev/src/ledger"
    assert task.native_context["cwd_source"] == "gemini_cli:.project_root"
    assert task.native_context["format"] == "jsonl"
    assert not task.unfinished_turn
    # headless: the prepended hook context is not part of the prompt (displayContent is)
    headless = by_id(GeminiCliConnector([home]))[HEADLESS]
    assert [t.prompt for t in headless.turns] == ["Run the tests and report failures only."]


def test_ownership_matrix(home: Path):
    tasks = by_id(GeminiCliConnector([home]))
    verdicts = {k: (tasks[k].ownership.ownership, tasks[k].ownership.reason) for k in tasks}
    assert verdicts == {
        INTERACTIVE: ("user_owned", "gemini_cli:typed-prompt"),
        WORKING: ("user_owned", "gemini_cli:typed-prompt"),
        HEADLESS: ("delegated", "gemini_cli:non-interactive"),
        SUBAGENT: ("delegated", "gemini_cli:subagent"),
        LEGACY: ("unknown", "gemini_cli:no-prompt-log"),
    }
    assert tasks[SUBAGENT].ownership.evidence == {
        "kind": "subagent",
        "parent_session_id": INTERACTIVE,
    }
    assert tasks[INTERACTIVE].ownership.evidence["typed_prompts"] == 2


def test_a_session_without_a_prompt_yet_is_not_called_headless(home: Path):
    """Gemini writes the metadata line when the session starts, before anything is typed."""
    path = chats(home) / "session-2026-10-14T09-00-0c0c0c0c.jsonl"
    meta = {"sessionId": "0c0c0c0c-1111-4222-8333-444455556666", "projectHash": "ab" * 32}
    path.write_text(line({**meta, "startTime": "2026-10-14T09:00:00.000Z", "kind": "main"}))
    task = only(GeminiCliConnector([home]), path)
    assert (task.ownership.ownership, task.ownership.reason) == ("unknown", "gemini_cli:no-prompt")
    assert task.turns == [] and not task.unfinished_turn


def test_delegation_evidence_wins_over_a_typed_prompt(home: Path):
    logs = home / "tmp" / "ledger" / "logs.json"
    entries = json.loads(logs.read_text())
    for sid, text in (
        (SUBAGENT, "Find every place that formats money in the ledger package."),
        (HEADLESS, "Run the tests and report failures only."),
    ):
        entries.append(
            {"sessionId": sid, "messageId": 0, "timestamp": "", "type": "user", "message": text}
        )
    logs.write_text(json.dumps(entries))
    tasks = by_id(GeminiCliConnector([home]))
    assert tasks[SUBAGENT].ownership.reason == "gemini_cli:subagent"
    # the headless session's prompt now shows as typed (a resumed interactive session)
    assert tasks[HEADLESS].ownership.reason == "gemini_cli:typed-prompt"


def test_a_damaged_prompt_log_is_unknown_not_a_guess(home: Path):
    (home / "tmp" / "ledger" / "logs.json").write_text('[{"sessionId": "3f9c')
    tasks = by_id(GeminiCliConnector([home]))
    assert tasks[INTERACTIVE].ownership.reason == "gemini_cli:no-prompt-log"
    assert tasks[SUBAGENT].ownership.reason == "gemini_cli:subagent"


def test_append_to_a_log_keeps_earlier_turns(home: Path):
    c = GeminiCliConnector([home])
    path = session(home, "session-2026-10-12T08-05-3f9c1a2b.jsonl")
    before = only(c, path).turns
    with path.open("a") as f:
        f.write(line({"$rewindTo": "b0c1d2e3-0005-4000-8000-000000000005"}))
        f.write(line(user("n-1", "Also handle the CSV export.")))
        f.write(line(gemini("n-2", "The CSV export now uses `money()` too.")))
        f.write(line({"$set": {"lastUpdated": "2026-10-12T08:10:09.001Z"}}))
    task = only(c, path)
    # a rewind takes back no answered turn: the store is monotonic, so is the parse
    assert task.turns[:2] == before
    assert [t.prompt for t in task.turns[2:]] == ["Also handle the CSV export."]
    assert task.native_context["rewinds"] == 1


def test_a_legacy_document_rewritten_with_more_messages_appends(tmp_path: Path):
    project = tmp_path / ".gemini" / "tmp" / "pomodoro" / "chats"
    project.mkdir(parents=True)
    path = project / "session-2025-10-21T20-04-0b23371a.json"
    doc = json.loads(REAL.read_text())
    doc["messages"] = doc["messages"][:6]  # the document as it was after two turns
    path.write_text(json.dumps(doc, indent=2))
    c = GeminiCliConnector([tmp_path / ".gemini"])
    early = only(c, path)
    assert len(early.turns) == 2 and not early.unfinished_turn
    path.write_text(json.dumps(json.loads(REAL.read_text()), indent=2))
    full = only(c, path)
    assert full.turns[:2] == early.turns and len(full.turns) == 5


def test_an_unfinished_turn_waits_then_completes(home: Path):
    c = GeminiCliConnector([home])
    path = session(home, "session-2026-10-13T10-00-5a6b7c8d.jsonl")
    working = only(c, path)
    assert working.turns == [] and working.unfinished_turn  # it ends on a tool call
    with path.open("a") as f:
        f.write(
            line(
                {
                    "id": "tr",
                    "timestamp": "2026-10-13T10:00:10.000Z",
                    "type": "user",
                    "content": [
                        {"functionResponse": {"id": "grep-1", "name": "g", "response": {}}}
                    ],
                }
            )
        )
    assert only(c, path).unfinished_turn and only(c, path).turns == []
    with path.open("a") as f:
        f.write(line(gemini("done", "Renamed in 3 files.", at="2026-10-13T10:00:20.000Z")))
    done = only(c, path)
    assert [t.outcome for t in done.turns] == ["Renamed in 3 files."]
    assert not done.unfinished_turn
    # a last line still being written: what it holds may belong to the answered turn, so
    # that turn waits with it; the line is left for the next look
    with path.open("a") as f:
        f.write(line(user("u2", "And the docs?"))[:30])
    result = c.parse(path)
    assert result.tasks[0].unfinished_turn and result.tasks[0].turns == []
    assert [i.reason for i in result.issues] == ["truncated_line"]
    with path.open("a") as f:
        f.write(line(user("u2", "And the docs?"))[30:])
    again = only(c, path)
    assert again.turns == done.turns and again.unfinished_turn


def test_injected_prompts_and_a_compression_replay_are_no_turns(home: Path):
    c = GeminiCliConnector([home])
    path = session(home, "session-2026-10-12T08-05-3f9c1a2b.jsonl")
    before = only(c, path).turns
    with path.open("a") as f:
        f.write(
            line(
                user(
                    "c-1",
                    "<state_snapshot>\n<overall_goal>fix -0.00</overall_goal>\n</state_snapshot>",
                )
            )
        )
        f.write(line(gemini("c-2", "Got it. Thanks for the additional context!")))
        for mid, turn in (("r", before[1]),):  # the kept history, recorded again
            f.write(line(user(f"{mid}-1", turn.prompt)))
            f.write(line(gemini(f"{mid}-2", turn.outcome)))
        f.write(line({"$set": {"messages": [user("x", "synchronised")]}}))
        f.write(line(user("p-0", "Check the report module too.")))
        f.write(line(gemini("p-1", "report.py formats cells itself.")))
        f.write(line(user("p-2", "Please continue.")))  # the next-speaker check
        f.write(line(gemini("p-3", "Fixed: `_cell` calls `money()` now.")))
    task = only(c, path)
    assert task.turns[:2] == before
    assert [(t.prompt, t.outcome) for t in task.turns[2:]] == [
        ("Check the report module too.", "Fixed: `_cell` calls `money()` now.")
    ]
    assert task.native_context["replayed_turns"] == 1
    assert task.native_context["checkpoints"] == 1


def test_referenced_file_contents_are_cut_from_a_prompt(home: Path):
    c = GeminiCliConnector([home])
    path = session(home, "session-2026-10-12T08-05-3f9c1a2b.jsonl")
    parts = [
        {"text": "Explain @ledger/format.py please"},
        {"text": "\n--- Content from referenced files ---"},
        {"text": "\nContent from @ledger/format.py:\n"},
        {"text": "def money(x): return f'{x:.2f}'"},
        {"text": "\n--- End of content ---"},
    ]
    with path.open("a") as f:
        f.write(
            line(
                {
                    "id": "at-1",
                    "timestamp": "2026-10-12T08:11:00.000Z",
                    "type": "user",
                    "content": parts,
                }
            )
        )
        f.write(line(gemini("at-2", "It formats with two decimals.")))
    task = only(c, path)
    assert (task.turns[-1].prompt, task.turns[-1].outcome) == (
        "Explain @ledger/format.py please",
        "It formats with two decimals.",
    )


def test_bad_records_are_isolated(home: Path):
    c = GeminiCliConnector([home])
    path = session(home, "session-2026-10-12T08-05-3f9c1a2b.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    # damage the second prompt's line: its turn is dropped, the first one stays whole
    index = next(i for i, text in enumerate(lines) if "Use Decimal" in text)
    lines[index] = '{"id":"b0c1d2e3-0005-4000-8000-0000\x00garbage\n'
    lines.insert(1, line({"id": 7, "type": "user", "content": "no string id"}))
    lines.insert(2, line({"what": "is this"}))
    lines.insert(3, line({"id": "odd", "type": "thought", "content": "a future type"}))
    path.write_text("".join(lines))
    result = c.parse(path)
    (task,) = result.tasks
    assert [t.prompt for t in task.turns] == [
        "Why does `ledger balance` print -0.00 for an empty account?"
    ]
    reasons = sorted((i.reason, i.line) for i in result.issues)
    assert reasons == [
        ("bad_record", 2),
        ("invalid_json", index + 4),
        ("unknown_record", 3),
        ("unknown_record", 4),
    ]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty_file"),
        (b'{"sessionId": "x", "messages": [{"id": "a", "ty', "invalid_json"),
        (b"\x00\x01\x02", "binary"),
        (b"[1, 2, 3]", "not_a_transcript"),
        (b"[" * 100_000 + b"]" * 100_000, "too_deep"),
    ],
)
def test_a_damaged_document_is_recorded_never_raised(tmp_path: Path, content: bytes, reason: str):
    path = tmp_path / "session-2026-01-01T00-00-deadbeef.json"
    path.write_bytes(content)
    result = GeminiCliConnector([tmp_path]).parse(path)
    assert result.tasks == [] and [i.reason for i in result.issues] == [reason]


def test_a_document_changed_while_read_is_no_task(tmp_path: Path, monkeypatch):
    path = tmp_path / "session-2025-10-21T20-04-0b23371a.json"
    shutil.copy(REAL, path)
    real_stat = os.stat
    calls = {"n": 0}

    def stat(p, *a, **kw):
        result = real_stat(p, *a, **kw)
        if Path(p) == path:
            calls["n"] += 1
            if calls["n"] == 2:  # the file grew between the two looks
                os.utime(path, ns=(result.st_atime_ns, result.st_mtime_ns + 1_000))
                return real_stat(p, *a, **kw)
        return result

    monkeypatch.setattr(gemini_records.os, "stat", stat)
    result = GeminiCliConnector([tmp_path]).parse(path)
    assert result.tasks == [] and [i.reason for i in result.issues] == ["changed_while_reading"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=0, max_value=4000))
def test_any_prefix_of_a_log_parses_to_a_prefix_of_its_turns(tmp_path: Path, cut: int):
    source = HOME / "tmp" / "ledger" / "chats" / "session-2026-10-12T08-05-3f9c1a2b.jsonl"
    data = source.read_bytes()
    path = tmp_path / "p" / "chats" / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data[: min(cut, len(data))])
    full = GeminiCliConnector([tmp_path]).parse(source).tasks[0].turns
    result = GeminiCliConnector([tmp_path]).parse(path)
    for task in result.tasks:
        assert task.turns == full[: len(task.turns)]
