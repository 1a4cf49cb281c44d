"""Property-based tests: damaged copies of the Kiro fixtures never fail a run.

`support/fuzz_checks_kiro.py` states the properties (nothing escapes, every bad line or row is
recorded, intact turns and rows are captured exactly, no turn holds text of two turns);
`scripts/fuzz_capture.py --parser kiro_cli|kiro_cli_store|kiro_ide` runs them for 10,000 cases.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.support import fuzz_checks_kiro as kiro
from memory_pipeline_tests.support.mutations import mutated_file

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SESSIONS = [kiro.session_original(p) for p in kiro.KIRO_CLI_FIXTURES]
STORE = kiro.store_original(kiro.KIRO_STORE_FIXTURES[0])
IDE = [kiro.ide_original(p) for p in kiro.KIRO_IDE_FIXTURES]


@FUZZ
@given(st.data())
def test_damaged_kiro_cli_sessions(data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(SESSIONS))
    kiro.check_kiro_cli(data.draw(mutated_file(original.lines)), original)


@settings(FUZZ, max_examples=15)
@given(st.data())
def test_damaged_kiro_cli_store_rows(data: st.DataObject) -> None:
    kiro.check_kiro_cli_store(data.draw(mutated_file(STORE.lines, allow_insert=False)), STORE)


@FUZZ
@given(st.data())
def test_damaged_kiro_ide_sessions(data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(IDE))
    kiro.check_kiro_ide(data.draw(mutated_file(original.lines)), original)
