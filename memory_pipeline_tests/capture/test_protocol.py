"""The connector seam: the source registry, the roots each source reads, a store that changes in
place (SQLite with its WAL), per-source counts in the capture run's metadata, and the hook agents
registry."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from memory_pipeline.capture.changes import scan_changes
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.models import ParseIssue, ParseResult
from memory_pipeline.capture.protocol import file_state
from memory_pipeline.capture.sources import SourceRoots, demo_roots, factory
from memory_pipeline.cli.capture import SOURCES as CLI_SOURCES
from memory_pipeline.forget.privacy import SOURCES as RULE_SOURCES
from memory_pipeline.forget.select import TASK_SOURCES
from memory_pipeline.models.inbox import INBOX_KINDS
from memory_pipeline.models.sources import (
    MEMORY_SOURCES,
    SOURCE_NAMES,
    SOURCES,
    Root,
    SourceSpec,
    resolve_roots,
)
from memory_pipeline.settings import DEMO_CORPUS, Settings
from serving.hooks import agents
from serving.mcp.schema import SOURCES as MCP_SOURCES

DAY = date(2026, 9, 22)


def test_every_registered_source_builds_its_connector_with_its_name(tmp_path: Path) -> None:
    for spec in SOURCES:
        connector = factory(spec)([tmp_path / "missing"], SourceRoots(kind="real").options())
        assert connector.source == spec.name
        assert connector.discover() == []  # a missing root is no error


def test_the_registry_is_the_one_list_of_source_names() -> None:
    assert tuple(CLI_SOURCES) == SOURCE_NAMES == TASK_SOURCES
    assert frozenset(SOURCE_NAMES) | frozenset(INBOX_KINDS) == RULE_SOURCES
    assert MCP_SOURCES == MEMORY_SOURCES
    assert len(set(SOURCE_NAMES)) == len(SOURCES)


def test_roots_come_from_each_sources_override_variable_or_its_default(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path / "cx"), "MEMORY_IMPORT_DIR": "~/drops"}
    by_name = {s.name: resolve_roots(s, env, tmp_path / "mh") for s in SOURCES}
    assert by_name["codex"] == [tmp_path / "cx"]
    assert by_name["claude_code"] == [Path.home() / ".claude"]
    assert by_name["chat_import"] == [Path.home() / "drops"]
    assert resolve_roots(SOURCES[2], {}, tmp_path / "mh") == [tmp_path / "mh" / "imports"]
    # A variable that replaces the home directory, and one that lists several roots.
    home_like = SourceSpec(
        "x", "X", "X", "X", "m:f", (Root("X_HOME", ("~/.x",), below=".x"),), (), "x_home"
    )
    assert resolve_roots(home_like, {"X_HOME": "/h"}, tmp_path) == [Path("/h/.x")]
    assert resolve_roots(home_like, {}, tmp_path) == [Path.home() / ".x"]
    many = SourceSpec("y", "Y", "Y", "Y", "m:f", (Root("Y_DIRS", (), many=True),), (), "y")
    assert resolve_roots(many, {"Y_DIRS": "/a:/b"}, tmp_path) == [Path("/a"), Path("/b")]
    assert resolve_roots(many, {}, tmp_path) == []


def test_settings_read_the_registered_variables(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MEMORY_IMPORT_DIR", raising=False)
    settings = Settings.from_env()
    assert settings.source_home("claude_code") == tmp_path / "claude"
    assert settings.source_home("chat_import") == tmp_path / "home" / "imports"
    assert set(settings.source_homes) == set(SOURCE_NAMES)


def test_source_roots_keywords_and_unconfigured_sources(tmp_path: Path) -> None:
    roots = SourceRoots(codex_home=tmp_path / "c", import_dir=tmp_path / "i", kind="real")
    assert roots.roots == {"codex": [tmp_path / "c"], "chat_import": [tmp_path / "i"]}
    # A source without roots is not read at all (never the user's real home of that agent).
    assert [c.source for c in roots.connectors()] == ["codex", "chat_import"]
    demo = demo_roots()
    assert demo.home("codex") == DEMO_CORPUS / "codex_home"
    assert {c.source for c in demo.connectors()} == set(SOURCE_NAMES)


class _SqliteConnector:
    """A store that changes in place: one SQLite database in WAL mode (like Kiro CLI's)."""

    source = "chat_import"

    def __init__(self, db: Path) -> None:
        self.db = db
        self.skipped_files: list[ParseIssue] = []

    def discover(self) -> list[Path]:
        return [self.db] if self.db.is_file() else []

    def state_paths(self, path: Path) -> list[Path]:
        return [path, path.with_name(path.name + "-wal")]

    def task_days(self, path: Path) -> set[date]:
        return {DAY}

    def parse(self, path: Path) -> ParseResult:
        return ParseResult()


def _wal_db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")  # writes stay in the -wal file
    db.execute("CREATE TABLE conversations (id TEXT PRIMARY KEY, value TEXT)")
    db.commit()
    return db


def test_a_sqlite_store_written_only_to_its_wal_is_a_new_version(conn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "data.sqlite3"
    db = _wal_db(path)
    connector = _SqliteConnector(path)
    first = scan_changes(conn, [connector])
    assert [c.path for c in first.changes] == [str(path)]
    state = file_state(connector, path)
    assert state == first.changes[0].state
    conn.execute(  # as capture marks a file captured
        "UPDATE source_files SET captured_size = %s, captured_mtime_ns = %s WHERE path = %s",
        [*state, str(path)],
    )
    assert scan_changes(conn, [connector]).changes == []
    main_before = path.stat()
    db.execute("INSERT INTO conversations VALUES ('a', ?)", [json.dumps({"prompt": "x" * 500})])
    db.commit()
    main_after = path.stat()
    assert (main_after.st_size, main_after.st_mtime_ns) == (
        main_before.st_size,
        main_before.st_mtime_ns,
    )  # the database file itself did not change: only its -wal did
    changed = scan_changes(conn, [connector]).changes
    assert [c.path for c in changed] == [str(path)]
    assert changed[0].stored == state
    db.close()


def test_file_state_of_a_plain_connector_and_of_a_failing_state_paths(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text("{}\n")
    st = path.stat()

    class Broken(_SqliteConnector):
        def state_paths(self, path: Path) -> list[Path]:
            raise RuntimeError("bug")

    assert file_state(object(), path) == (st.st_size, st.st_mtime_ns)
    assert file_state(Broken(path), path) == (st.st_size, st.st_mtime_ns)
    assert file_state(object(), tmp_path / "gone") is None


def test_the_run_metadata_counts_per_source(conn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    imports = tmp_path / "imports"
    imports.mkdir()
    at = datetime(2026, 9, 22, 9, tzinfo=UTC)
    lines = [
        {"task_id": "t1", "role": "user", "text": "Which port?", "timestamp": at.isoformat()},
        {"task_id": "t1", "role": "assistant", "text": "5432.", "timestamp": at.isoformat()},
    ]
    (imports / "a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    roots = SourceRoots(
        codex_home=tmp_path / "none", import_dir=imports, kind="real", quiet_minutes=0
    )
    report = capture_window(conn, roots.connectors(), DAY, date(2026, 9, 23))
    by_source = report.metadata()["by_source"]
    assert isinstance(by_source, dict)
    assert by_source["chat_import"]["files_seen"] == 1
    assert by_source["chat_import"]["turns_appended"] == 1
    assert by_source["codex"] == dict.fromkeys(by_source["codex"], 0)


@pytest.mark.parametrize("agent", agents.AGENTS, ids=lambda a: a.NAME)
def test_every_hook_agent_module_says_where_and_what(agent, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings.from_env()
    if hasattr(agent, "plan_file"):  # a file written whole (OpenCode's plugin)
        change = agent.plan_file(tmp_path / "plugin.js", True, "/x/memory-pipeline")
        assert b'"/x/memory-pipeline"' in change.content and b'["hook", event]' in change.content
        assert b'"session-start"' in change.content and b'"prompt"' in change.content
        for scope in agent.SCOPES:
            assert agent.hook_file(scope, settings, tmp_path).suffix in (".js", ".ts")
        return
    groups = agent.entries(
        lambda arg: {"type": "command", "command": f"x hook {arg}", "timeout": 10}
    )
    commands = {h["command"].split(" --agent")[0] for g in groups.values() for h in g["hooks"]}
    # Every agent gets session start; Cursor's prompt hook cannot add context, so not there.
    assert "x hook session-start" in commands
    assert commands <= {"x hook session-start", "x hook prompt"}
    for scope in agent.SCOPES:
        assert agent.hook_file(scope, settings, tmp_path).name.endswith(".json")
