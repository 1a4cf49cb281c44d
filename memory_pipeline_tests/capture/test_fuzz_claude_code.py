"""Property-based tests: damaged copies of real Claude Code transcripts never fail a run.

Hypothesis damages one to three lines of each fixture (or inserts junk lines made from them), see
`support/mutations.py`, and `support/fuzz_checks_claude_code.check_claude_code` checks the
property stated in that module: nothing escapes but recorded skips, the task survives while
what identifies it survives, and every complete turn whose chain suffix is intact is captured
exactly. `scripts/fuzz_capture.py` runs the same check for 10,000+ cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.capture.claude_code import connector as connector_module
from memory_pipeline.capture.claude_code.turns import TurnBuild
from memory_pipeline_tests.support.fuzz_checks_claude_code import (
    CLAUDE_CODE_FIXTURES,
    OriginalTurns,
    check_claude_code,
    original_turns,
)
from memory_pipeline_tests.support.mutations import Mutated, mutated_file

# A few hundred cases in all (100 per fixture, about 15 s), reproducible in CI.
CASES_PER_FIXTURE = 100
FUZZ = settings(
    max_examples=CASES_PER_FIXTURE,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("fixture", CLAUDE_CODE_FIXTURES, ids=lambda p: p.name[:16])
def test_damaged_transcripts_keep_every_intact_turn(fixture: Path) -> None:
    original = original_turns(fixture)

    @FUZZ
    @given(st.data())
    def run(data: st.DataObject) -> None:
        check_claude_code(data.draw(mutated_file(original.lines)), original)

    run()


def test_the_fixtures_have_turns_to_protect() -> None:
    """The property is only as strong as its inputs: most fixtures carry complete turns."""
    counts = {p.name: len(original_turns(p).turns()) for p in CLAUDE_CODE_FIXTURES}
    assert counts["4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"] == 3
    assert counts["agent-aac57f5.jsonl"] == 1 and counts["agent-showcol1.jsonl"] == 1
    assert counts["0fa0246b-c0af-4dcb-ba29-2c9a6e43758d.jsonl"] >= 3
    assert counts["agent-36541525.jsonl"] == 0  # a warmup: only identity is checked


def _original(name: str) -> OriginalTurns:
    return original_turns(next(p for p in CLAUDE_CODE_FIXTURES if p.name == name))


def _only(original: OriginalTurns, index: int, new: bytes) -> Mutated:
    lines = list(original.lines)
    lines[index] = new
    return Mutated(lines, frozenset({index}), list(range(len(lines))), ("hand",))


def test_the_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that cannot fail proves nothing: a connector that loses or alters an intact turn
    (simulated by wrapping its turn builder) is caught on a harmless damage."""
    main = _original("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
    harmless = _only(main, 2, b"{junk")  # turn one's narration, before its tool calls
    check_claude_code(harmless, main)
    real = connector_module.build_turns

    def losing(*args: Any, **kwargs: Any) -> TurnBuild:
        build = real(*args, **kwargs)
        return TurnBuild(build.turns[:-1], build.unfinished, build.first_prompt, build.prompts)

    monkeypatch.setattr(connector_module, "build_turns", losing)
    with pytest.raises(AssertionError, match="lost the intact turn"):
        check_claude_code(harmless, main)

    def altering(*args: Any, **kwargs: Any) -> TurnBuild:
        build = real(*args, **kwargs)
        build.turns[-1] = build.turns[-1].model_copy(update={"outcome": "something else"})
        return build

    monkeypatch.setattr(connector_module, "build_turns", altering)
    with pytest.raises(AssertionError, match="turn changed"):
        check_claude_code(harmless, main)
