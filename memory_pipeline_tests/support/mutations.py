"""Hypothesis strategies that turn real transcript lines into malformed, adversarial ones.

Every connector's fuzz suite starts from lines of a real fixture file and damages a few of them
the way files are damaged in the wild: a writer killed mid-line, a disk flipping bytes, an editor
adding a BOM, a tool writing NUL or a lone surrogate, a hostile or broken producer nesting JSON
100,000 deep, changing a field's type, writing a timestamp from year 1 or 9999, or a line of
megabytes; a line cut inside a multi-byte UTF-8 character with lines after it (`cut_multibyte`);
a record whose `cwd` moves to another directory (`move_cwd`). `mutated_file` replaces lines in
place (or inserts junk lines) and says which lines of the result are damaged, so a test can
check that every other line still counts.

Used by the default test run (a few hundred cases) and by `scripts/fuzz_capture.py` (10,000+).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

BOM = b"\xef\xbb\xbf"
# Timestamps at and past the edges of what datetime and PostgreSQL accept.
EDGE_TIMESTAMPS: tuple[Any, ...] = (
    "0001-01-01T00:00:00+01:00",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:59:59.999999Z",
    "1970-01-01T00:00:00Z",
    "2026-02-30T25:61:61Z",
    "",
    "not a time",
    -1,
    0,
    10**20,
    -(10**20),
    1.5e308,
    float("-1e30"),
    None,
    [],
    {},
    True,
)
WRONG_TYPES: tuple[Any, ...] = (None, 0, -1, 2**63, 1.5, True, "", "x", [], [1, [2]], {}, {"a": []})
NASTY_STRINGS: tuple[str, ...] = (
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\ufeff",
    "\u202e\u200b",
    "\r\n\r\n",
    "</memory>",
    "\\u0000",
)
DEEP = 100_000


@dataclass(frozen=True)
class Mutated:
    """The damaged file's lines, which of them are damaged, and where each came from.

    `origin[i]` is the index of the original line that line i is (or was made from), or None for
    an inserted junk line; `damaged` holds the indices (in `lines`) of every line that is not a
    byte-identical copy of its original.
    """

    lines: list[bytes]
    damaged: frozenset[int]
    origin: list[int | None]
    kinds: tuple[str, ...]

    def data(self, trailing_newline: bool = True) -> bytes:
        body = b"\n".join(self.lines)
        return body + b"\n" if trailing_newline and self.lines else body

    def intact(self) -> list[int]:
        """Original indices of lines that survived unchanged."""
        return sorted(
            o for i, o in enumerate(self.origin) if o is not None and i not in self.damaged
        )


def in_order(mutated: Mutated, first: int, end: int, total: int) -> bool:
    """Original lines first..end-1 (and line `end` if it exists) are intact, consecutive and
    undamaged in the mutated file, and a turn that ends the file still ends it (shared by the
    line-oriented fuzz checks: a turn whose lines survived must survive)."""
    wanted = list(range(first, min(end + 1, total)))
    for i, o in enumerate(mutated.origin):
        if o == first:
            span = range(i, i + len(wanted))
            return all(
                j < len(mutated.origin) and mutated.origin[j] == w and j not in mutated.damaged
                for j, w in zip(span, wanted, strict=True)
            ) and (end < total or i + len(wanted) == len(mutated.origin))
    return False


def _json_paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    paths: list[tuple] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            paths.append((*prefix, key))
            paths.extend(_json_paths(value, (*prefix, key)))
    elif isinstance(obj, list):
        for i, value in enumerate(obj[:8]):
            paths.append((*prefix, i))
            paths.extend(_json_paths(value, (*prefix, i)))
    return paths


def _set_path(obj: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _get_path(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _dump(obj: Any) -> bytes:
    # ensure_ascii keeps lone surrogates as \ud800 escapes, exactly as a JSON writer emits them.
    return json.dumps(obj, ensure_ascii=True, allow_nan=True).encode()


_TIME_KEY = re.compile(r"(?i)time|_at$|^ts$|date")


_MULTIBYTE = "\u00fc\u6f22\U0001f642"  # ü (2 bytes), 漢 (3), 🙂 (4) in UTF-8
# Directories a record may move to (`move_cwd`); an exclusion rule for them must match the task.
MOVED_CWDS: tuple[str, ...] = ("/fuzz/moved/elsewhere", "/fuzz/moved/elsewhere/sub")


@st.composite
def _cut_multibyte(draw: st.DrawFn, line: bytes, obj: Any, paths: list[tuple]) -> bytes:
    """The line cut after the first bytes of a multi-byte UTF-8 character, as a writer killed
    mid-character leaves it. A line without one gets one (raw UTF-8) in a string value first."""
    starts = [i for i, b in enumerate(line) if b >= 0xC2 and b <= 0xF4]
    if not starts:
        strings = [p for p in paths if isinstance(_get_path(obj, p), str)]
        if strings:
            obj = json.loads(line)
            where = draw(st.sampled_from(strings))
            text = _get_path(obj, where)
            at = draw(st.integers(0, len(text)))
            _set_path(obj, where, text[:at] + "\x00MB\x00" + text[at:])
            marker = _dump("\x00MB\x00")[1:-1]
            line = _dump(obj).replace(marker, _MULTIBYTE.encode(), 1)
        else:
            at = draw(st.integers(0, len(line)))
            line = line[:at] + _MULTIBYTE.encode() + line[at:]
        starts = [i for i, b in enumerate(line) if b >= 0xC2 and b <= 0xF4]
    start = draw(st.sampled_from(starts))
    width = 2 if line[start] < 0xE0 else 3 if line[start] < 0xF0 else 4
    return line[: start + draw(st.integers(1, width - 1))]


@st.composite
def _mutate_line(draw: st.DrawFn, line: bytes) -> tuple[bytes, str]:
    try:
        obj = json.loads(line)
        paths = _json_paths(obj) if isinstance(obj, dict) else []
    except (ValueError, RecursionError):  # a line already nested deep by an earlier mutation
        obj, paths = None, []
    options: list[str] = [
        "truncate",
        "flip",
        "invalid_utf8",
        "bom",
        "raw_nul",
        "huge_line",
        "cut_multibyte",
    ]
    if paths:
        options += ["wrong_type", "nasty_string", "deep_nesting", "edge_timestamp", "drop_key"]
    if any(p and p[-1] == "cwd" for p in paths):
        options.append("move_cwd")
    kind = draw(st.sampled_from(options))
    if kind == "cut_multibyte":
        return draw(_cut_multibyte(line, obj, paths)), kind
    if kind == "move_cwd":
        obj = json.loads(line)
        where = draw(st.sampled_from([p for p in paths if p and p[-1] == "cwd"]))
        _set_path(obj, where, draw(st.sampled_from(MOVED_CWDS)))
        return _dump(obj), kind
    if kind == "truncate":
        return line[: draw(st.integers(0, max(0, len(line) - 1)))], kind
    if kind == "flip":
        data = bytearray(line or b" ")
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data), kind
    if kind == "invalid_utf8":
        at = draw(st.integers(0, len(line)))
        junk = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80\x80", b"\xf8"]))
        return line[:at] + junk + line[at:], kind
    if kind == "bom":
        return BOM + line, kind
    if kind == "raw_nul":
        at = draw(st.integers(0, len(line)))
        return line[:at] + b"\x00" + line[at:], kind
    if kind == "huge_line":
        size = draw(st.sampled_from([70_000, 1_000_000, 3_000_000]))
        if isinstance(obj, dict):
            obj = dict(obj)
            obj["padding"] = "x" * size
            return _dump(obj), kind
        return line + b"x" * size, kind
    obj = json.loads(line)  # a dict, since paths is non-empty
    path = draw(st.sampled_from(paths))
    if kind == "wrong_type":
        _set_path(obj, path, draw(st.sampled_from(WRONG_TYPES)))
    elif kind == "nasty_string":
        current = _get_path(obj, path)
        nasty = draw(st.sampled_from(NASTY_STRINGS))
        text = current if isinstance(current, str) else ""
        at = draw(st.integers(0, len(text)))
        _set_path(obj, path, text[:at] + nasty + text[at:])
    elif kind == "deep_nesting":
        depth = draw(st.sampled_from([1_000, DEEP]))
        raw = _dump(obj)
        marker = '"__deep__"'
        _set_path(obj, path, "__deep__")
        raw = _dump(obj).replace(marker.encode(), b"[" * depth + b"1" + b"]" * depth, 1)
        return raw, kind
    elif kind == "edge_timestamp":
        time_paths = [p for p in paths if isinstance(p[-1], str) and _TIME_KEY.search(p[-1])]
        _set_path(
            obj, draw(st.sampled_from(time_paths or paths)), draw(st.sampled_from(EDGE_TIMESTAMPS))
        )
    elif kind == "drop_key":
        parent_path = path[:-1]
        parent = _get_path(obj, parent_path) if parent_path else obj
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = None
    return _dump(obj), kind


@st.composite
def mutated_file(
    draw: st.DrawFn, lines: list[bytes], max_mutations: int = 3, allow_insert: bool = True
) -> Mutated:
    """A copy of `lines` with 1..max_mutations lines damaged (and maybe junk lines inserted)."""
    out = list(lines)
    origin: list[int | None] = list(range(len(lines)))
    damaged: set[int] = set()
    kinds: list[str] = []
    for _ in range(draw(st.integers(1, max_mutations))):
        if allow_insert and (not out or draw(st.integers(0, 5)) == 0):
            at = draw(st.integers(0, len(out)))
            source = draw(st.sampled_from(lines)) if lines else b"{}"
            junk, kind = draw(_mutate_line(source))
            out.insert(at, junk)
            origin.insert(at, None)
            damaged = {i + 1 if i >= at else i for i in damaged} | {at}
            kinds.append(f"insert:{kind}")
            continue
        at = draw(st.integers(0, len(out) - 1))
        new, kind = draw(_mutate_line(out[at]))
        if new != out[at]:
            out[at] = new
            damaged.add(at)
            kinds.append(kind)
    return Mutated(out, frozenset(damaged), origin, tuple(kinds))


def fixture_lines(data: bytes) -> list[bytes]:
    """The non-empty lines of a JSONL fixture."""
    return [line for line in data.split(b"\n") if line.strip()]


# For scripts that want to run a strategy outside pytest.
Check = Callable[[Mutated], None]
