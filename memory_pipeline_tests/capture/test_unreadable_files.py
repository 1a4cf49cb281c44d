"""A transcript file with no readable line is recorded, not silently ignored (issue 12 gap).

Such a file has no task, so no task day, so no partition run ever parsed it: its bad lines never
reached `capture_skips`. Now the peek that finds no task in a non-empty file records one file skip
(`no_task_found`, with what the lines were), in capture and in the sensor's look, once per file
version, and the run goes on with the other files.
"""

from __future__ import annotations

import json
import random
from datetime import date
from pathlib import Path

from memory_pipeline.capture.changes import scan_changes
from memory_pipeline.capture.ingest import capture_window
from memory_pipeline.capture.sources import SourceRoots

GARBAGE = bytes(random.Random(3).randrange(256) for _ in range(20_000)) + b"\n\x00\xff\n"


def _roots(tmp_path: Path) -> SourceRoots:
    return SourceRoots(
        codex_home=tmp_path / "codex",
        claude_home=tmp_path / "claude",
        import_dir=tmp_path / "imports",
        kind="real",
    )


def _garbage_everywhere(tmp_path: Path) -> dict[str, Path]:
    files = {
        "chat_import": tmp_path / "imports" / "garbage.jsonl",
        "codex": tmp_path / "codex" / "sessions" / "2026" / "09" / "21" / "rollout-x.jsonl",
        "claude_code": tmp_path / "claude" / "projects" / "-home-x" / "a1b2.jsonl",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(GARBAGE)
    good = {"task_id": "ok", "role": "user", "text": "hello", "timestamp": "2026-09-21T10:00:00Z"}
    answer = {**good, "role": "assistant", "text": "hi", "timestamp": "2026-09-21T10:00:05Z"}
    (tmp_path / "imports" / "good.jsonl").write_text(
        json.dumps(good) + "\n" + json.dumps(answer) + "\n"
    )
    return files


def _file_skips(conn) -> dict[str, list[tuple[str, str]]]:  # type: ignore[no-untyped-def]
    rows = conn.execute(
        "SELECT source, path, reason, detail FROM capture_skips WHERE kind = 'file'"
    ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for source, path, reason, detail in rows:
        out.setdefault(source, []).append((Path(path).name, reason, detail))
    return out


def test_a_garbage_file_is_a_recorded_file_skip_in_capture(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = _garbage_everywhere(tmp_path)
    report = capture_window(conn, _roots(tmp_path).connectors(), date(2026, 1, 1), date(2027, 1, 1))
    skips = _file_skips(conn)
    assert report.file_issues.get("no_task_found") == 3  # in the run's metadata too
    for source, path in files.items():
        reasons = [(name, reason) for name, reason, _ in skips.get(source, [])]
        assert (path.name, "no_task_found") in reasons, (source, skips)
    detail = next(d for _, r, d in skips["chat_import"] if r == "no_task_found")
    assert "binary" in detail or "invalid_json" in detail
    # the good file beside it is captured
    assert conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0] == 1
    # once per file version: a second run records nothing new
    before = conn.execute("SELECT count(*) FROM capture_skips").fetchone()[0]
    capture_window(conn, _roots(tmp_path).connectors(), date(2026, 1, 1), date(2027, 1, 1))
    assert conn.execute("SELECT count(*) FROM capture_skips").fetchone()[0] == before


def test_the_sensor_look_records_a_garbage_file_alone(conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """With nothing else in the roots no partition run happens: the look must record it."""
    (tmp_path / "imports").mkdir()
    (tmp_path / "imports" / "garbage.jsonl").write_bytes(GARBAGE)
    scan = scan_changes(conn, _roots(tmp_path).connectors())
    assert not scan.days
    skips = _file_skips(conn)
    assert [(n, r) for n, r, _ in skips["chat_import"]] == [("garbage.jsonl", "no_task_found")]
