"""Bad bytes never stop a run (issue 10), reproduced end to end with all three sources.

Every input here was seen to stop the whole pipeline: a JSON `\\u0000` in one Codex prompt
(PostgreSQL refuses NUL in text), a lone surrogate in a Claude Code prompt (not encodable), a
chat-import timestamp of year 1 with an offset (OverflowError before any job), lines nested
100,000 deep (RecursionError), a BOM, and a conversation id too long for its index. Now each costs
at most its own line or task, everything beside it is captured, and the semantic pass runs.
"""

from __future__ import annotations

import json
import os
import random
import string
from datetime import date
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from memory_pipeline.capture.changes import changed_since
from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.capture.definitions import captured_tasks
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import demo_roots
from memory_pipeline.jobs import INGEST_JOB, RANGE_END_TAG, RANGE_START_TAG
from memory_pipeline.orchestrate import _plan
from memory_pipeline.resources import DatabaseResource, SemanticResource, SourcesResource
from memory_pipeline.semantic.definitions import semantic_memories
from memory_pipeline.settings import Settings

DEMO = demo_roots()
DEEP = b'{"deep": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
CLAUDE_SESSION = "-home-mara-work-ledgerline/dc2e432c-a299-4865-9a0d-41d4de54ec11.jsonl"
# A conversation id longer than a btree index entry can hold (random, so it does not compress).
HUGE_ID = "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=4000))


def _copy_codex(home: Path, uuid_part: str, transform=None) -> Path:  # type: ignore[no-untyped-def]
    (src,) = DEMO.home("codex").glob(f"sessions/**/rollout-*{uuid_part}*.jsonl")
    dest = home / src.relative_to(DEMO.home("codex"))
    dest.parent.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    dest.write_bytes(transform(data) if transform else data)
    return dest


def _chat(task: str, text: str, ts: str, role: str) -> bytes:
    line = {"task_id": task, "text": text, "timestamp": ts, "role": role}
    return json.dumps(line).encode() + b"\n"


def bad_sources(tmp_path: Path) -> SourcesResource:
    """Real demo transcripts of 2026-09-21..24 in all three sources, each damaged: Codex
    01a0c2e9 (09-21, the first file read) with a JSON NUL in its first prompt, Codex 01a0d21f
    (09-24) after it, Claude Code dc2e432c (09-22) with a lone surrogate, and a chat export
    (09-23)."""
    codex = tmp_path / "codex"
    # First file in discovery order: a JSON \u0000 inside the first prompt, and a deep line first.
    _copy_codex(
        codex,
        "01a0c2e9",
        lambda b: DEEP + b.replace(b"I'm starting a small", b"I'm starting\\u0000 a small"),
    )
    _copy_codex(codex, "01a0d21f")
    claude = tmp_path / "claude"
    dest = claude / "projects" / CLAUDE_SESSION
    dest.parent.mkdir(parents=True)
    original = (DEMO.home("claude_code") / "projects" / CLAUDE_SESSION).read_bytes()
    dest.write_bytes(DEEP + original.replace(b"we need rate", b"we need\\ud800 rate", 1))
    imports = tmp_path / "imports"
    imports.mkdir()
    (imports / "export.jsonl").write_bytes(
        b"\xef\xbb\xbf"
        + _chat("c1", "from year one", "0001-01-01T00:00:00+01:00", "user")
        + DEEP
        + _chat("c1", "pg_dump\u0000 or pgBackRest?", "2026-09-23T19:02:11Z", "user")
        + _chat("c1", "pgBackRest: incremental backups.", "2026-09-23T19:02:30Z", "assistant")
        + _chat(HUGE_ID, "a question", "2026-09-23T20:00:00Z", "user")
        + _chat(HUGE_ID, "an answer", "2026-09-23T20:00:05Z", "assistant")
        + _chat("c2", "and the \ud800 retention?", "2026-09-23T21:00:00Z", "user")
        + _chat("c2", "Keep 7 daily backups.", "2026-09-23T21:00:05Z", "assistant")
    )
    return SourcesResource.of(
        codex_home=str(codex), claude_home=str(claude), import_dir=str(imports), kind="real"
    )


