"""`memory-pipeline eval --semantic` at tiny scale: one labelled session, the printed measures, and
the definitions they rest on (boundary tolerance, scaffolding titles, memory matching)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline.semantic import evaluation as sem

REAL = sem.REAL_SESSIONS_GOLD.parent
POMODORO = REAL / "yoavf-ai-sessions" / "codex-pomodor-timer.jsonl"


def _gold(tmp_path: Path, **overrides: object) -> Path:
    shutil.copy(POMODORO, tmp_path / "session.jsonl")
    session = {
        "id": "pomodoro",
        "path": "session.jsonl",
        "format": "codex",
        "turns": 3,
        "segments": [
            {"first_turn": 0, "titles": ["Pomodoro timer web app"]},
            {"first_turn": 1, "titles": ["Smooth transitions between states"]},
            {"first_turn": 2, "titles": ["Pause/Resume feature"]},
        ],
        "memories": [{"turn": 2, "type": "decision", "text": "a labelled decision nothing states"}],
    }
    session.update(overrides)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps(session) + "\n")
    return gold


def test_eval_semantic_prints_the_measures_for_a_tiny_gold_set(tmp_path) -> None:
    result = CliRunner().invoke(
        app, ["eval", "--semantic", "--offline", "--semantic-gold", str(_gold(tmp_path))]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Semantic pass on real sessions (offline-rules): 1 sessions, 3 turns" in out
    assert "segment boundaries (±1 turn): P 1.00  R 1.00  F1 1.00" in out
    assert "titles: 3/3 acceptable, 0 scaffolding" in out
    assert "decisions: precision   -    recall 0.00  (0 matched of 0 distilled, 1 gold)" in out


def test_labels_for_another_number_of_turns_are_refused_in_one_line(tmp_path) -> None:
    gold = _gold(tmp_path, turns=4)
    result = CliRunner().invoke(
        app, ["eval", "--semantic", "--offline", "--semantic-gold", str(gold)]
    )
    assert result.exit_code != 0
    assert "the parser read 3 turns, the labels are for 4" in str(result.exception)


def test_boundaries_match_one_to_one_within_the_tolerance() -> None:
    counts = sem.match_boundaries([3, 4, 9], [4, 8], tolerance=1)
    assert (counts.tp, counts.fp, counts.fn) == (2, 1, 0)
    exact = sem.match_boundaries([3, 4, 9], [4, 8], tolerance=0)
    assert (exact.tp, exact.fp, exact.fn) == (1, 2, 1)


def test_scaffolding_titles_are_recognised() -> None:
    prompts = ["## User Input\n\n```text\nmove the timer to a worker\n```\n\n## Outline\n1. go"]
    for title in [
        "User Input",
        "Outline",
        "[what was chosen]",
        "/speckit.plan",
        "`001-project-scaffold`",
        "plan.md",
        "Checklist status",
        "Turns 3-7",
        "<command-name>",
        "- [ ] write tests",
    ]:
        assert sem.is_scaffolding_title(title, prompts, []), title
    for title in ["Move the timer to a worker", "Pomodoro timer: Pause/Resume feature"]:
        assert not sem.is_scaffolding_title(title, prompts, []), title
    labelled = ["Export the current Claude Code session to a timestamped folder"]
    assert sem.is_scaffolding_title("Export the current Claude Code session", [], labelled)
