"""Two runs of the same partition at once (a backfill overlapping the sensor): no duplicates."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.db.connection import connect
from memory_pipeline.semantic.models import PassInput, PassResult
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
from memory_pipeline.semantic.process import SemanticReport, process_window
from memory_pipeline_tests.capture.test_capture_assets import RENAMED, codex_home, sources

WINDOW = (date(2026, 9, 24), date(2026, 9, 25))


def twice(work: Callable[[], object]) -> list[object]:
    """Run `work` in two threads that start together; re-raise any failure."""
    results: list[object] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def runner() -> None:
        barrier.wait()
        try:
            results.append(work())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    return results


def test_concurrent_captures_store_each_task_and_turn_once(db_url, conn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    connectors = sources(codex_home(tmp_path, RENAMED, "01a0d21f"), tmp_path).connectors()

    def capture() -> object:
        with connect(db_url, autocommit=True) as own:
            return capture_window(own, connectors, *WINDOW)

    reports = twice(capture)
    assert sorted(r.tasks_captured for r in reports) in ([0, 2], [1, 1])  # type: ignore[attr-defined]
    assert conn.execute("SELECT count(*) FROM captured_tasks").fetchone() == (2,)
    duplicated = conn.execute(
        "SELECT count(*) FROM (SELECT task_id, native_turn_id FROM agent_turns"
        " GROUP BY 1, 2 HAVING count(*) > 1) d"
    ).fetchone()
    assert duplicated == (0,)


class SlowOffline(OfflineRulesBackend):
    """The offline backend, slowed down so that both runs compute a pass before either stores."""

    def run(self, pass_input: PassInput) -> PassResult:
        time.sleep(0.5)
        return super().run(pass_input)


def test_concurrent_semantic_passes_store_one_pass_per_task(db_url, conn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    capture_window(conn, sources(codex_home(tmp_path, RENAMED), tmp_path).connectors(), *WINDOW)

    def semantic() -> object:
        with connect(db_url, autocommit=True) as own:
            return process_window(own, SlowOffline(), *WINDOW, quiet_minutes=0)

    reports: list[SemanticReport] = twice(semantic)  # type: ignore[assignment]
    assert sorted(r.tasks_processed for r in reports) == [0, 1]
    assert sorted(r.tasks_done_elsewhere for r in reports) == [0, 1]
    assert conn.execute("SELECT count(*) FROM semantic_pass_runs").fetchone() == (1,)
    segments = conn.execute("SELECT count(*) FROM topic_segments").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM memories WHERE type = 'segment'").fetchone() == (
        segments,
    )
