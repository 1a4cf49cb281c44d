"""Capture never corrupts or silently drops a turn (issue 31, must-have 5).

* A damaged line (here: cut inside a multi-byte UTF-8 character, with lines after it) never joins
  text to a neighbouring turn, in the chat import and in an older Codex rollout.
* Two files that claim one task are a recorded conflict (`task_conflict`), never a silent merge;
  a second run records nothing new and changes no row.
* MEMORY_EXCLUDE matches every cwd a task reports, not only the first.
* Special files (FIFO, symlink to a device, a directory, a socket, a symlink out of the source
  tree) are never opened and are recorded once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.capture.changes import scan_changes
from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import SourceRoots, demo_roots

ALL = (date(2026, 1, 1), date(2027, 1, 1))
START = datetime(2026, 9, 21, 10, 0, tzinfo=UTC)
DEMO = demo_roots()


def _roots(tmp_path: Path) -> SourceRoots:
    return SourceRoots(
        codex_home=tmp_path / "codex",
        claude_home=tmp_path / "claude",
        import_dir=tmp_path / "imports",
        kind="real",
        quiet_minutes=0,
    )


def _chat_line(task: str, role: str, text: str, minute: int) -> bytes:
    at = (START + timedelta(minutes=minute)).isoformat()
    line = {"task_id": task, "role": role, "text": text, "timestamp": at}
    return json.dumps(line, ensure_ascii=False).encode()


def _cut_inside_multibyte(line: bytes) -> bytes:
    """`line` cut after the first byte of its first multi-byte character."""
    at = next(i for i, b in enumerate(line) if b >= 0xC0)
    return line[: at + 1]


def _turns(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    return conn.execute(
        "SELECT t.native_id, a.prompt, a.outcome FROM agent_turns a"
        " JOIN captured_tasks t ON t.id = a.task_id ORDER BY t.native_id, a.ordinal"
    ).fetchall()


def _skips(conn: psycopg.Connection) -> list[tuple[str, str, int, str]]:
    return conn.execute(
        "SELECT kind, reason, line, path FROM capture_skips ORDER BY kind, reason, path, line"
    ).fetchall()


def _table_hashes(conn: psycopg.Connection) -> dict[str, str]:
    """A content hash of every capture table (run records excluded)."""
    out = {}
    for table in ("captured_tasks", "agent_turns", "capture_skips", "source_files"):
        rows = conn.execute(f"SELECT to_jsonb(x)::text FROM {table} x ORDER BY 1").fetchall()
        out[table] = hashlib.sha256("\n".join(r[0] for r in rows).encode()).hexdigest()
    return out


# -- 1. a damaged line never joins text to a neighbouring turn -----------------------------------


def test_a_line_cut_inside_a_character_never_glues_the_next_answer_to_the_previous_turn(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    lines = [
        _chat_line("c1", "user", "first question", 0),
        _chat_line("c1", "assistant", "first answer", 1),
        _cut_inside_multibyte(_chat_line("c1", "user", "second question über", 2)),
        _chat_line("c1", "assistant", "second answer", 3),
        _chat_line("c1", "user", "third question", 4),
        _chat_line("c1", "assistant", "third answer", 5),
    ]
    (tmp_path / "imports").mkdir()
    (tmp_path / "imports" / "export.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    assert _turns(conn) == [
        ("c1", "first question", "first answer"),
        ("c1", "third question", "third answer"),
    ]
    skips = {(reason, line) for _kind, reason, line, _path in _skips(conn)}
    assert ("binary", 3) in skips or ("invalid_json", 3) in skips, skips
    assert ("outcome_without_prompt", 4) in skips, skips  # the answer is recorded, not glued


def test_a_lost_prompt_line_never_glues_answers_in_an_older_codex_rollout(tmp_path: Path) -> None:
    """Older rollouts have no task_started: each user_message opens a turn. A lost user_message
    must not hand its answer to the turn before it."""
    thread = "01a0c2e9-bd9a-7629-b996-e3bf2128d61f"

    def event(minute: int, payload: dict) -> bytes:
        at = (START + timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")
        obj = {"timestamp": at, "type": "event_msg", "payload": payload}
        return json.dumps(obj, ensure_ascii=False).encode()

    meta = {
        "timestamp": START.isoformat().replace("+00:00", "Z"),
        "type": "session_meta",
        "payload": {"id": thread, "timestamp": START.isoformat(), "cwd": "/home/u/p"},
    }
    lines = [
        json.dumps(meta).encode(),
        event(0, {"type": "user_message", "message": "first question"}),
        event(1, {"type": "agent_message", "message": "first answer"}),
        _cut_inside_multibyte(event(2, {"type": "user_message", "message": "zweite Frage ü"})),
        event(3, {"type": "agent_message", "message": "second answer"}),
        event(4, {"type": "user_message", "message": "third question"}),
        event(5, {"type": "agent_message", "message": "third answer"}),
    ]
    path = (
        tmp_path / "sessions" / "2026" / "09" / "21" / f"rollout-2026-09-21T10-00-00-{thread}.jsonl"
    )
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = CodexConnector(tmp_path).parse(path)
    (task,) = result.tasks
    got = [(t.prompt, t.outcome) for t in task.turns]
    assert ("first question", "second answer") not in got
    assert got == [("first question", "first answer"), ("third question", "third answer")]
    assert 5 in {i.line for i in result.issues if i.reason == "outcome_without_prompt"}


_WORDS = st.text(alphabet="abcdéüßø漢字🙂 ", min_size=1, max_size=12).filter(str.strip)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    turns=st.lists(st.tuples(_WORDS, _WORDS), min_size=2, max_size=6),
    damaged=st.data(),
)
def test_chat_import_turns_hold_only_their_own_lines_whichever_line_is_cut(
    tmp_path_factory: pytest.TempPathFactory, turns: list[tuple[str, str]], damaged: st.DataObject
) -> None:
    """Property: cut any one line inside a multi-byte character (or at any byte); every turn
    captured still consists of the messages of exactly one original turn."""
    lines, owner = [], {}
    for n, (prompt, answer) in enumerate(turns):
        for role, text in (("user", f"p{n} {prompt}"), ("assistant", f"a{n} {answer}")):
            owner[text] = n
            lines.append(_chat_line("c1", role, text, 2 * n + (role == "assistant")))
    at = damaged.draw(st.integers(0, len(lines) - 2), label="line")  # lines follow it
    cut = damaged.draw(st.integers(1, len(lines[at]) - 1), label="byte")
    lines[at] = lines[at][:cut]
    folder = tmp_path_factory.mktemp("imports")
    (folder / "export.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    chat = ChatImportConnector(folder, quiet_after=timedelta(0))
    result = chat.parse(folder / "export.jsonl")
    for task in result.tasks:
        for turn in task.turns:
            parts = [*turn.prompt.split("\n\n"), *filter(None, turn.outcome.split("\n\n"))]
            owners = {owner.get(p) for p in parts}
            assert len(owners) == 1 and None not in owners, (turn, owners)


# -- 2. two files that claim one task ------------------------------------------------------------


def test_two_chat_files_with_one_task_id_are_kept_apart_and_recorded(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    imports = tmp_path / "imports"
    imports.mkdir()
    (imports / "a.jsonl").write_bytes(
        b"\n".join(
            [
                _chat_line("dup", "user", "alpha one", 0),
                _chat_line("dup", "assistant", "alpha answer one", 1),
                _chat_line("dup", "user", "alpha two", 2),
                _chat_line("dup", "assistant", "alpha answer two", 3),
            ]
        )
        + b"\n"
    )
    (imports / "b.jsonl").write_bytes(
        b"\n".join(
            [
                _chat_line("dup", "user", "beta one", 10),
                _chat_line("dup", "assistant", "beta answer one", 11),
                _chat_line("dup", "user", "beta two", 12),
                _chat_line("dup", "assistant", "beta answer two", 13),
            ]
        )
        + b"\n"
    )
    capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    turns = _turns(conn)
    assert len(turns) == 4, turns  # nothing dropped
    by_task: dict[str, set[str]] = {}
    for native_id, prompt, _ in turns:
        by_task.setdefault(native_id, set()).add(prompt.split()[0])
    assert sorted(map(sorted, by_task.values())) == [["alpha"], ["beta"]]  # never merged
    conflicts = conn.execute(
        "SELECT detail FROM capture_skips WHERE reason = 'task_conflict'"
    ).fetchall()
    assert len(conflicts) == 1 and "a.jsonl" in conflicts[0][0] and "b.jsonl" in conflicts[0][0]
    # Stable: a second run (and a sensor look) records nothing new and changes no row.
    before = _table_hashes(conn)
    conn.execute("UPDATE source_files SET captured_size = NULL")  # force a full re-read
    capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    after = _table_hashes(conn)
    assert {k: v for k, v in after.items() if k != "source_files"} == {
        k: v for k, v in before.items() if k != "source_files"
    }


def test_a_codex_rollout_in_sessions_and_archived_sessions_is_one_task_and_a_recorded_conflict(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    (src,) = DEMO.home("codex").glob("sessions/**/rollout-*01a0d21f*.jsonl")
    home = tmp_path / "codex"
    live = home / src.relative_to(DEMO.home("codex"))
    live.parent.mkdir(parents=True)
    shutil.copyfile(src, live)
    archived = home / "archived_sessions" / src.name
    archived.parent.mkdir(parents=True)
    shutil.copyfile(src, archived)
    capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    assert conn.execute("SELECT count(*) FROM captured_tasks").fetchone()[0] == 1
    n_turns = conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0]
    assert n_turns == len(CodexConnector(home).parse(live).tasks[0].turns)
    (detail,) = conn.execute(
        "SELECT detail FROM capture_skips WHERE reason = 'task_conflict'"
    ).fetchone()  # type: ignore[misc]
    assert "archived_sessions" in detail and "sessions/2026" in detail
    before = _table_hashes(conn)
    conn.execute("UPDATE source_files SET captured_size = NULL")
    capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    after = _table_hashes(conn)
    assert {k: v for k, v in after.items() if k != "source_files"} == {
        k: v for k, v in before.items() if k != "source_files"
    }


# -- 3. exclusion rules match every cwd a task reports -------------------------------------------


def _moved_rollout(home: Path, moved_to: str) -> Path:
    """The demo rollout 01a0d21f (cwd /home/mara/work/ledgerline) whose second turn's
    turn_context moves to `moved_to`."""
    (src,) = DEMO.home("codex").glob("sessions/**/rollout-*01a0d21f*.jsonl")
    dest = home / src.relative_to(DEMO.home("codex"))
    dest.parent.mkdir(parents=True, exist_ok=True)
    out, contexts = [], 0
    for line in src.read_bytes().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "turn_context":
            contexts += 1
            if contexts >= 2:
                obj["payload"]["cwd"] = moved_to
                line = json.dumps(obj).encode()
        out.append(line)
    dest.write_bytes(b"\n".join(out) + b"\n")
    return dest


@pytest.mark.parametrize("rule", ["cwd:/home/mara/clients/*", "repo:acme-api"])
def test_an_exclusion_rule_matches_a_cwd_a_codex_task_moved_to(
    conn: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    _moved_rollout(tmp_path / "codex", "/home/mara/clients/acme-api")
    monkeypatch.setenv("MEMORY_EXCLUDE", rule)
    report = capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    assert report.skipped_tasks == {"excluded": 1}
    assert conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0] == 0


def test_a_claude_code_session_that_moves_cwd_is_excluded_by_the_later_cwd(
    conn: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "-home-mara-work-ledgerline/dc2e432c-a299-4865-9a0d-41d4de54ec11.jsonl"
    src = DEMO.home("claude_code") / "projects" / name
    dest = tmp_path / "claude" / "projects" / name
    dest.parent.mkdir(parents=True)
    lines = src.read_bytes().splitlines()
    half = len(lines) // 2
    out = []
    for i, line in enumerate(lines):
        obj = json.loads(line)
        if i >= half and "cwd" in obj:
            obj["cwd"] = "/home/mara/clients/acme-api"
            line = json.dumps(obj).encode()
        out.append(line)
    dest.write_bytes(b"\n".join(out) + b"\n")
    monkeypatch.setenv("MEMORY_EXCLUDE", "cwd:/home/mara/clients/*")
    report = capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    assert report.skipped_tasks.get("excluded") == 1, report.skipped_tasks
    assert conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0] == 0


# -- 4. special files ----------------------------------------------------------------------------


@contextmanager
def _no_hang(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging the suite) if something blocks, e.g. opening a FIFO."""

    def expired(_signum, _frame):  # type: ignore[no-untyped-def]
        raise AssertionError(f"blocked for {seconds} s (a FIFO was opened for reading?)")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _special_files(tmp_path: Path) -> tuple[dict[str, str], socket.socket]:
    imports = tmp_path / "imports"
    imports.mkdir()
    good = _chat_line("ok", "user", "hello", 0) + b"\n" + _chat_line("ok", "assistant", "hi", 1)
    (imports / "good.jsonl").write_bytes(good + b"\n")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(_chat_line("out", "user", "q", 0) + b"\n")
    outside2 = tmp_path / "elsewhere2.jsonl"
    outside2.write_bytes(good + b"\n")
    os.mkfifo(imports / "fifo.jsonl")
    (imports / "zero.jsonl").symlink_to("/dev/zero")
    (imports / "x.jsonl").mkdir()
    (imports / "out.jsonl").symlink_to(outside2)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(imports / "sock.jsonl"))
    codex = tmp_path / "codex" / "sessions" / "2026" / "09" / "21"
    codex.mkdir(parents=True)
    os.mkfifo(codex / "rollout-2026-09-21T10-00-00-01a0c2e9-bd9a-7629-b996-e3bf2128d61f.jsonl")
    claude = tmp_path / "claude" / "projects" / "-home-x"
    claude.mkdir(parents=True)
    os.mkfifo(claude / "a1b2.jsonl")
    expected = {
        "fifo.jsonl": "not_a_regular_file",
        "zero.jsonl": "symlink_outside_source",
        "x.jsonl": "not_a_regular_file",
        "sock.jsonl": "not_a_regular_file",
        "out.jsonl": "symlink_outside_source",
        "rollout-2026-09-21T10-00-00-01a0c2e9-bd9a-7629-b996-e3bf2128d61f.jsonl": (
            "not_a_regular_file"
        ),
        "a1b2.jsonl": "not_a_regular_file",
    }
    return expected, sock


