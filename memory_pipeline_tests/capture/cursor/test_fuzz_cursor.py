"""Property-based fuzzing of the Cursor connector over damaged copies of its fixtures.

The properties are in support/fuzz_checks_cursor.py; `scripts/fuzz_capture.py --parser cursor`
and `--parser cursor_transcript` run the same checks for 10,000+ cases.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.support.fuzz_checks_cursor import (
    CURSOR_FIXTURES,
    CURSOR_TRANSCRIPT_FIXTURES,
    check_cursor,
    check_cursor_transcript,
    cursor_original,
    transcript_original,
)
from memory_pipeline_tests.support.mutations import mutated_file

STORES = [cursor_original(p) for p in CURSOR_FIXTURES]
TRANSCRIPTS = [transcript_original(p) for p in CURSOR_TRANSCRIPT_FIXTURES]


def test_the_fixtures_give_the_properties_something_to_check():
    assert sum(len(t.turns) for o in STORES for t in o.result.tasks) >= 10
    assert sum(len(t.turns) for o in TRANSCRIPTS for t in o.result.tasks) == 2


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_damaged_stores(data):
    original = data.draw(st.sampled_from(STORES))
    check_cursor(data.draw(mutated_file(original.lines)), original)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_damaged_transcripts(data):
    original = data.draw(st.sampled_from(TRANSCRIPTS))
    check_cursor_transcript(data.draw(mutated_file(original.lines)), original)
