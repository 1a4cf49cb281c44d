"""Property-based fuzzing of the Codex connector over damaged copies of real rollouts (issue 10).

Hypothesis damages one to three lines of a real fixture (truncation, byte flips, invalid UTF-8,
BOM, NUL, lone surrogates, nesting 1,000 or 100,000 deep, wrong JSON types, edge timestamps,
dropped keys, lines of 70 KB to 3 MB, inserted junk lines; see support/mutations.py) and
`check_codex` checks the properties P1-P4 stated in support/fuzz_checks_codex.py: nothing
escapes, no file-level failure, the task survives an intact session meta, task_days agrees with
parse, and every turn whose lines are all intact is captured with the same prompt and outcome.
`scripts/fuzz_capture.py` runs the same check for 10,000+ cases.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.support.fuzz_checks_codex import (
    CODEX_FIXTURES,
    CodexOriginal,
    check_codex,
    codex_original,
)
from memory_pipeline_tests.support.mutations import Mutated, mutated_file

ORIGINALS = [codex_original(path) for path in CODEX_FIXTURES]


def undamaged(original: CodexOriginal) -> Mutated:
    n = len(original.lines)
    return Mutated(list(original.lines), frozenset(), list(range(n)), ())


def test_the_fixtures_give_the_properties_something_to_check():
    assert len(ORIGINALS) == 3
    # Every fixture has at least one explicit turn whose lines P4 can follow...
    assert all(original.spans for original in ORIGINALS)
    exec_session = next(o for o in ORIGINALS if o.name == "turn-2.synthetic-exec.jsonl")
    # ...and the spans are the turns' lines: task_started .. task_complete (0-based indices).
    spans = sorted(exec_session.spans.values(), key=lambda span: span.first)
    assert [(span.first, span.last) for span in spans] == [(1, 12), (13, 24)]
    # Of the first turn only task_started, user_message, the answer (event and item) and
    # task_complete are its lines; context, reasoning and token counts are inert.
    assert spans[0].relevant == {1, 6, 9, 10, 12}
    for original in ORIGINALS:
        check_codex(undamaged(original), original)


def test_check_codex_fails_when_an_intact_turn_is_missing():
    original = ORIGINALS[0]
    turn = original.task.turns[0]
    changed = original.task.model_copy(
        update={"turns": [turn.model_copy(update={"outcome": turn.outcome + " (changed)"})]}
    )
    wrong = dataclasses.replace(original, task=changed)
    with pytest.raises(AssertionError, match="P4"):
        check_codex(undamaged(original), wrong)


# 300 cases, the same ones on every run (derandomized, no example database): about 7 s here.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # 3 MB lines' repr
@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_damaged_real_rollouts_keep_every_intact_turn(data: st.DataObject):
    original = data.draw(st.sampled_from(ORIGINALS))
    check_codex(data.draw(mutated_file(original.lines)), original)
