"""The chat import streams (issue 12): bounded memory on a long file, same turns as before.

A conversation is handed on at its last line, a long one in batches of about
`CHAT_IMPORT_BATCH_CHARS` characters (the tests lower it, so a small file has many batches), and
the store aligns each batch by its ordinals. What must not change: the turns stored (also when
re-run, appended to, or ending on an unanswered prompt), and the parser must not hold the file.
"""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline import tuning
from memory_pipeline.capture import jsonl
from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.jsonl import JsonlRead

T0 = datetime(2026, 3, 1, tzinfo=UTC)
WINDOW = (date(2026, 1, 1), date(2027, 1, 1))
SENTENCE = "The migration keeps the old index until the new one is verified and swapped in. "


def _line(task: str, role: str, text: str, at: datetime, **extra: str) -> str:
    obj = {"task_id": task, "role": role, "text": text, "timestamp": at.isoformat(), **extra}
    return json.dumps(obj) + "\n"


def _long_conversation(path: Path, turns: int, task: str = "long", start: int = 0) -> None:
    with path.open("a") as f:
        for i in range(start, start + turns):
            at = T0 + timedelta(minutes=2 * i)
            f.write(_line(task, "user", f"question {i}: {SENTENCE * 2}", at))
            f.write(_line(task, "assistant", f"answer {i}: {SENTENCE * 5}", at))


def _stored(conn) -> list[tuple]:  # type: ignore[no-untyped-def]
    return conn.execute(
        "SELECT t.native_id, a.ordinal, a.prompt, a.outcome, a.unanswered, a.continues_ordinal"
        " FROM agent_turns a JOIN captured_tasks t ON t.id = a.task_id"
        " ORDER BY t.native_id, a.ordinal"
    ).fetchall()


def _capture(conn, folder: Path, now: datetime | None = None):  # type: ignore[no-untyped-def]
    connector = ChatImportConnector(
        folder, quiet_after=timedelta(minutes=30), now=(lambda: now) if now else None
    )
    return capture_window(conn, [connector], *WINDOW)


def test_a_long_conversation_is_handed_on_in_bounded_batches(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tuning, "CHAT_IMPORT_BATCH_CHARS", 50_000)
    path = tmp_path / "long.jsonl"
    _long_conversation(path, 2_000)  # about 1.4 MB
    read = JsonlRead(path=path)
    batches = list(ChatImportConnector(tmp_path).stream(path, read))
    assert len(batches) > 10 and all(b.partial for b in batches)
    ordinals = [t.ordinal for b in batches for t in b.turns]
    assert ordinals == list(range(2_000))
    assert all(sum(len(t.prompt) + len(t.outcome) for t in b.turns) < 52_000 for b in batches)


def _traced_peak(folder: Path, turns: int) -> int:
    path = folder / f"long-{turns}.jsonl"
    _long_conversation(path, turns)
    tracemalloc.start()
    try:
        seen = 0
        for task in ChatImportConnector(folder).stream(path, JsonlRead(path=path)):
            seen += len(task.turns)
            del task
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == turns
    return peak


