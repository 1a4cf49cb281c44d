"""The streaming JSONL reader every connector uses: bounded memory, bad lines as issues."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from memory_pipeline.capture import jsonl
from memory_pipeline.capture.jsonl import JsonlRead, iter_jsonl


def read_all(path: Path) -> tuple[list[tuple[int, dict]], JsonlRead]:
    read = JsonlRead(path)
    return list(iter_jsonl(path, read)), read


def test_a_large_file_is_streamed_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = json.dumps({"type": "event", "text": "x" * 10_000}) + "\n"
    with path.open("w") as fh:
        for _ in range(3_000):  # about 30 MB
            fh.write(line)
    tracemalloc.start()
    count = sum(1 for _ in iter_jsonl(path, JsonlRead(path)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 3_000
    assert peak < 8 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB for a 30 MB file"


def test_bad_lines_become_issues_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        b'{"a": 1}\nnot json\n\xff\xfe\x00binary\n[1, 2]\n{"a": 2}\n{"a": 3, "cut": "in the mid'
    )
    records, read = read_all(path)
    assert [r for _, r in records] == [{"a": 1}, {"a": 2}]
    assert [(i.line, i.reason) for i in read.issues] == [
        (2, "invalid_json"),
        (3, "binary"),
        (4, "invalid_json"),
        (6, "truncated_line"),
    ]


def test_a_complete_last_line_without_newline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "last.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}')
    records, read = read_all(path)
    assert [r for _, r in records] == [{"a": 1}, {"a": 2}] and not read.issues


def test_an_overlong_line_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(jsonl, "_CHUNK", 64)
    path = tmp_path / "long.jsonl"
    path.write_text('{"a": 1}\n' + json.dumps({"b": "y" * 500}) + '\n{"a": 2}\n')
    records, read = read_all(path)
    assert [r for _, r in records] == [{"a": 1}, {"a": 2}]
    assert [(i.line, i.reason) for i in read.issues] == [(2, "line_too_long")]


def test_an_append_during_the_read_is_left_for_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n')
    read = JsonlRead(path)
    seen = []
    for _, record in iter_jsonl(path, read):
        seen.append(record)
        if len(seen) == 1:
            with path.open("a") as fh:
                fh.write('{"a": 3}\n')
    assert seen == [{"a": 1}, {"a": 2}] and not read.issues
    assert [r for _, r in read_all(path)[0]] == [{"a": 1}, {"a": 2}, {"a": 3}]


def test_a_file_truncated_during_the_read_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "rewritten.jsonl"
    path.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(200_000)))
    read = JsonlRead(path)
    for _, record in iter_jsonl(path, read):
        if record["n"] == 0:
            path.write_text('{"n": -1}\n')  # the writer replaced the file's content
    assert any(i.reason == "changed_while_reading" for i in read.issues)


def test_empty_unreadable_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    directory = tmp_path / "a-directory.jsonl"
    directory.mkdir()
    for path, reason in (
        (empty, "empty_file"),
        (directory, "not_a_regular_file"),  # never read (capture/files.py)
        (tmp_path / "gone.jsonl", "unreadable"),
    ):
        records, read = read_all(path)
        assert records == [] and [i.reason for i in read.issues] == [reason]


def test_a_line_nested_too_deep_is_a_recorded_skip(tmp_path: Path) -> None:
    """json.loads raises RecursionError (not a JSONDecodeError) on 100,000 nested arrays: it
    must cost that line only, never the file or the run (issue 10)."""
    path = tmp_path / "deep.jsonl"
    deep = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    path.write_bytes(b'{"a": 1}\n' + deep + b'\n{"a": 2}\n')
    records, read = read_all(path)
    assert [r for _, r in records] == [{"a": 1}, {"a": 2}]
    assert [(i.line, i.reason) for i in read.issues] == [(2, "too_deep")]


def test_a_utf8_bom_is_tolerated(tmp_path: Path) -> None:
    """Editors and Windows tools put a BOM before the first line (or before a line they
    appended): the record behind it is still read."""
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n{"a": 2}\n\xef\xbb\xbf{"a": 3}\n')
    records, read = read_all(path)
    assert [r for _, r in records] == [{"a": 1}, {"a": 2}, {"a": 3}] and not read.issues


def test_a_number_too_long_to_convert_is_an_invalid_line(tmp_path: Path) -> None:
    """json.loads raises a plain ValueError (not JSONDecodeError) past 4,300 digits."""
    path = tmp_path / "digits.jsonl"
    path.write_text('{"a": 1}\n{"n": ' + "9" * 5000 + '}\n{"a": 2}\n')
    records, read = read_all(path)
    assert [r for _, r in records] == [{"a": 1}, {"a": 2}]
    assert [(i.line, i.reason) for i in read.issues] == [(2, "invalid_json")]
