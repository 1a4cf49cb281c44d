"""Tasks skipped for ownership are reported in one line the user sees (run output and the UI),
listed by `memory-pipeline capture skips`, and a skipped `unknown` session can be confirmed as
the user's (`memory-pipeline capture confirm`), never overriding delegation evidence."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.capture.confirmations import confirm, skipped_tasks
from memory_pipeline.capture.definitions import captured_tasks
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.report import OWNERSHIP_SKIP_LINE
from memory_pipeline.capture.sources import SourceRoots
from memory_pipeline.errors import UserError
from memory_pipeline.orchestrate import _report
from memory_pipeline.resources import DatabaseResource, SourcesResource
from memory_pipeline_tests.support.claude_transcript import MAIN_2_0_64, Transcript, project

OLD_SESSION = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"  # Claude Code 2.0.64: no `entrypoint`
SDK_SESSION = "5d000000-0000-4000-8000-00000000000d"
WINDOW = (date(2025, 1, 1), date(2027, 1, 1))


def _home(tmp_path: Path) -> Path:
    """A Claude home with a real 2.0.x session (no entrypoint, no history.jsonl: unknown) and a
    `claude -p` session (entrypoint sdk-cli: delegated)."""
    home = tmp_path / "claude"
    project(home).mkdir(parents=True)
    shutil.copy(MAIN_2_0_64, project(home))
    sdk = Transcript(SDK_SESSION, entrypoint="sdk-cli")
    sdk.turn("summarise the diff", "It renames two helpers.", 1)
    sdk.write(project(home))
    return home


def _roots(tmp_path: Path, home: Path) -> SourceRoots:
    return SourceRoots(
        codex_home=tmp_path / "none", claude_home=home, import_dir=tmp_path / "none", kind="real"
    )


def _capture(conn, tmp_path: Path, home: Path):  # type: ignore[no-untyped-def]
    return capture_window(conn, _roots(tmp_path, home).connectors(), *WINDOW)


def _captured(conn, native_id: str):  # type: ignore[no-untyped-def]
    return conn.execute(
        "SELECT ownership_reason, ownership_evidence, turn_count FROM captured_tasks"
        " WHERE source = 'claude_code' AND native_id = %s",
        [native_id],
    ).fetchone()


def test_a_run_that_skips_for_ownership_says_so_in_one_line(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = _capture(conn, tmp_path, _home(tmp_path))
    line = report.ownership_skip_line()
    assert "\n" not in line
    assert line.startswith("skipped 2 tasks for ownership: ")
    assert "1 unknown (claude_code:no-entrypoint 1)" in line
    assert "1 delegated (claude_code:sdk-entrypoint 1)" in line
    assert "`memory-pipeline capture skips` lists them" in line
    assert "`memory-pipeline capture confirm SOURCE:ID`" in line
    listed = {(t.native_id, t.ownership, t.reason) for t in skipped_tasks(conn)}
    assert listed == {
        (OLD_SESSION, "unknown", "claude_code:no-entrypoint"),
        (SDK_SESSION, "delegated", "claude_code:sdk-entrypoint"),
    }


def test_the_skip_line_is_in_the_asset_metadata_the_ui_shows(db_url, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = _home(tmp_path)
    src = SourcesResource.of(
        codex_home=str(tmp_path / "none"),
        claude_home=str(home),
        import_dir=str(tmp_path / "none"),
        kind="real",
    )
    result = dg.materialize(
        [captured_tasks],
        partition_key="2025-12-10",  # the day the 2.0.64 session started
        resources={"db": DatabaseResource(url=db_url), "sources": src},
    )
    (mat,) = result.asset_materializations_for_node("captured_tasks")
    line = mat.metadata[OWNERSHIP_SKIP_LINE].value
    assert str(line).startswith("skipped 1 task for ownership: 1 unknown")
    assert mat.metadata["skipped_for_ownership"].value == 1
    # `memory-pipeline run` prints it as its own line after the asset's counts.
    printed: list[str] = []
    _report(result, printed.append)
    assert f"  {line}" in printed


def test_a_confirmed_unknown_session_is_captured_on_the_next_run(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = _home(tmp_path)
    _capture(conn, tmp_path, home)
    assert _captured(conn, OLD_SESSION) is None
    done = confirm(conn, "claude_code", OLD_SESSION)
    assert (done.ownership, done.reason) == ("unknown", "claude_code:no-entrypoint")
    report = _capture(conn, tmp_path, home)
    reason, evidence, turns = _captured(conn, OLD_SESSION)
    assert reason == "claude_code:user-confirmed"
    assert evidence["native_reason"] == "claude_code:no-entrypoint"
    assert "user_confirmed_at" in evidence
    assert turns == 3
    assert [t.native_id for t in skipped_tasks(conn)] == [SDK_SESSION]
    assert "unknown" not in report.ownership_skip_line()


def test_a_confirmation_never_overrides_delegation_evidence(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    home = _home(tmp_path)
    _capture(conn, tmp_path, home)
    with pytest.raises(UserError, match="delegation evidence wins"):
        confirm(conn, "claude_code", SDK_SESSION)
    # Even a confirmation stored anyway (by hand, or before the task turned out delegated)
    # leaves a delegated task skipped.
    conn.execute(
        "INSERT INTO ownership_confirmations (source, native_id) VALUES ('claude_code', %s)",
        [SDK_SESSION],
    )
    _capture(conn, tmp_path, home)
    assert _captured(conn, SDK_SESSION) is None


def test_confirming_a_task_that_was_never_skipped_says_what_to_do(conn) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match="capture skips"):
        confirm(conn, "claude_code", "no-such-session")