def test_the_parser_holds_one_batch_not_the_file(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Peak memory traced while streaming does not grow with the file: four times the turns
    (0.8 MB against 3 MB) cost about the same (a read chunk and one batch)."""
    monkeypatch.setattr(tuning, "CHAT_IMPORT_BATCH_CHARS", 100_000)
    monkeypatch.setattr(jsonl, "_CHUNK", 64 * 1024)  # both files are read in many chunks
    small = _traced_peak(tmp_path, 1_000)
    large = _traced_peak(tmp_path, 4_000)
    assert large < small * 1.3, f"peak {large:,} bytes for 4,000 turns, {small:,} for 1,000"


def test_a_finished_conversation_is_handed_on_before_the_file_ends(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "two.jsonl"
    path.write_text(
        _line("a", "user", "q", T0)
        + _line("a", "assistant", "a", T0)
        + _line("b", "user", "q", T0)
        + _line("b", "assistant", "a", T0)
    )
    stream = ChatImportConnector(tmp_path).stream(path, JsonlRead(path=path))
    first = next(stream)
    assert first.native_id == "a" and not first.partial
    assert [t.native_id for t in stream] == ["b"]


def test_batched_capture_stores_what_a_whole_capture_stores(  # type: ignore[no-untyped-def]
    conn, db_url, tmp_path, monkeypatch
) -> None:
    """Against the same file captured in one piece; then idempotent, appends, unanswered."""
    folder = tmp_path / "imports"
    folder.mkdir()
    path = folder / "long.jsonl"
    _long_conversation(path, 600)
    with path.open("a") as f:
        f.write(_line("short", "user", "hello", T0))
        f.write(_line("short", "assistant", "hi", T0))
    _capture(conn, folder)
    whole = _stored(conn)
    conn.execute("TRUNCATE captured_tasks, source_files CASCADE")

    monkeypatch.setattr(tuning, "CHAT_IMPORT_BATCH_CHARS", 20_000)
    report = _capture(conn, folder)
    assert _stored(conn) == whole and len(whole) == 601
    assert report.tasks_seen == 2

    conn.execute("UPDATE source_files SET captured_size = NULL")  # read it again
    again = _capture(conn, folder)
    assert _stored(conn) == whole and again.turns_appended == 0 and again.drift_ignored == 0

    _long_conversation(path, 50, start=600)  # appended turns are picked up once
    with path.open("a") as f:  # and a last prompt nobody answers, quiet long ago
        f.write(_line("long", "user", "anyone there?", T0 + timedelta(days=3)))
    _capture(conn, folder)
    rows = [r for r in _stored(conn) if r[0] == "long"]
    assert [r[1] for r in rows] == list(range(651))
    assert rows[-1][2:5] == ("anyone there?", "", True)
    with path.open("a") as f:
        f.write(_line("long", "assistant", "yes", T0 + timedelta(days=3, minutes=1)))
    _capture(conn, folder)
    rows = [r for r in _stored(conn) if r[0] == "long"]
    assert rows[-1][2:6] == ("anyone there?", "yes", False, 650)
    assert len(rows) == 652
    conn.execute("UPDATE source_files SET captured_size = NULL")
    assert _capture(conn, folder).turns_appended == 0


messages = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["user", "assistant", "human", None]),
        st.sampled_from([None, "Mara", "Jonas"]),
        st.text(alphabet="xyz ", min_size=1, max_size=30).filter(str.strip),
        st.integers(0, 10_000),
    ),
    max_size=60,
)


@settings(
    deadline=None, max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(messages, st.integers(1, 200))
def test_batching_never_changes_the_turns(tmp_path_factory, msgs, batch) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("batch")
    path = folder / "chat.jsonl"
    with path.open("w") as f:
        for task, role, speaker, text, minute in msgs:
            obj = {"task_id": task, "text": text, "timestamp": (T0 + timedelta(minutes=minute))}
            obj["timestamp"] = obj["timestamp"].isoformat()
            if role:
                obj["role"] = role
            if speaker:
                obj["speaker"] = speaker
            f.write(json.dumps(obj) + "\n")
    connector = ChatImportConnector(folder, quiet_after=timedelta(minutes=30), now=lambda: T0)

    def turns(limit: int) -> tuple[dict, list]:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(tuning, "CHAT_IMPORT_BATCH_CHARS", limit)
            result = connector.parse(path)
        out: dict[str, list] = {}
        for task in result.tasks:
            out.setdefault(task.native_id, []).extend(t.model_dump() for t in task.turns)
        return out, sorted((i.line, i.reason) for i in result.issues)

    whole, whole_issues = turns(10**9)
    batched, batched_issues = turns(batch)
    assert batched == whole and batched_issues == whole_issues
    for native_turns in whole.values():
        assert [t["ordinal"] for t in native_turns] == list(range(len(native_turns)))
