"""The offline rules backend: correction episodes."""

from __future__ import annotations

import pytest

from memory_pipeline_tests.semantic.rules_support import T, run, spans


def test_correction_episode_names_what_the_agent_did_and_what_the_user_expected():
    turns = [
        T(
            0,
            "Export the monthly report.",
            "Exported the monthly report as report-2024-05.json in the exports folder.",
        ),
        T(
            1,
            "No, that's wrong - I asked for the CSV export, not JSON. Redo it as CSV.",
            "Re-exported the monthly report as report-2024-05.csv.",
        ),
    ]
    result = run(turns)
    [c] = result.corrections
    assert (c.correcting_ordinal, c.corrected_ordinal) == (1, 0)
    assert c.agent_did.startswith("Exported the monthly report as report-2024-05.json")
    assert c.user_expected == "I asked for the CSV export, not JSON. Redo it as CSV."
    assert c.title.startswith("Correction: I asked for the CSV export")
    assert spans(result) == [(0, 1)]  # a correction never opens a new segment


@pytest.mark.parametrize(
    "prompt",
    [
        "That's not what I meant: keep the header row in the export.",
        "You changed the wrong file, the loader lives in config/loader.py.",
        "I said to keep the public API unchanged.",
        "You should have kept the old column for the migration.",
        "Actually, I wanted the totals per week, not per day.",
        "You misunderstood: the limit is per key, not per IP.",
        "No. Put the file under docs/ instead.",
    ],
)
def test_correction_cues(prompt):
    turns = [T(4, "Do the thing.", "Did the thing in loader.py."), T(5, prompt, "Fixed.")]
    [c] = run(turns).corrections
    assert (c.correcting_ordinal, c.corrected_ordinal) == (5, 4)


@pytest.mark.parametrize(
    "prompt",
    [
        "Thanks, now also add pagination to the export.",
        "Great, that works. Next, add a --dry-run flag.",
        "No worries, also add a test for the empty case.",
        "No problem. Now write the changelog entry.",
        "Perfect! Can you also update the README?",
        "Looks good, no changes needed. Let's move to the CLI part.",
    ],
)
def test_no_false_correction_on_follow_ups(prompt):
    turns = [T(0, "Add the export.", "Added the export."), T(1, prompt, "Done.")]
    assert run(turns).corrections == []


def test_correction_of_the_tail_outcome():
    tail = [T(7, "Rename the config option.", "Renamed `timeout` to `timeout_ms`.")]
    new = [T(8, "No, I meant the env var, not the config key.", "Renamed APP_TIMEOUT instead.")]
    [c] = run(new, tail=tail).corrections
    assert (c.correcting_ordinal, c.corrected_ordinal) == (8, 7)
    assert c.agent_did == "Renamed `timeout` to `timeout_ms`."


def test_first_turn_without_tail_is_never_a_correction():
    assert run([T(0, "No, that's wrong, start over.", "Starting over.")]).corrections == []
