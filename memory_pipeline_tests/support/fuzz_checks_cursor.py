"""The Cursor connector's fuzz properties, as functions a test or a script can call.

Two targets (`scripts/fuzz_capture.py --parser cursor|cursor_transcript`):

* `cursor`: a `state.vscdb` store. Its "lines" are the stored values of the fixture's rows, in
  key order (the mutation strategies of `support/mutations.py` damage values, not keys); an
  inserted junk line becomes a row of its own under a `composerData:`/`bubbleId:` key. The
  damaged rows are written into a real `state.vscdb` (WAL mode, Cursor's DDL) and parsed.
* `cursor_transcript`: an `agent-transcripts/<id>.jsonl` file, damaged line by line.

Properties, for a store or file M made from an original O:

1. Nothing escapes: `parse(M)` and `task_days(M)` return, no `parser_error` is recorded, and
   `task_days(M)` holds the start day of every task `parse(M)` returns.
2. Every bad record is recorded: a damaged row that is no longer a JSON object, of a composer
   whose own record is intact, has an issue naming its key.
3. Intact turns are captured verbatim: a turn of O whose rows (its composer's record and every
   bubble of the turn) are byte-identical in M is in `parse(M)` with the same prompt, outcome and
   native turn id. For a transcript, a turn of O whose lines are all intact (and the lines
   around it that end it) is in `parse(M)` with the same prompt and outcome.
4. Everything is storable (`check_storable`).
"""

from __future__ import annotations

import json
import tempfile
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory_pipeline.capture.cursor import CursorConnector
from memory_pipeline.capture.cursor.connector import BUBBLE_PREFIX, COMPOSER_PREFIX
from memory_pipeline.capture.models import ParseResult
from memory_pipeline_tests.support.cursor_store import load_fixture, write_chat_meta, write_vscdb
from memory_pipeline_tests.support.fuzz_checks_chat_import import check_storable
from memory_pipeline_tests.support.mutations import Mutated, fixture_lines

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "memory_pipeline_tests" / "capture" / "data" / "cursor"
CURSOR_FIXTURES: tuple[Path, ...] = (DATA / "global-split.json", DATA / "global-inline.json")
CURSOR_TRANSCRIPT_FIXTURES: tuple[Path, ...] = (DATA / "agent-transcript.jsonl",)
CHAT_ID = "5d1f7b3e-9a2c-4e8f-b1d0-3c4a5b6c7d8e"
END_OF_TIME = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class CursorOriginal:
    name: str
    keys: list[str]
    lines: list[bytes]  # the stored value of each key
    result: ParseResult