def test_planning_a_run_never_raises_on_bad_bytes(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`memory-pipeline run` plans its ingest job from every file's task days before any job runs;
    it exited with a traceback (OverflowError, RecursionError) on the files above."""
    src = bad_sources(tmp_path)
    monkeypatch.setenv("MEMORY_SOURCES", "real")
    monkeypatch.setenv("CODEX_HOME", src.home("codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", src.home("claude_code"))
    monkeypatch.setenv("MEMORY_IMPORT_DIR", src.home("chat_import"))
    days, _ = changed_since(src.connectors(), since_ns=0)
    assert days == {date(2026, 9, d) for d in (21, 22, 23, 24)}
    plan = _plan(Settings.from_env())
    assert plan[0] == (INGEST_JOB, {RANGE_START_TAG: "2026-09-21", RANGE_END_TAG: "2026-09-24"})


def test_bad_bytes_cost_only_their_line_or_task(db_url, conn, tmp_path, dagster_home) -> None:  # type: ignore[no-untyped-def]
    src = bad_sources(tmp_path)
    job = dg.define_asset_job("capture_and_pass", selection=[captured_tasks, semantic_memories])
    defs = dg.Definitions(
        assets=[captured_tasks, semantic_memories],
        jobs=[job],
        resources={
            "db": DatabaseResource(url=db_url),
            "sources": src,
            "semantic": SemanticResource(ollama_host="http://127.0.0.1:9", quiet_minutes=0),
        },
    )
    tags = {RANGE_START_TAG: "2026-09-21", RANGE_END_TAG: "2026-09-24"}
    result = defs.resolve_job_def("capture_and_pass").execute_in_process(
        instance=dg.DagsterInstance.get(), tags=tags
    )
    assert result.success
    captured = conn.execute(
        "SELECT source, count(*) FROM captured_tasks GROUP BY source ORDER BY source"
    ).fetchall()
    assert captured == [("chat_import", 2), ("claude_code", 1), ("codex", 2)]
    # The bad characters are replaced, the rest of each text kept.
    prompts = [r[0] for r in conn.execute("SELECT prompt FROM agent_turns")]
    assert any(p.startswith("I'm starting\ufffd a small Rust CLI") for p in prompts)
    assert any(p.startswith("we need\ufffd rate limiting") for p in prompts)
    assert "pg_dump\ufffd or pgBackRest?" in prompts and "and the \ufffd retention?" in prompts
    (mat,) = [
        m
        for m in result.asset_materializations_for_node("captured_tasks")
        if m.partition == "2026-09-21"
    ]
    assert mat.metadata["unstorable_chars_replaced"].value >= 1
    # The task whose id no index can hold is a recorded skip; its neighbours in the file are not.
    skips = conn.execute(
        "SELECT kind, source, reason, length(native_id) FROM capture_skips WHERE reason IN"
        " ('store_failed', 'too_deep', 'bad_timestamp') ORDER BY kind, source, reason"
    ).fetchall()
    assert ("task", "chat_import", "store_failed") in [s[:3] for s in skips]
    assert all(s[3] < 1000 for s in skips)
    assert {("file", s, "too_deep") for s in ("chat_import", "claude_code", "codex")} <= {
        s[:3] for s in skips
    }
    assert ("file", "chat_import", "bad_timestamp") in [s[:3] for s in skips]
    # The semantic pass ran afterwards: every captured task has memories.
    without_memories = conn.execute(
        "SELECT t.source, t.native_id FROM captured_tasks t WHERE NOT EXISTS"
        " (SELECT 1 FROM memory_provenance p WHERE p.task_id = t.id)"
    ).fetchall()
    assert without_memories == []


def test_a_failed_task_leaves_its_file_for_the_next_run(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A task that could not be stored is not forgotten: its file is not marked captured, so the
    hourly catch-up looks at it again; the tasks beside it are stored once."""
    src = bad_sources(tmp_path)
    connectors = src.connectors()
    first = capture_window(conn, connectors, date(2026, 9, 23), date(2026, 9, 24))
    assert first.tasks_captured == 2 and first.skipped_tasks == {"store_failed": 1}
    row = conn.execute(
        "SELECT captured_size FROM source_files WHERE source = 'chat_import'"
    ).fetchone()
    assert row == (None,)
    again = capture_window(conn, connectors, date(2026, 9, 23), date(2026, 9, 24))
    assert again.tasks_captured == 0 and again.turns_appended == 0
    assert conn.execute(
        "SELECT count(*) FROM capture_skips WHERE reason = 'store_failed'"
    ).fetchone() == (1,)


@pytest.mark.parametrize("broken", ["discover", "task_days"])
def test_a_connector_that_fails_is_recorded_and_the_others_go_on(
    conn: psycopg.Connection, tmp_path: Path, broken: str
) -> None:
    """A connector bug outside parse() (here: a root that raises) costs that connector only."""
    src = bad_sources(tmp_path)
    codex, claude, chat = src.connectors()

    def boom(*_args: object) -> object:
        raise RuntimeError("connector bug")

    setattr(codex, broken, boom)
    report = capture_window(conn, [codex, claude, chat], date(2026, 9, 21), date(2026, 9, 25))
    assert report.file_issues.get(f"{broken}_failed", 0) >= 1
    sources = {r[0] for r in conn.execute("SELECT DISTINCT source FROM captured_tasks")}
    assert sources == {"claude_code", "chat_import"}


def test_a_nul_in_one_codex_prompt_stops_no_other_file_or_source(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The exact report: one `\\u0000` in the first Codex prompt captured 0 tasks from any
    source (DataError on the first file, every later file and connector never reached)."""
    codex = tmp_path / "codex"
    _copy_codex(codex, "01a0c2e9", lambda b: b.replace(b"I'm starting", b"I'm\\u0000 starting"))
    _copy_codex(codex, "01a0d354")
    imports = tmp_path / "imports"
    imports.mkdir()
    (imports / "chat.jsonl").write_bytes(
        _chat("c1", "pg_dump or pgBackRest?", "2026-09-23T19:02:11Z", "user")
        + _chat("c1", "pgBackRest.", "2026-09-23T19:02:30Z", "assistant")
    )
    src = SourcesResource.of(
        codex_home=str(codex),
        claude_home=str(DEMO.home("claude_code")),
        import_dir=str(imports),
        kind="real",
    )
    report = capture_window(conn, src.connectors(), date(2026, 9, 21), date(2026, 9, 25))
    captured = dict(
        conn.execute("SELECT source, count(*) FROM captured_tasks GROUP BY source").fetchall()
    )
    # 2026-09-21..24 of the demo: Codex 01a0c2e9 and 01a0d354, Claude dc2e432c, the chat.
    assert captured == {"codex": 2, "claude_code": 1, "chat_import": 1}
    assert report.unstorable_chars_replaced >= 1


def test_a_file_name_that_is_not_utf8_is_captured(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A Latin-1 file name comes from the OS as surrogate escapes, which the database cannot
    take as text: the file is keyed by its name with the bytes escaped, and captured."""
    imports = tmp_path / "imports"
    imports.mkdir()
    name = os.fsdecode(b"caf\xe9-notes.jsonl")
    (imports / name).write_bytes(
        _chat("c1", "pg_dump or pgBackRest?", "2026-09-23T19:02:11Z", "user")
        + _chat("c1", "pgBackRest.", "2026-09-23T19:02:30Z", "assistant")
    )
    chat = ChatImportConnector(imports)
    report = capture_window(conn, [chat], date(2026, 9, 23), date(2026, 9, 24))
    assert report.tasks_captured == 1 and not report.file_issues
    path = conn.execute("SELECT source_path FROM captured_tasks").fetchone()[0]
    assert path.endswith("caf\\xe9-notes.jsonl")
    marked = conn.execute("SELECT captured_size FROM source_files").fetchone()
    assert marked == ((imports / name).stat().st_size,)  # the catch-up sees it as captured
    again = capture_window(conn, [chat], date(2026, 9, 23), date(2026, 9, 24))
    assert (again.tasks_captured, again.turns_appended, again.file_issues) == (0, 0, {})
