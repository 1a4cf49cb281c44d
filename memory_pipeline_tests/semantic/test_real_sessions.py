"""The offline semantic pass on real sessions labelled by hand (evaluation/real_sessions/).

The labels were written before the rules were tuned on these sessions. Zero scaffolding titles
(a target of issue 36) is asserted; the other targets (boundary F1 >= 0.75 at one turn of
tolerance, decision precision >= 0.8 and recall >= 0.7) are NOT met on the 154 labelled turns
(README, "Semantic pass on real sessions"): the figures asserted are the measured ones, as floors
against regression, measured by the same code `memory-pipeline eval --semantic` prints, for all
sessions and for the two halves of the second round (tuned on / held out). The first ten
sessions (52 turns), on which the rules were first tuned, keep their targets.
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


OLD_LINES = 24  # the gold lines of the first three rounds (154 turns); later lines are held out


def _gold_subset(tmp_path, lines: list[str]):
    """A gold file holding `lines`, beside links to the session folders (paths are relative)."""
    for folder in GOLD.parent.iterdir():
        if folder.is_dir():
            (tmp_path / folder.name).symlink_to(folder)
    subset = tmp_path / "gold.jsonl"
    subset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subset


def _gold_lines() -> list[str]:
    return [line for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]


def _half(report: sem.SemanticEvalReport, ids: set[str]) -> tuple[sem.Counts, sem.Counts]:
    """Boundary (one turn of tolerance) and decision counts of the sessions `ids`, from the
    per-session report of one evaluation."""
    boundaries, decisions = sem.Counts(), sem.Counts()
    for s in report.per_session:
        if s.id not in ids:
            continue
        boundaries.add(
            sem.match_boundaries(s.predicted_boundaries, s.gold_boundaries, sem.BOUNDARY_TOLERANCE)
        )
        found = [m for m in s.memories if m["type"] == "decision"]
        decisions.add(
            sem.Counts(
                tp=sum(m["matched"] is not None for m in found),
                fp=sum(m["matched"] is None for m in found),
                fn=sum(m["type"] == "decision" for m in s.missed),
            )
        )
    return boundaries, decisions


def test_the_real_sessions_keep_their_measured_figures(backend, tmp_path):
    lines = _gold_lines()[:OLD_LINES]
    report = sem.evaluate(_gold_subset(tmp_path, lines), backend)
    assert report.turns == 154
    assert report.scaffolding_titles == 0
    assert report.memory_scaffolding_titles == 0
    # Measured at 154 turns after the fourth round (issue 36, purpose rules: the next request
    # after work reported done, a pasted new error): boundary F1 0.65 (P 0.89, R 0.52). After
    # the third: boundary F1 0.63 (P 0.89, R 0.48), decisions 0.74 / 0.54, insights
    # 0.56 / 0.37. Before the rules of the second round (issue 36 follow-up, README): 0.57,
    # 0.69 / 0.35 and 0.56 / 0.37; before any rule change for these sessions: 0.48, 0.50 / 0.27
    # and 0.56 / 0.37.
    assert report.boundary_f1 is not None and report.boundary_f1 >= 0.64, report.boundary_f1
    decisions, insights = report.by_type["decision"], report.by_type["insight"]
    assert decisions["precision"] is not None and decisions["precision"] >= 0.73, decisions
    assert decisions["recall"] is not None and decisions["recall"] >= 0.53, decisions
    assert insights["precision"] is not None and insights["precision"] >= 0.55, insights
    assert insights["recall"] is not None and insights["recall"] >= 0.36, insights
    # The second round was tuned on the even lines of the gold set (12 sessions, 79 turns) and
    # checked on the odd lines (12 sessions, 75 turns), which it did not look into; the held-out
    # half did not improve (boundary F1 0.50 -> 0.50, decisions 0.67 / 0.22 -> 0.50 / 0.22).
    ids = [sem.GoldSession.model_validate_json(line).id for line in lines]
    tuned_b, tuned_d = _half(report, set(ids[1::2]))
    held_b, held_d = _half(report, set(ids[0::2]))
    assert (tuned_b.f1 or 0) >= 0.73 and (held_b.f1 or 0) >= 0.49, (tuned_b, held_b)
    assert (tuned_d.precision or 0) >= 0.8 and (tuned_d.recall or 0) >= 0.7, tuned_d
    assert (held_d.precision or 0) >= 0.5 and (held_d.recall or 0) >= 0.22, held_d


def test_the_sessions_the_rules_were_tuned_on_meet_the_issue_targets(backend, tmp_path):
    # The first ten lines of the gold set (52 turns), labelled before the first rule change.
    report = sem.evaluate(_gold_subset(tmp_path, _gold_lines()[:10]), backend)
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


NEW_LONG = "kiliman-2025-08-10-refactor-release"  # 27 turns, eleven labelled topics


def test_the_sessions_held_out_from_the_third_round_keep_their_measured_figures(backend, tmp_path):
    # Lines 25-27 (kiliman/claude-transcript, 61 turns), labelled and committed before any rule
    # ran on them; measured once after the fourth round's rules (README): boundary F1 0.52
    # (P 0.89, R 0.36; 0.43 before), titles 11 of 12 acceptable, none scaffolding.
    report = sem.evaluate(_gold_subset(tmp_path, _gold_lines()[OLD_LINES:]), backend)
    assert report.turns == 61
    assert report.scaffolding_titles == 0 and report.memory_scaffolding_titles == 0
    assert report.boundary_f1 is not None and report.boundary_f1 >= 0.51, report.boundary_f1
    assert report.acceptable_titles >= 11, report


def test_the_long_held_out_session_is_cut_the_same_way_again_and_when_turns_are_appended(
    backend, sessions
):
    gold, turns = sessions[NEW_LONG]
    pass_input = sem.pass_input(gold, turns)
    first = validate_result(pass_input, backend.run(pass_input))
    assert first == validate_result(pass_input, backend.run(pass_input))
    whole = [s.first_ordinal for s in first.segments if s.first_ordinal > 0]
    assert len(whole) >= 2
    # The turns after the first cut arrive later: the tail of the earlier run is its last
    # segment, and the later cuts are where one pass over all turns makes them.
    split = whole[0] + 1
    earlier = sem.pass_input(gold, turns[:split])
    stored = validate_result(earlier, backend.run(earlier))
    tail = stored.segments[-1]
    later = PassInput(
        source=earlier.source,
        tail_context=[t for t in earlier.new_turns if t.ordinal >= tail.first_ordinal],
        new_turns=pass_input.new_turns[split:],
    )
    result = validate_result(later, backend.run(later))
    assert result.segments[0].continues_tail
    assert [s.first_ordinal for s in result.segments[1:]] == [b for b in whole if b > split]
