"""The Kiro connectors' isolation properties, checked on one damaged copy of a fixture.

Used by `memory_pipeline_tests/capture/test_fuzz_kiro.py` (a few dozen cases) and by
`scripts/fuzz_capture.py --parser kiro_cli` (sessions and store rows) and `--parser kiro_ide`
(10,000 by default, through `fuzz_checks_kiro_cli.py` / `fuzz_checks_kiro_ide.py`).

* `kiro_cli`: the lines of a v2 session transcript (`sessions/cli/<id>.jsonl`, its `.json`
  sidecar left intact) are damaged. Nothing escapes (no `parser_error`, `task_days` agrees with
  the task), the session survives (its id is in the sidecar), every line the reader cannot decode
  is recorded on its line, and every turn of the original whose lines (its Prompt through the
  line before the next Prompt, and the line after them) are intact and in order is captured with
  the same id, prompt and answer. No captured turn holds text of two original turns.
* `kiro_cli_store`: each "line" is one conversation row's JSON value; the damaged rows are put
  in a Kiro CLI `data.sqlite3` (the agent's schema, WAL mode). Nothing escapes; every row is a
  task or a recorded issue; every intact row's conversation is captured exactly as from the
  original store.
* `kiro_ide`: the lines of a pretty-printed new-layout session document are damaged (a file torn
  or corrupted on disk). Nothing escapes; the result is the original task, or no task and a
  recorded issue, or a task whose turns are each one of the original's (a damaged message
  drops or shortens a turn, never invents one).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from memory_pipeline.capture.kiro_cli import KiroCliConnector
from memory_pipeline.capture.kiro_ide import KiroIdeConnector
from memory_pipeline.capture.models import ParsedTask
from memory_pipeline_tests.capture.kiro_fixtures import DATA, STORE, create_store
from memory_pipeline_tests.support.mutations import Mutated, fixture_lines, in_order
from memory_pipeline_tests.support.own_turns import own_turn_violations

CLI = DATA / "kiro_home" / "sessions" / "cli"
KIRO_CLI_FIXTURES: tuple[Path, ...] = tuple(sorted(CLI.glob("*.jsonl")))
KIRO_STORE_FIXTURES: tuple[Path, ...] = (STORE / "rows.json",)
IDE = DATA.parent / "kiro_ide" / "kiro.kiroagent" / "workspace-sessions"
KIRO_IDE_FIXTURES: tuple[Path, ...] = tuple(
    sorted(p for p in IDE.glob("*/*.json") if p.name != "sessions.json")
)


@dataclass(frozen=True)
class Original:
    source: Path
    lines: list[bytes]
    task: ParsedTask | None
    tasks: dict[str, ParsedTask]
    ranges: dict[str, tuple[int, int]]  # native turn id -> (first line, line after the turn)


# --- kiro_cli: session transcripts ----------------------------------------------------------------


def _install_session(tmp: Path, source: Path, data: bytes) -> Path:
    cli = tmp / "sessions" / "cli"
    cli.mkdir(parents=True, exist_ok=True)
    shutil.copy(source.with_suffix(".json"), cli / source.with_suffix(".json").name)
    shutil.copy(DATA / "kiro_home" / ".cli_bash_history", tmp / ".cli_bash_history")
    path = cli / source.name
    path.write_bytes(data)
    return path


def session_original(source: Path) -> Original:
    lines = fixture_lines(source.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        path = _install_session(Path(tmp), source, b"\n".join(lines) + b"\n")
        result = KiroCliConnector([Path(tmp)]).parse(path)
    assert result.issues == [] and len(result.tasks) == 1, (source, result.issues)
    prompts = [i for i, line in enumerate(lines) if json.loads(line).get("kind") == "Prompt"] + [
        len(lines)
    ]
    ranges = {}
    for a, b in pairwise(prompts):
        mid = json.loads(lines[a])["data"]["message_id"]
        ranges[mid] = (a, b)
    return Original(source, lines, result.tasks[0], {}, ranges)


def check_kiro_cli(mutated: Mutated, original: Original) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _install_session(Path(tmp), original.source, mutated.data())
        c = KiroCliConnector([Path(tmp)])
        result = c.parse(path)
        days = c.task_days(path)
    assert not [i for i in result.issues if i.reason == "parser_error"], result.issues
    assert len(result.tasks) == 1, "the session's id is in its intact sidecar: it must survive"
    (task,) = result.tasks
    assert days == {task.started_at.date()}
    assert [t.ordinal for t in task.turns] == list(range(len(task.turns)))
    # a flipped byte can be a newline: one damaged line of M is then two lines of the file
    first_line = [1]
    for line in mutated.lines:
        first_line.append(first_line[-1] + line.count(b"\n") + 1)
    recorded = {x.line for x in result.issues}
    for i in mutated.damaged:
        line = mutated.lines[i].strip()
        try:
            json.loads(line.removeprefix(b"\xef\xbb\xbf"))
        except (ValueError, RecursionError):
            if line and line.removeprefix(b"\xef\xbb\xbf").strip():
                lines = range(first_line[i], first_line[i + 1])
                assert recorded.intersection(lines), f"line {first_line[i]} not recorded"
    assert original.task is not None
    captured = {(t.native_turn_id, t.prompt, t.outcome) for t in task.turns}
    for turn in original.task.turns:
        first, end = original.ranges[turn.native_turn_id]
        if in_order(mutated, first, end, len(original.lines)):
            assert (turn.native_turn_id, turn.prompt, turn.outcome) in captured, (
                f"intact turn {turn.native_turn_id} lost or changed"
            )
    pieces = [(t.native_turn_id, t.prompt) for t in original.task.turns]
    pieces += [(t.native_turn_id, t.outcome) for t in original.task.turns]
    damaged = [mutated.lines[i] for i in mutated.damaged]
    violations = own_turn_violations(pieces, [(t.prompt, t.outcome) for t in task.turns], damaged)
    assert not violations, violations


# --- kiro_cli_store: the SQLite store's rows ------------------------------------------------------


def _rows() -> list[dict[str, Any]]:
    rows = json.loads((STORE / "rows.json").read_text())
    return [dict(r, table="conversations_v2") for r in rows["kiro_cli"] + rows["amazon_q"]]


def _install_store(tmp: Path, values: list[bytes]) -> Path:
    db = tmp / "data.sqlite3"
    conn = create_store(db)
    for n, (row, raw) in enumerate(zip(_rows(), values, strict=True)):
        conn.execute(
            "INSERT INTO conversations_v2 (key, conversation_id, value, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (row["key"], f"row-{n}", raw.decode("utf-8", "replace"), row.get("created_at") or 1, 1),
        )
    conn.close()
    return db


def store_original(_rows_json: Path) -> Original:
    lines = [json.dumps(json.loads((STORE / r["value"]).read_text())).encode() for r in _rows()]
    with tempfile.TemporaryDirectory() as tmp:
        db = _install_store(Path(tmp), lines)
        result = KiroCliConnector([Path(tmp)]).parse(db)
    assert result.issues == [] and len(result.tasks) == len(lines), result.issues
    return Original(_rows_json, lines, None, {t.native_id: t for t in result.tasks}, {})


def check_kiro_cli_store(mutated: Mutated, original: Original) -> None:
    if len(mutated.lines) != len(original.lines):
        return  # an inserted or removed row has no row of its own to compare: covered above
    with tempfile.TemporaryDirectory() as tmp:
        db = _install_store(Path(tmp), mutated.lines)
        c = KiroCliConnector([Path(tmp)])
        result = c.parse(db)
        days = c.task_days(db)
    assert not [i for i in result.issues if i.reason == "parser_error"], result.issues
    assert days == {t.started_at.date() for t in result.tasks}
    got = {t.native_id: t for t in result.tasks}
    assert len(got) + len(result.issues) >= len(mutated.lines) - 0, (got, result.issues)
    for i, o in enumerate(mutated.origin):
        if o is None or i in mutated.damaged:
            continue
        want = original.tasks[f"row-{o}"]
        have = got.get(f"row-{o}")
        assert have is not None, f"intact row {o} lost"
        assert have.turns == want.turns and have.unfinished_turn == want.unfinished_turn


# --- kiro_ide: whole session documents ------------------------------------------------------------


def _install_ide(tmp: Path, source: Path, data: bytes) -> Path:
    root = tmp / "kiro.kiroagent"
    ws = root / "workspace-sessions" / source.parent.name
    ws.mkdir(parents=True)
    shutil.copy(source.with_name("sessions.json"), ws / "sessions.json")
    path = ws / source.name
    path.write_bytes(data)
    return path


def ide_original(source: Path) -> Original:
    lines = fixture_lines(source.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        path = _install_ide(Path(tmp), source, b"\n".join(lines) + b"\n")
        result = KiroIdeConnector([path.parents[2]]).parse(path)
    assert result.issues == [] and len(result.tasks) == 1, (source, result.issues)
    return Original(source, lines, result.tasks[0], {}, {})


def check_kiro_ide(mutated: Mutated, original: Original) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _install_ide(Path(tmp), original.source, mutated.data())
        c = KiroIdeConnector([path.parents[2]])
        result = c.parse(path)
        days = c.task_days(path)
    assert not [i for i in result.issues if i.reason == "parser_error"], result.issues
    assert days == {t.started_at.date() for t in result.tasks}
    if not result.tasks:
        assert result.issues, "no task and nothing recorded"
        return
    (task,) = result.tasks
    assert original.task is not None
    assert [t.ordinal for t in task.turns] == list(range(len(task.turns)))
    if not mutated.damaged:
        assert task.turns == original.task.turns
    pieces = [(i, t.prompt) for i, t in enumerate(original.task.turns)]
    pieces += [(i, t.outcome) for i, t in enumerate(original.task.turns)]
    damaged = [mutated.lines[i] for i in mutated.damaged]
    violations = own_turn_violations(pieces, [(t.prompt, t.outcome) for t in task.turns], damaged)
    assert not violations, violations
