"""The OpenCode connector's fuzz properties, as one function a test or a script can call.

An OpenCode store is many small JSON files; the fuzzer damages lines, so the original is the
store flattened: one line per file (its JSON, compact), in path order, with the path of each.
A mutated copy is laid out again: line i goes to the path of the original line it came from;
an inserted junk line becomes one more part file of the first message (`prt_zzzz<i>.json`).
The same lines also become an `opencode.db` (`opencode_sqlite`: session rows from the session
files, `data` columns from the message and part files, damaged bytes as they are).

For a store M made from an original O:

1. Nothing escapes: `parse` and `task_days` return normally, no `parser_error`, and
   `task_days` is exactly the set of start days of the tasks `parse` returns.
2. Every intact turn is captured verbatim: a turn of O whose session file, messages and parts
   are all byte-identical in M (and no junk part joined them, and no later assistant message was
   damaged, which could claim it through a damaged `parentID`) is a turn of its task in M with
   the same prompt and outcome.
3. Everything is storable (`check_storable`).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.capture.opencode import OpenCodeConnector
from memory_pipeline_tests.support.fuzz_checks_chat_import import check_storable
from memory_pipeline_tests.support.mutations import Mutated
from memory_pipeline_tests.support.opencode_store import SQLITE_SCHEMA

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "memory_pipeline_tests" / "capture" / "data" / "opencode"
OPENCODE_FIXTURES: tuple[Path, ...] = (DATA / "json-store", DATA / "legacy-store")


@dataclass(frozen=True)
class Turn:
    session: str
    prompt: str
    outcome: str
    files: frozenset[int]  # indices of the lines (files) the turn rests on
    part_dirs: frozenset[str]  # its messages' part directories (relative)
    first_message: str


@dataclass(frozen=True)
class OpenCodeOriginal:
    source: Path
    lines: list[bytes]
    paths: list[str]  # relative path of each line's file
    turns: tuple[Turn, ...]


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if p.is_file())


def opencode_original(source: Path) -> OpenCodeOriginal:
    files = _files(source)
    paths = [str(p.relative_to(source)) for p in files]
    lines = [json.dumps(json.loads(p.read_bytes()), ensure_ascii=False).encode() for p in files]
    connector = OpenCodeConnector(source)
    turns = []
    for session_file in connector.discover():
        (task,) = connector.parse(session_file).tasks
        sindex = paths.index(str(session_file.relative_to(source)))
        for t in task.turns:
            ids = set(t.native_message_ids)
            used = {
                i for i, p in enumerate(paths) if Path(p).stem in ids or Path(p).parent.name in ids
            }
            dirs = {str(Path(paths[i]).parent) for i in used if Path(paths[i]).parent.name in ids}
            turns.append(
                Turn(
                    task.native_id,
                    t.prompt,
                    t.outcome,
                    frozenset(used | {sindex}),
                    frozenset(dirs),
                    t.native_message_ids[0],
                )
            )
    return OpenCodeOriginal(source, lines, paths, tuple(turns))


def _junk_path(original: OpenCodeOriginal, index: int) -> str:
    first_part = next(p for p in original.paths if "/part/" in f"/{p}")
    return str(Path(first_part).parent / f"prt_zzzz{index:04d}.json")


def lay_out(mutated: Mutated, original: OpenCodeOriginal, root: Path) -> dict[int, str]:
    """Write M as a JSON store under `root`; the path each line of M went to."""
    where: dict[int, str] = {}
    for i, (line, origin) in enumerate(zip(mutated.lines, mutated.origin, strict=True)):
        rel = original.paths[origin] if origin is not None else _junk_path(original, i)
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(line)
        where[i] = rel
    return where


def _kind(rel: Path) -> str:
    if "part" in rel.parts:
        return "part"
    if "message" in rel.parts:
        return "message"
    if "session" in rel.parts:
        return "session"
    return "other"


def lay_out_sqlite(mutated: Mutated, original: OpenCodeOriginal, root: Path) -> Path:
    """Write M as the rows of an `opencode.db` (what OpenCode's JSON migration would insert)."""
    db = root / "opencode.db"
    conn = sqlite3.connect(db)
    conn.executescript(SQLITE_SCHEMA)
    rels = [
        Path(original.paths[o] if o is not None else _junk_path(original, i))
        for i, o in enumerate(mutated.origin)
    ]
    message_session = {r.stem: r.parent.name for r in rels if _kind(r) == "message"}
    for rel, line in zip(rels, mutated.lines, strict=True):
        try:
            text: str | bytes = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line  # stored as a BLOB: a row whose data is no text
        kind = _kind(rel)
        if kind == "session":
            try:
                info = json.loads(line)
                t = info.get("time")
                parent = info.get("parentID")
                conn.execute(
                    "INSERT OR IGNORE INTO session (id, project_id, parent_id, slug, directory,"
                    " title, version, permission, time_created, time_updated)"
                    " VALUES (?, 'p', ?, '', ?, ?, '', ?, ?, 0)",
                    [
                        rel.stem,
                        parent if isinstance(parent, str) else None,
                        str(info.get("directory", "")),
                        str(info.get("title", "")),
                        json.dumps(info["permission"]) if "permission" in info else None,
                        t.get("created") if isinstance(t, dict) else None,
                    ],
                )
            except (ValueError, AttributeError, TypeError, RecursionError, sqlite3.Error):
                pass  # a session row OpenCode could not have written: the session is lost
        elif kind == "message":
            conn.execute(
                "INSERT OR IGNORE INTO message (id, session_id, time_created, time_updated, data)"
                " VALUES (?, ?, 0, 0, ?)",
                [rel.stem, rel.parent.name, text],
            )
        elif kind == "part":
            mid = rel.parent.name
            conn.execute(
                "INSERT OR IGNORE INTO part (id, message_id, session_id, time_created,"
                " time_updated, data) VALUES (?, ?, ?, 0, 0, ?)",
                [rel.stem, mid, message_session.get(mid, ""), text],
            )
    conn.commit()
    conn.close()
    return db


def _protected(turn: Turn, mutated: Mutated, where: dict[int, str]) -> bool:
    intact = {mutated.origin[i] for i in range(len(mutated.lines)) if i not in mutated.damaged}
    if not turn.files <= intact:
        return False
    for i in mutated.damaged:
        rel = Path(where[i])
        if str(rel.parent) in turn.part_dirs:
            return False  # junk or a damaged part joined one of its messages
        if _kind(rel) == "message" and rel.stem > turn.first_message:
            return False  # a later message, maybe re-parented onto this turn
    return True


def _check(connector: OpenCodeConnector, label: str) -> dict[str, list[tuple[str, str]]]:
    try:
        paths = connector.discover()
        days = set().union(*(connector.task_days(p) for p in paths)) if paths else set()
        results = [connector.parse(p) for p in paths]
    except Exception:
        raise AssertionError(f"{label}: an exception escaped:\n{traceback.format_exc()}") from None
    tasks = [t for r in results for t in r.tasks]
    errors = [i for r in results for i in r.issues if i.reason == "parser_error"]
    assert not errors, f"{label}: parser_error {errors}"
    assert days == {t.started_at.date() for t in tasks}, f"{label}: task_days {days}"
    for task in tasks:
        check_storable(task, label)
    return {t.native_id: [(u.prompt, u.outcome) for u in t.turns] for t in tasks}


def _check_turns(
    captured: dict[str, list[tuple[str, str]]],
    mutated: Mutated,
    original: OpenCodeOriginal,
    where: dict[int, str],
    label: str,
) -> None:
    for turn in original.turns:
        if not _protected(turn, mutated, where):
            continue
        held = captured.get(turn.session, [])
        assert (turn.prompt, turn.outcome) in held, (
            f"{label}: intact turn {turn.prompt[:40]!r} of {turn.session} not captured: {held}"
        )


def check_opencode(mutated: Mutated, original: OpenCodeOriginal) -> None:
    label = f"{original.source.name} {mutated.kinds}"
    with tempfile.TemporaryDirectory(prefix="fuzz-opencode-") as tmp:
        where = lay_out(mutated, original, Path(tmp))
        captured = _check(OpenCodeConnector(Path(tmp)), label)
    _check_turns(captured, mutated, original, where, label)


def check_opencode_sqlite(mutated: Mutated, original: OpenCodeOriginal) -> None:
    label = f"{original.source.name} (sqlite) {mutated.kinds}"
    with tempfile.TemporaryDirectory(prefix="fuzz-opencode-db-") as tmp:
        lay_out_sqlite(mutated, original, Path(tmp))
        where = {
            i: original.paths[o] if o is not None else _junk_path(original, i)
            for i, o in enumerate(mutated.origin)
        }
        captured = _check(OpenCodeConnector(Path(tmp)), label)
    _check_turns(captured, mutated, original, where, label)


def check_both(mutated: Mutated, original: OpenCodeOriginal) -> None:
    """The same damaged lines as a JSON store and as a database."""
    check_opencode(mutated, original)
    check_opencode_sqlite(mutated, original)


# scripts/fuzz_capture.py's convention for a registered source (`--parser opencode`).
FIXTURES, original, check = OPENCODE_FIXTURES, opencode_original, check_both
