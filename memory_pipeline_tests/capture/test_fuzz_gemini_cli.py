"""Property-based tests: damaged copies of the Gemini CLI session logs never fail a run.

`support/fuzz_checks_gemini_cli.py` states the properties (nothing escapes, every bad line is
recorded, intact turns are captured exactly, no turn holds text of two turns);
`scripts/fuzz_capture.py --parser gemini_cli` runs them for 10,000 cases.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.support import fuzz_checks_gemini_cli as gemini
from memory_pipeline_tests.support.mutations import mutated_file

ORIGINALS = [gemini.original(p) for p in gemini.FIXTURES]


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_damaged_gemini_cli_logs(data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(ORIGINALS))
    gemini.check(data.draw(mutated_file(original.lines)), original)
