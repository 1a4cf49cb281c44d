"""The offline semantic pass on real sessions labelled by hand (evaluation/real_sessions/).

The labels were written before the rules were tuned on these sessions. Zero scaffolding titles
(a target of issue 36) is asserted; the other targets (boundary F1 >= 0.75 at one turn of
tolerance, decision precision >= 0.8 and recall >= 0.7) are NOT met on the 154 labelled turns
(README, "Semantic pass on real sessions"): the figures asserted are the measured ones, as floors
against regression, measured by the same code `memory-pipeline eval --semantic` prints. The
first ten sessions (52 turns), on which the rules were tuned, keep their targets.
"""

from __future__ import annotations

import pytest

from memory_pipeline import tuning
from memory_pipeline.semantic import evaluation as sem
from memory_pipeline.semantic.models import PassInput, TurnInput, validate_result
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend

GOLD = sem.REAL_SESSIONS_GOLD
LONG = "cctrace-2025-07-02-export-tool"  # 18 turns, five labelled topics


@pytest.fixture(scope="module")
def backend() -> OfflineRulesBackend:
    from memory_pipeline.embedding.minilm import get_minilm

    return OfflineRulesBackend(embedder=get_minilm())


@pytest.fixture(scope="module")
def sessions() -> dict[str, tuple[sem.GoldSession, list]]:
    return {s.id: (s, sem.read_turns(s, GOLD.parent)) for s in sem.load_gold(GOLD)}


def _boundaries(backend: OfflineRulesBackend, pass_input: PassInput) -> list[int]:
    result = validate_result(pass_input, backend.run(pass_input))
    return [s.first_ordinal for s in result.segments if s.first_ordinal > 0]


def test_every_labelled_session_reads_the_labelled_number_of_turns(sessions):
    for gold, turns in sessions.values():
        assert len(turns) == gold.turns, gold.id
    assert sum(g.turns for g, _ in sessions.values()) >= 40


def test_the_long_real_session_is_cut_where_labelled(backend, sessions):
    gold, turns = sessions[LONG]
    predicted = _boundaries(backend, sem.pass_input(gold, turns))
    labelled = [s.first_turn for s in gold.segments if s.first_turn > 0]
    counts = sem.match_boundaries(predicted, labelled, sem.BOUNDARY_TOLERANCE)
    # Before issue 36 the whole session was one segment (no boundary at all).
    assert counts.tp >= 2 and counts.fp == 0, (predicted, labelled)


def test_boundaries_are_stable_when_the_same_turns_are_processed_again(backend, sessions):
    gold, turns = sessions[LONG]
    pass_input = sem.pass_input(gold, turns)
    first = validate_result(pass_input, backend.run(pass_input))
    again = validate_result(pass_input, backend.run(pass_input))
    assert first == again


def test_appended_turns_continue_the_tail_segment_unless_their_purpose_changes(backend, sessions):
    gold, turns = sessions[LONG]
    whole = _boundaries(backend, sem.pass_input(gold, turns))
    # Turns 0-9 were processed by an earlier run; its last segment is the tail of this one.
    earlier = sem.pass_input(gold, turns[:10])
    stored = validate_result(earlier, backend.run(earlier))
    tail = stored.segments[-1]
    later = PassInput(
        source=earlier.source,
        tail_context=[t for t in earlier.new_turns if t.ordinal >= tail.first_ordinal],
        new_turns=sem.pass_input(gold, turns).new_turns[10:],
    )
    result = validate_result(later, backend.run(later))
    # Turn 10 ("please copy the xml file ...") goes on with the XML work of the tail segment...
    assert result.segments[0].continues_tail
    # ...and the later topics start where one pass over all turns starts them.
    assert [s.first_ordinal for s in result.segments[1:]] == [b for b in whole if b > 10]


def test_the_real_sessions_keep_their_measured_figures(backend):
    report = sem.evaluate(GOLD, backend)
    assert report.turns >= 150
    assert report.scaffolding_titles == 0
    assert report.memory_scaffolding_titles == 0
    # Measured at 154 turns: boundary F1 0.57 (P 0.88, R 0.42), decisions 0.69 / 0.35, insights
    # 0.56 / 0.37 (0.48, 0.50 / 0.27 and 0.56 / 0.37 before the rules were changed for them).
    assert report.boundary_f1 is not None and report.boundary_f1 >= 0.55, report.boundary_f1
    decisions, insights = report.by_type["decision"], report.by_type["insight"]
    assert decisions["precision"] is not None and decisions["precision"] >= 0.65, decisions
    assert decisions["recall"] is not None and decisions["recall"] >= 0.33, decisions
    assert insights["precision"] is not None and insights["precision"] >= 0.55, insights
    assert insights["recall"] is not None and insights["recall"] >= 0.35, insights


def test_the_sessions_the_rules_were_tuned_on_meet_the_issue_targets(backend, tmp_path):
    # The first ten lines of the gold set (52 turns), labelled before the first rule change.
    lines = GOLD.read_text(encoding="utf-8").splitlines()[:10]
    for folder in GOLD.parent.iterdir():  # session paths are relative to the gold file
        if folder.is_dir():
            (tmp_path / folder.name).symlink_to(folder)
    first = tmp_path / "gold.jsonl"
    first.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = sem.evaluate(first, backend)
    assert report.turns == 52
    assert report.boundary_f1 is not None and report.boundary_f1 >= 0.75, report.boundary_f1
    assert report.scaffolding_titles == 0
    decisions = report.by_type["decision"]
    assert decisions["precision"] is not None and decisions["precision"] >= 0.8, decisions
    assert decisions["recall"] is not None and decisions["recall"] >= 0.7, decisions


def test_a_long_run_without_an_evident_boundary_is_cut_at_the_documented_maximum():
    turns = [
        TurnInput(
            ordinal=i,
            prompt=f"still failing on the parser fixture, attempt {i}: check the retry loop again",
            outcome=f"Looked at the retry loop of the parser fixture again (attempt {i}).",
        )
        for i in range(30)
    ]
    pass_input = PassInput(source="codex", new_turns=turns)
    result = validate_result(pass_input, OfflineRulesBackend().run(pass_input))
    lengths = [s.last_ordinal - s.first_ordinal + 1 for s in result.segments]
    assert max(lengths) <= tuning.SEGMENT_MAX_TURNS, lengths
    assert len(result.segments) == 3
    assert result == OfflineRulesBackend().run(pass_input)
