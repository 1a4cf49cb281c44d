"""A damaged copy of a task in a second file, captured into a real database: never merged
silently, no stored turn with text of another turn, a second run changes nothing
(`support/fuzz_checks_store.py`, S1-S5). A dozen cases each here; `make fuzz` runs thousands."""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.capture import store
from memory_pipeline_tests.support.fuzz_checks_chat_import import (
    CHAT_IMPORT_FIXTURES,
    chat_import_original,
)
from memory_pipeline_tests.support.fuzz_checks_codex import CODEX_FIXTURES, codex_original
from memory_pipeline_tests.support.fuzz_checks_store import (
    check_chat_import_store,
    check_codex_store,
)
from memory_pipeline_tests.support.mutations import Mutated, mutated_file

CHATS = [chat_import_original(path) for path in CHAT_IMPORT_FIXTURES]
ROLLOUTS = [codex_original(path) for path in CODEX_FIXTURES]
FUZZ = settings(
    max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


def _same(lines: list[bytes]) -> Mutated:
    return Mutated(list(lines), frozenset(), list(range(len(lines))), ())


@FUZZ
@given(st.data())
def test_a_damaged_chat_export_copy_is_kept_apart_and_recorded(
    conn: psycopg.Connection, data: st.DataObject
) -> None:
    original = data.draw(st.sampled_from(CHATS))
    check_chat_import_store(conn, data.draw(mutated_file(original.lines)), original)


@FUZZ
@given(st.data())
def test_a_damaged_codex_rollout_copy_is_a_recorded_conflict(
    conn: psycopg.Connection, data: st.DataObject
) -> None:
    original = data.draw(st.sampled_from(ROLLOUTS))
    check_codex_store(conn, data.draw(mutated_file(original.lines)), original)


def test_the_store_check_fails_when_a_copy_is_merged_silently(
    conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the conflict rule (the old behaviour) S4 fails: the check can fail."""
    monkeypatch.setattr(store, "_claim", lambda _conn, _task, native_id, _path: native_id)
    with pytest.raises(AssertionError, match="S4"):
        check_chat_import_store(conn, _same(CHATS[0].lines), CHATS[0])
