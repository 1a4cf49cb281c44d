"""Capture's store-level fuzz properties: a damaged copy of a task in a second file.

A file M made from an original O (`mutated_file`) is put beside O so that both claim the same
tasks: for the chat import, O as `a.jsonl` and M as `b.jsonl` in one import directory; for Codex,
O in `archived_sessions/` and M in `sessions/` under the same rollout name (one thread id).
Everything is captured into a real database (`capture_window` over all days), then:

S1. Nothing escapes `capture_window`.
S2. O wins: it is read first (discovery order), so every turn of O is stored as O holds it
    (after redaction), under the task's own key (when O's task is user-owned: a delegated one,
    such as a `codex exec` run, is a recorded skip, never stored).
S3. No stored turn holds text that was not in its own lines (`support/own_turns.py`): no stored
    turn holds pieces of two turns of O, whichever file it came from.
S4. Never merged silently: every task of M that O also holds (and that reached the store) is a
    recorded `task_conflict` of M's file; a chat import conversation is kept apart under
    `<task_id> @ b.jsonl`, a Codex copy is not captured (no turn of the thread comes from M).
S5. Idempotent: capturing both files again (forced) records nothing new and changes no row of
    `captured_tasks`, `agent_turns` or `capture_skips`.

`check_chat_import_store(conn, mutated, original)` and `check_codex_store(...)` take a connection
to a migrated database whose capture tables they empty first. `scripts/fuzz_capture.py` runs them
on its own embedded server (`shared_connection()`); the default test run uses the tests' database.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
import traceback
from datetime import date
from pathlib import Path

import psycopg

from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.store import clean_turn
from memory_pipeline.forget.privacy import CaptureRules
from memory_pipeline_tests.support.fuzz_checks_chat_import import (
    ChatImportOriginal,
    check_own_turns,
    connector,
)
from memory_pipeline_tests.support.fuzz_checks_codex import CodexOriginal
from memory_pipeline_tests.support.mutations import Mutated
from memory_pipeline_tests.support.own_turns import own_turn_violations

EVERY_DAY = (date.min, date.max)
_TABLES = ("captured_tasks", "agent_turns", "capture_skips")


def _empty(conn: psycopg.Connection) -> None:
    conn.execute("TRUNCATE captured_tasks, capture_skips, source_files CASCADE")


def _hashes(conn: psycopg.Connection) -> dict[str, str]:
    out = {}
    for table in _TABLES:
        rows = conn.execute(f"SELECT to_jsonb(x)::text FROM {table} x ORDER BY 1").fetchall()
        out[table] = hashlib.sha256("\n".join(r[0] for r in rows).encode()).hexdigest()
    return out


def _stored(conn: psycopg.Connection) -> list[tuple[str, str, str, str]]:
    return conn.execute(
        "SELECT t.native_id, t.source_path, a.prompt, a.outcome FROM agent_turns a"
        " JOIN captured_tasks t ON t.id = a.task_id ORDER BY t.native_id, a.ordinal"
    ).fetchall()


def _capture(conn: psycopg.Connection, connectors: list, label: str) -> None:
    try:
        capture_window(conn, connectors, *EVERY_DAY)
    except Exception:
        raise AssertionError(f"S1 {label}: capture raised:\n{traceback.format_exc()}") from None


def _again(conn: psycopg.Connection, connectors: list, label: str) -> None:
    before = _hashes(conn)
    conn.execute("UPDATE source_files SET captured_size = NULL")  # read every file again
    _capture(conn, connectors, label)
    after = _hashes(conn)
    changed = [t for t in _TABLES if before[t] != after[t]]
    assert not changed, f"S5 {label}: a second capture changed {changed}"


def _conflicts(conn: psycopg.Connection) -> set[tuple[str, str]]:
    rows = conn.execute(
        "SELECT native_id, path FROM capture_skips WHERE reason = 'task_conflict'"
    ).fetchall()
    return {(r[0], Path(r[1]).name) for r in rows}


def _store_failed(conn: psycopg.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT native_id FROM capture_skips WHERE reason = 'store_failed'"
    ).fetchall()
    return {r[0] for r in rows}


def check_chat_import_store(
    conn: psycopg.Connection, mutated: Mutated, original: ChatImportOriginal
) -> None:
    """S1-S5 (module docstring) for a chat import."""
    CaptureRules.from_settings()  # no MEMORY_EXCLUDE rule may hide a task here
    _empty(conn)
    label = f"{original.source.name} {mutated.kinds}"
    with tempfile.TemporaryDirectory(prefix="fuzz-store-") as tmp:
        folder = Path(tmp)
        (folder / "a.jsonl").write_bytes(b"\n".join(original.lines) + b"\n")
        (folder / "b.jsonl").write_bytes(mutated.data())
        chat = connector(folder)
        expected = chat.parse(folder / "a.jsonl").tasks
        copy = chat.parse(folder / "b.jsonl").tasks
        _capture(conn, [chat], label)
        stored = _stored(conn)
        for task in expected:  # S2
            mine = {(p, o) for key, _path, p, o in stored if key == task.native_id}
            for turn in task.turns:
                clean = clean_turn(turn)
                assert (clean.prompt, clean.outcome) in mine, (
                    f"S2 {label}: {task.native_id!r} lost {turn.prompt[:40]!r}"
                )
        check_own_turns(original, [(k, p, o) for k, _path, p, o in stored], f"S3 {label}", mutated)
        ids = {t.native_id for t in expected}
        failed = _store_failed(conn)
        conflicts = _conflicts(conn)
        for task in copy:  # S4
            if task.native_id in ids and task.native_id not in failed:
                assert (task.native_id, "b.jsonl") in conflicts, (
                    f"S4 {label}: {task.native_id!r} in both files, no conflict: {conflicts}"
                )
        _again(conn, [chat], label)


def check_codex_store(conn: psycopg.Connection, mutated: Mutated, original: CodexOriginal) -> None:
    """S1-S5 (module docstring) for a Codex rollout and its damaged copy."""
    CaptureRules.from_settings()
    _empty(conn)
    label = f"{original.name} {mutated.kinds}"
    with tempfile.TemporaryDirectory(prefix="fuzz-store-") as tmp:
        home = Path(tmp)
        name = original.name
        if not name.startswith("rollout-"):  # discovery lists rollout-*.jsonl only
            name = f"rollout-2026-01-01T00-00-00-{original.task.native_id}.jsonl"
        kept = home / "archived_sessions" / name
        copy = home / "sessions" / name
        kept.parent.mkdir(parents=True)
        copy.parent.mkdir(parents=True)
        kept.write_bytes(b"\n".join(original.lines) + b"\n")
        copy.write_bytes(mutated.data())
        codex = CodexConnector(home)
        parsed_copy = codex.parse(copy).tasks
        _capture(conn, [codex], label)
        stored = _stored(conn)
        mine = {(p, o) for key, path, p, o in stored if key == original.task.native_id}
        owned = original.task.ownership.ownership == "user_owned"  # else a recorded skip
        for turn in original.task.turns if owned else []:  # S2
            clean = clean_turn(turn)
            assert (clean.prompt, clean.outcome) in mine, f"S2 {label}: lost {turn.prompt[:40]!r}"
        pieces = [
            (t.native_turn_id, text) for t in original.task.turns for text in (t.prompt, t.outcome)
        ]
        problems = own_turn_violations(
            pieces, [(p, o) for *_k, p, o in stored], [mutated.lines[i] for i in mutated.damaged]
        )
        assert not problems, f"S3 {label}: {problems}"
        same = [t for t in parsed_copy if t.native_id == original.task.native_id]
        owned_copy = bool(same) and same[0].ownership.ownership == "user_owned"  # else skipped
        if owned_copy and original.task.native_id not in _store_failed(conn):  # S4
            assert (original.task.native_id, name) in _conflicts(conn), (
                f"S4 {label}: the copy in sessions/ is no recorded conflict"
            )
        from_copy = [r for r in stored if Path(r[1]).parent.name == "sessions"]
        assert not from_copy, f"S4 {label}: turns stored from the copy: {from_copy[:1]}"
        _again(conn, [codex], label)


_SHARED: dict[str, psycopg.Connection] = {}


def shared_connection() -> psycopg.Connection:
    """A connection to a migrated database on an embedded server of its own (started once,
    stopped and removed at exit), for scripts that run the store checks outside pytest."""
    if "conn" in _SHARED:
        return _SHARED["conn"]
    from memory_pipeline.db.embedded import EmbeddedServer
    from memory_pipeline.db.migrate import migrate

    folder = Path(tempfile.mkdtemp(prefix="fuzz-store-pg-"))
    server = EmbeddedServer(folder / "pgdata")
    server.start()

    def stop() -> None:
        _SHARED.pop("conn").close()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    with psycopg.connect(server.uri("postgres"), autocommit=True) as admin:
        admin.execute("CREATE DATABASE fuzz_store")
    migrate(server.uri("fuzz_store"))
    conn = psycopg.connect(server.uri("fuzz_store"), autocommit=True)
    conn.execute("SET synchronous_commit = off")  # a scratch database: no flush per statement
    _SHARED["conn"] = conn
    return conn


def chat_import_store(mutated: Mutated, original: ChatImportOriginal) -> None:
    """`check_chat_import_store` on the shared database (scripts/fuzz_capture.py)."""
    check_chat_import_store(shared_connection(), mutated, original)


def codex_store(mutated: Mutated, original: CodexOriginal) -> None:
    """`check_codex_store` on the shared database (scripts/fuzz_capture.py)."""
    check_codex_store(shared_connection(), mutated, original)