def _encode(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _write(root: Path, keys: list[str], values: list[bytes]) -> Path:
    db = root / "User" / "globalStorage" / "state.vscdb"
    return write_vscdb(db, {"cursorDiskKV": dict(zip(keys, values, strict=True))})


def _connector(root: Path) -> CursorConnector:
    return CursorConnector([root / "User", root / "data"], now=lambda: END_OF_TIME)


def cursor_original(source: Path) -> CursorOriginal:
    rows = load_fixture(source.name)["cursorDiskKV"]
    keys = sorted(rows)
    values = [v.encode() if isinstance(v, str) else _encode(v) for v in (rows[k] for k in keys)]
    with tempfile.TemporaryDirectory() as tmp:
        db = _write(Path(tmp), keys, values)
        result = _connector(Path(tmp)).parse(db)
    return CursorOriginal(source.name, keys, values, result)


def _keys_of(mutated: Mutated, original: CursorOriginal) -> list[str]:
    keys, junk = [], 0
    for origin in mutated.origin:
        if origin is None:
            junk += 1
            prefix = BUBBLE_PREFIX if junk % 2 else COMPOSER_PREFIX
            keys.append(f"{prefix}fuzz-junk-{junk}")
        else:
            keys.append(original.keys[origin])
    return keys


def _composer_of(key: str) -> str | None:
    if key.startswith(COMPOSER_PREFIX):
        return key[len(COMPOSER_PREFIX) :]
    if key.startswith(BUBBLE_PREFIX):
        return key[len(BUBBLE_PREFIX) :].split(":", 1)[0]
    return None


def _check_no_escape(connector: CursorConnector, path: Path, label: str) -> ParseResult:
    try:
        result = connector.parse(path)
        days = connector.task_days(path)
    except Exception:
        raise AssertionError(f"{label}: escaped\n{traceback.format_exc()}") from None
    errors = [i for i in result.issues if i.reason == "parser_error"]
    assert not errors, f"{label}: parser_error {errors[0].detail}"
    starts = {t.started_at.date() for t in result.tasks}
    assert starts <= days, f"{label}: task_days {days} misses {starts - days}"
    for task in result.tasks:
        check_storable(task, label)
    return result


def check_cursor(mutated: Mutated, original: CursorOriginal) -> None:
    label = f"{original.name} {mutated.kinds}"
    keys = _keys_of(mutated, original)
    if len(set(keys)) != len(keys):
        return  # a junk row replaced another of the same key: not a store Cursor can write
    with tempfile.TemporaryDirectory() as tmp:
        db = _write(Path(tmp), keys, list(mutated.lines))
        result = _check_no_escape(_connector(Path(tmp)), db, label)
    damaged_keys = {keys[i] for i in mutated.damaged}
    intact_composers = {
        c
        for c in (_composer_of(k) for k in keys)
        if c and f"{COMPOSER_PREFIX}{c}" not in damaged_keys
    }
    # 2. every bad record of an intact composer is recorded
    recorded = " ".join(i.detail for i in result.issues)
    for i in mutated.damaged:
        key = keys[i]
        cid = _composer_of(key)
        if cid is None or (key.startswith(BUBBLE_PREFIX) and cid not in intact_composers):
            continue
        if not _is_object(mutated.lines[i]):
            if key.startswith(BUBBLE_PREFIX) and not _referenced(original, cid, key):
                continue  # a row no header names is never read
            assert key in recorded or key.split(":")[-1] in recorded, (
                f"{label}: damaged {key} not recorded ({[x.reason for x in result.issues]})"
            )
    # 3. intact turns verbatim
    got = {
        (t.native_id, turn.native_turn_id): (turn.prompt, turn.outcome)
        for t in result.tasks
        for turn in t.turns
    }
    for task in original.result.tasks:
        if f"{COMPOSER_PREFIX}{task.native_id}" in damaged_keys:
            continue
        groups = _groups(original, task.native_id)
        for turn in task.turns:
            members = groups.get(turn.native_turn_id or "", [])
            keys_of_turn = {f"{BUBBLE_PREFIX}{task.native_id}:{b}" for b in members}
            if keys_of_turn & damaged_keys:
                continue
            assert got.get((task.native_id, turn.native_turn_id)) == (turn.prompt, turn.outcome), (
                f"{label}: intact turn {turn.native_turn_id} of {task.native_id} lost or changed"
            )


def _is_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except (ValueError, RecursionError):
        return False


def _composer(original: CursorOriginal, cid: str) -> dict:
    return json.loads(original.lines[original.keys.index(f"{COMPOSER_PREFIX}{cid}")])


def _referenced(original: CursorOriginal, cid: str, key: str) -> bool:
    try:
        headers = _composer(original, cid).get("fullConversationHeadersOnly") or []
    except (ValueError, KeyError):
        return False
    return any(h.get("bubbleId") == key.split(":")[-1] for h in headers if isinstance(h, dict))


def _groups(original: CursorOriginal, cid: str) -> dict[str, list[str]]:
    """user bubble id -> the bubble ids of its turn (headers up to the next user bubble)."""
    headers = _composer(original, cid).get("fullConversationHeadersOnly") or []
    groups: dict[str, list[str]] = {}
    current = None
    for h in headers:
        if h.get("type") == 1:
            current = h["bubbleId"]
            groups[current] = [current]
        elif current is not None:
            groups[current].append(h["bubbleId"])
    return groups


# --- agent transcripts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TranscriptOriginal:
    name: str
    lines: list[bytes]
    result: ParseResult


def _transcript_home(root: Path, data: bytes) -> tuple[CursorConnector, Path]:
    path = root / "data" / "projects" / "p" / "agent-transcripts" / CHAT_ID / f"{CHAT_ID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    write_chat_meta(root / "data", "0" * 32, CHAT_ID, {"createdAt": 1791273600000})
    return _connector(root), path


def transcript_original(source: Path) -> TranscriptOriginal:
    lines = fixture_lines(source.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        connector, path = _transcript_home(Path(tmp), b"\n".join(lines) + b"\n")
        result = connector.parse(path)
    return TranscriptOriginal(source.name, lines, result)


def check_cursor_transcript(mutated: Mutated, original: TranscriptOriginal) -> None:
    label = f"{original.name} {mutated.kinds}"
    with tempfile.TemporaryDirectory() as tmp:
        connector, path = _transcript_home(Path(tmp), mutated.data())
        result = _check_no_escape(connector, path, label)
    got = [(t.prompt, t.outcome) for task in result.tasks for t in task.turns]
    intact = set(mutated.intact())
    for turn in (t for task in original.result.tasks for t in task.turns):
        first = int(turn.native_message_ids[0][1:]) - 1
        last = _turn_end(original, first)
        if all(i in intact for i in range(first, last + 1)) and not _inserted_within(
            mutated, first, last
        ):
            assert (turn.prompt, turn.outcome) in got, f"{label}: intact turn {turn.prompt!r} lost"


def _turn_end(original: TranscriptOriginal, first: int) -> int:
    """The index of the line that ends the turn starting at `first` (its turn_ended)."""
    for i in range(first + 1, len(original.lines)):
        obj = json.loads(original.lines[i])
        if obj.get("type") == "turn_ended" or obj.get("role") == "user":
            return i
    return len(original.lines) - 1


def _inserted_within(mutated: Mutated, first: int, last: int) -> bool:
    """A junk line was inserted between the turn's first and last original line."""
    positions = [i for i, o in enumerate(mutated.origin) if o is not None and first <= o <= last]
    if not positions:
        return True
    return any(mutated.origin[i] is None for i in range(positions[0], positions[-1] + 1))


# --- the convention of scripts/fuzz_capture.py (`--parser cursor`): both targets in one -----------

FIXTURES: tuple[Path, ...] = (*CURSOR_FIXTURES, *CURSOR_TRANSCRIPT_FIXTURES)


def original(path: Path) -> CursorOriginal | TranscriptOriginal:
    return transcript_original(path) if path.suffix == ".jsonl" else cursor_original(path)


def check(mutated: Mutated, original: CursorOriginal | TranscriptOriginal) -> None:
    if isinstance(original, TranscriptOriginal):
        check_cursor_transcript(mutated, original)
    else:
        check_cursor(mutated, original)
