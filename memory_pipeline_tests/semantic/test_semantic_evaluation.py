"""`memory-pipeline eval --semantic` at tiny scale: one labelled session, the printed measures, and
the definitions they rest on (boundary tolerance, scaffolding titles, memory matching)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from memory_pipeline.cli import app
from memory_pipeline.semantic import evaluation as sem
from memory_pipeline_tests.support.fake_ollama import DEFAULT_CHAT_MODEL, running_fake_ollama

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


def _model_answer(decision: str) -> dict:
    """What a model served by the fake Ollama answers for the three pomodoro turns."""
    return {
        "segments": [
            {"first_ordinal": 0, "last_ordinal": 0, "title": "Pomodoro timer web app"},
            {"first_ordinal": 1, "last_ordinal": 1, "title": "Smooth transitions between states"},
            {
                "first_ordinal": 2,
                "last_ordinal": 2,
                "title": "Pause/Resume feature for the timer",
                "memories": [
                    {
                        "type": "decision",
                        "title": decision,
                        "content": f"{decision}.",
                        "supporting_ordinals": [2],
                    }
                ],
            },
        ],
        "corrections": [],
    }


def test_a_configured_model_is_measured_after_the_rules_with_what_it_adds(tmp_path) -> None:
    """Without --offline, a configured and served MEMORY_SEMANTIC_MODEL runs the same evaluation
    through the real `ollama` client (against a fake Ollama on loopback): both tables, the rules
    first, and the difference."""
    decision = "Keep the pause state in the timer object so resume continues the countdown"
    gold = _gold(tmp_path, memories=[{"turn": 2, "type": "decision", "text": decision}])
    with running_fake_ollama() as fake:
        fake.script_chat(json.dumps(_model_answer(decision)))
        env = {"MEMORY_SEMANTIC_MODEL": DEFAULT_CHAT_MODEL, "OLLAMA_HOST": fake.host}
        result = CliRunner().invoke(
            app, ["eval", "--semantic", "--semantic-gold", str(gold)], env=env
        )
        [request] = fake.chat_requests
    assert result.exit_code == 0, result.output
    assert request.body["model"] == DEFAULT_CHAT_MODEL
    assert "Pomodoro" in json.dumps(request.body["messages"])  # the session's turns were sent
    out = result.stdout
    rules = out.index("Semantic pass on real sessions (offline-rules): 1 sessions, 3 turns")
    model = out.index(f"Semantic pass on real sessions (ollama:{DEFAULT_CHAT_MODEL}): 1 sessions")
    assert rules < model
    assert "decisions: precision 1.00  recall 1.00  (1 matched of 1 distilled, 1 gold)" in out
    assert f"What ollama:{DEFAULT_CHAT_MODEL} adds over the offline rules: boundary F1" in out
    assert "decision precision" in out.split("adds over the offline rules:")[1]


def test_a_model_that_fails_a_session_counts_it_as_finding_nothing(tmp_path) -> None:
    with running_fake_ollama() as fake:
        fake.script_chat("this is not JSON")
        env = {"MEMORY_SEMANTIC_MODEL": DEFAULT_CHAT_MODEL, "OLLAMA_HOST": fake.host}
        result = CliRunner().invoke(
            app, ["eval", "--semantic", "--semantic-gold", str(_gold(tmp_path))], env=env
        )
    assert result.exit_code == 0, result.output
    model_table = result.stdout.split(f"(ollama:{DEFAULT_CHAT_MODEL})")[1]
    assert "segment boundaries (±1 turn): P   -    R 0.00" in model_table
    assert "the pass failed on 1 of 1 sessions (counted as finding nothing): pomodoro:" in (
        model_table
    )


def test_without_a_served_model_the_rules_alone_are_measured_and_it_says_why(tmp_path) -> None:
    with running_fake_ollama(chat_models=[]) as fake:
        env = {"MEMORY_SEMANTIC_MODEL": "qwen2.5:7b-instruct", "OLLAMA_HOST": fake.host}
        result = CliRunner().invoke(
            app, ["eval", "--semantic", "--semantic-gold", str(_gold(tmp_path))], env=env
        )
        assert fake.chat_requests == []
    assert result.exit_code == 0, result.output
    assert "model qwen2.5:7b-instruct is not served by" in result.output
    assert "(offline-rules)" in result.stdout and "(ollama:" not in result.stdout


def test_a_claude_transcript_markdown_export_is_read_by_the_claude_code_turn_rules() -> None:
    text = "\n".join(
        [
            "# 🤖 Claude Code Transcript",
            "",
            "> [!IMPORTANT]",
            "> `/clear`\\",
            "> clear",
            "",
            "> [!IMPORTANT]",
            "> Add a --output option",
            "> so tests write elsewhere",
            "",
            "I'll add it.",
            "",
            "💻 **Bash: Run the tests**",
            "```shell",
            "pnpm test",
            "```",
            "... +12 lines ([view file](contents/results-1))",
            "",
            "Done: `--output` sets the directory.",
            "",
            "> [!IMPORTANT]",
            "> This session is being continued from a previous conversation that ran out",
            "",
            "Also updated the README.",
            "",
            "> [!IMPORTANT]",
            "> now rename it",
            "",
            "Renaming.",
            "",
            "> [!WARNING]",
            "> [Request interrupted by user]",
            "",
            "> [!IMPORTANT]",
            "> bump version",
            "",
            "✏️ **Edit: package.json**",
            "",
            "Version bumped to 1.2.0.",
        ]
    )
    turns = sem.claude_transcript_markdown_turns(text)
    # `/clear` has no answer and the interrupted turn is skipped; the compaction summary is
    # harness text, not a prompt; the outcome is the text after the last tool use.
    assert [t.prompt for t in turns] == [
        "Add a --output option\nso tests write elsewhere",
        "bump version",
    ]
    assert turns[0].outcome == "Done: `--output` sets the directory.\n\nAlso updated the README."
    assert turns[1].outcome == "Version bumped to 1.2.0."
