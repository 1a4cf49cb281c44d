"""Property-based fuzzing of the chat import over damaged copies of real exports (issue 10).

Hypothesis damages one to three lines of an export (truncation, byte flips, invalid UTF-8, BOM,
NUL, lone surrogates, nesting 1,000 or 100,000 deep, wrong JSON types, edge timestamps, dropped
keys, lines of 70 KB to 3 MB, inserted junk lines; see support/mutations.py) and
`check_chat_import` checks the properties stated in support/fuzz_checks_chat_import.py: nothing
escapes, task_days agrees with parse, every intact line's message is in a turn of its
conversation (with the quiet rule, an unanswered prompt counts too), and everything the store
would write is storable. A smaller run stores the damaged files in the real database.
`scripts/fuzz_capture.py --parser chat_import` runs the same check for 10,000+ cases.
"""

from __future__ import annotations

import dataclasses
import tempfile
from datetime import date
from pathlib import Path

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.capture.ingest import capture_window
from memory_pipeline_tests.support.fuzz_checks_chat_import import (
    CHAT_IMPORT_FIXTURES,
    ChatImportOriginal,
    chat_import_original,
    check_chat_import,
    connector,
)
from memory_pipeline_tests.support.mutations import Mutated, mutated_file

ORIGINALS = [chat_import_original(path) for path in CHAT_IMPORT_FIXTURES]
FUZZ = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def undamaged(original: ChatImportOriginal) -> Mutated:
    n = len(original.lines)
    return Mutated(list(original.lines), frozenset(), list(range(n)), ())


def test_the_fixtures_give_the_properties_something_to_check() -> None:
    assert sum(len(o.lines) >= 9 for o in ORIGINALS) >= 3
    for original in ORIGINALS:
        check_chat_import(undamaged(original), original)
    # The hand-written file ends both of its conversations on an unanswered prompt: the
    # property's "every message counts" rests on the quiet rule turning them into turns.
    endings = ORIGINALS[-1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "e.jsonl"
        path.write_bytes(undamaged(endings).data())
        tasks = connector(Path(tmp)).parse(path).tasks
    assert [t.turns[-1].unanswered for t in tasks] == [True, True]


def test_check_chat_import_fails_when_an_intact_message_is_missing() -> None:
    original = ORIGINALS[0]
    task_id, _, message_id = original.messages[0]
    wrong = dataclasses.replace(
        original, messages=[(task_id, "never said", message_id), *original.messages[1:]]
    )
    with pytest.raises(AssertionError, match="in no turn"):
        check_chat_import(undamaged(original), wrong)


@settings(FUZZ, max_examples=300)
@given(st.data())
def test_damaged_exports_keep_every_intact_message(data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(ORIGINALS))
    check_chat_import(data.draw(mutated_file(original.lines)), original)


@settings(FUZZ, max_examples=40, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_damaged_exports_are_stored_without_a_failure(
    conn: psycopg.Connection, data: st.DataObject
) -> None:
    """The same damage through the real store, one database across the examples (so the same
    conversations are refreshed again and again): no task or file fails to store."""
    original = data.draw(st.sampled_from(ORIGINALS))
    mutated = data.draw(mutated_file(original.lines))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "export.jsonl").write_bytes(mutated.data())
        report = capture_window(conn, [connector(Path(tmp))], date.min, date.max)
    assert "store_failed" not in report.skipped_tasks, mutated.kinds
    assert not {"store_failed", "task_days_failed"} & set(report.file_issues), mutated.kinds
