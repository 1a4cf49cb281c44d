"""Property-based fuzzing of the OpenCode and Aider connectors over damaged copies of their
fixtures (issue 32): nothing escapes, task_days agrees with parse, every intact turn is captured
verbatim, everything is storable (support/fuzz_checks_opencode.py, fuzz_checks_aider.py). A few
dozen cases each here; `scripts/fuzz_capture.py --parser opencode|opencode_sqlite|aider` runs
10,000+."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.support.fuzz_checks_aider import (
    AIDER_FIXTURES,
    aider_original,
    check_aider,
)
from memory_pipeline_tests.support.fuzz_checks_opencode import (
    OPENCODE_FIXTURES,
    check_opencode,
    check_opencode_sqlite,
    opencode_original,
)
from memory_pipeline_tests.support.mutations import Mutated, mutated_file

OPENCODE = [opencode_original(p) for p in OPENCODE_FIXTURES]
AIDER = [aider_original(p) for p in AIDER_FIXTURES]
FUZZ = settings(
    deadline=None,
    derandomize=True,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def undamaged(lines: list[bytes]) -> Mutated:
    return Mutated(list(lines), frozenset(), list(range(len(lines))), ())


def test_the_fixtures_give_the_properties_something_to_check() -> None:
    assert [len(o.turns) for o in OPENCODE] == [5, 2]
    assert [len(a.turns) for a in AIDER] == [5, 3]  # the fixture, the demo history
    for o in OPENCODE:
        check_opencode(undamaged(o.lines), o)
        check_opencode_sqlite(undamaged(o.lines), o)
    for a in AIDER:
        check_aider(undamaged(a.lines), a)


@settings(FUZZ, max_examples=12)  # each case lays out a store twice (JSON files, a database)
@given(st.data())
def test_damaged_opencode_stores(data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(OPENCODE))
    mutated = data.draw(mutated_file(original.lines))
    check_opencode(mutated, original)
    check_opencode_sqlite(mutated, original)


@FUZZ
@given(st.data())
def test_damaged_aider_histories(data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(AIDER))
    check_aider(data.draw(mutated_file(original.lines)), original)