def _file_skips(conn: psycopg.Connection) -> dict[str, str]:
    rows = conn.execute("SELECT path, reason FROM capture_skips WHERE kind = 'file'").fetchall()
    return {Path(path).name: reason for path, reason in rows}


def test_special_files_are_never_opened_and_recorded_once(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    expected, sock = _special_files(tmp_path)
    try:
        with _no_hang(60):
            capture_window(conn, _roots(tmp_path).connectors(), *ALL)
            assert _file_skips(conn) == expected
            assert [r[0] for r in _turns(conn)] == ["ok"]  # the good file beside them
            before = _table_hashes(conn)
            again = capture_window(conn, _roots(tmp_path).connectors(), *ALL)
            look = scan_changes(conn, _roots(tmp_path).connectors())
            assert _table_hashes(conn)["capture_skips"] == before["capture_skips"]
            # reported once too: not in the next run's metadata, not in the sensor's log
            assert not {"not_a_regular_file", "symlink_outside_source"} & set(again.file_issues)
            assert not look.failures
    finally:
        sock.close()


def test_the_sensor_look_records_special_files_without_opening_them(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    expected, sock = _special_files(tmp_path)
    try:
        with _no_hang(60):
            scan_changes(conn, _roots(tmp_path).connectors())
            assert _file_skips(conn) == expected
    finally:
        sock.close()


def test_a_task_that_moves_into_an_excluded_cwd_later_stops_capturing_and_is_recorded(
    conn: psycopg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turns stored before the move stay (stored turns never change); nothing more is stored."""
    monkeypatch.setenv("MEMORY_EXCLUDE", "cwd:/home/mara/clients/*")
    (src,) = DEMO.home("codex").glob("sessions/**/rollout-*01a0d21f*.jsonl")
    lines = src.read_bytes().splitlines()
    second = next(i for i, line in enumerate(lines) if i > 1 and b'"type":"task_started"' in line)
    dest = tmp_path / "codex" / src.relative_to(DEMO.home("codex"))
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"\n".join(lines[:second]) + b"\n")  # the first turn, in ledgerline
    capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    assert conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0] == 1
    _moved_rollout(tmp_path / "codex", "/home/mara/clients/acme-api")  # the rest, moved
    report = capture_window(conn, _roots(tmp_path).connectors(), *ALL)
    assert report.skipped_tasks == {"excluded": 1}
    assert conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0] == 1
    assert conn.execute(
        "SELECT evidence->>'rule' FROM capture_skips WHERE reason = 'excluded'"
    ).fetchall() == [("cwd:/home/mara/clients/*",)]


def test_the_reader_refuses_a_fifo_put_in_a_files_place_without_blocking(tmp_path: Path) -> None:
    """A file replaced by a FIFO after discovery looked: opened non-blocking, refused."""
    from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl

    fifo = tmp_path / "late.jsonl"
    os.mkfifo(fifo)
    read = JsonlRead(path=fifo)
    with _no_hang(20):
        assert list(iter_jsonl(fifo, read)) == []
    assert [i.reason for i in read.issues] == ["not_a_regular_file"]


def test_a_claude_code_line_cut_inside_a_character_never_joins_two_turns(tmp_path: Path) -> None:
    """Claude Code breaks a turn where a record of its chain is lost: cut each prompt line in
    turn inside a multi-byte character; no turn holds the text of two turns of the original."""
    from memory_pipeline.capture.claude_code import ClaudeCodeConnector
    from memory_pipeline_tests.support.own_turns import own_turn_violations

    name = "-home-mara-work-ledgerline/dc2e432c-a299-4865-9a0d-41d4de54ec11.jsonl"
    lines = (DEMO.home("claude_code") / "projects" / name).read_bytes().splitlines()
    later = datetime(2099, 1, 1, tzinfo=UTC)

    def parse(data: list[bytes], home: Path):  # type: ignore[no-untyped-def]
        path = home / "projects" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(data) + b"\n")
        return ClaudeCodeConnector(home, now=lambda: later).parse(path)

    (task,) = parse(lines, tmp_path / "original").tasks
    assert len(task.turns) >= 2
    pieces = [(t.ordinal, text) for t in task.turns for text in (t.prompt, t.outcome)]
    prompts = [
        i
        for i, line in enumerate(lines)
        if json.loads(line).get("type") == "user"
        and any(t.prompt[:30].encode() in line for t in task.turns[1:])
    ]
    assert prompts
    for n, at in enumerate(prompts):
        damaged = list(lines)
        text = json.loads(damaged[at])
        text["message"]["content"] = "ü " + str(text["message"]["content"])
        raw = json.dumps(text, ensure_ascii=False).encode()
        damaged[at] = _cut_inside_multibyte(raw)
        result = parse(damaged, tmp_path / f"cut{n}")
        got = [(t.prompt, t.outcome) for t in result.tasks[0].turns] if result.tasks else []
        assert not own_turn_violations(pieces, got), (at, got)
        assert any(i.line == at + 1 for i in result.issues), result.issues


@pytest.mark.parametrize(
    "damage",
    [
        "two lines lost",  # a whole exchange: the answer after them is nobody's
        "a damaged task_id",  # the damaged line names no conversation of the file
    ],
)
def test_no_turn_is_glued_across_two_lost_lines_or_a_damaged_task_id(
    tmp_path: Path, damage: str
) -> None:
    lines = [
        _chat_line("c1", "user", "first question", 0),
        _chat_line("c1", "assistant", "first answer", 1),
        _chat_line("c1", "user", "second question", 2),
        _chat_line("c1", "assistant", "second answer", 3),
        _chat_line("c1", "user", "third question", 4),
        _chat_line("c1", "assistant", "third answer", 5),
    ]
    if damage == "two lines lost":
        lines[1] = lines[1][:-3]  # first answer and second question both cut
        lines[2] = lines[2][:-3]
    else:
        # not UTF-8, and its task_id damaged into one no conversation has
        lines[1] = lines[1].replace(b'"c1"', b'"cx"').replace(b"first answer", b"first \xff")
    (tmp_path / "export.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    chat = ChatImportConnector(tmp_path, quiet_after=timedelta(0))
    result = chat.parse(tmp_path / "export.jsonl")
    got = [(t.prompt, t.outcome) for task in result.tasks for t in task.turns]
    assert got == [("third question", "third answer")] or got == [
        ("second question", "second answer"),
        ("third question", "third answer"),
    ], got
    assert ("first question", "second answer") not in got
