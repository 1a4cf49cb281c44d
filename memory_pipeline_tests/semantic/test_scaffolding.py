"""Scaffolding (prompt templates, headings, checklists, placeholders, slash commands, pasted
logs, injected context, status lines) is never a segment title, a decision or an insight."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.semantic.evaluation import is_scaffolding_title
from memory_pipeline.semantic.models import PassInput, TurnInput, validate_result
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
from memory_pipeline.semantic.offline_rules.scaffolding import PLACEHOLDER, subject_text

HEADINGS = ["## User Input", "## Context", "## Outline", "# Task", "### Instructions", "## Plan"]
PLACEHOLDERS = ["[what was chosen]", "[why]", "{{feature}}", "$ARGUMENTS", "[...]", "<FILE_PATH>"]
SUBJECTS = [
    "move the countdown to a Web Worker",
    "cache the tariff lookups in Redis",
    "retry the webhook delivery with backoff",
    "split the billing module into two packages",
]
words = st.lists(
    st.sampled_from(
        ["parser", "cache", "retry", "token", "export", "widget", "schema", "queue", "lease"]
    ),
    min_size=2,
    max_size=5,
).map(" ".join)


@st.composite
def scaffolded_prompt(draw) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append("---\ndescription: Create or update the feature specification\n---")
    heading = draw(st.sampled_from(HEADINGS))
    placeholder = draw(st.sampled_from(PLACEHOLDERS))
    parts.append(f"{heading}\n\n```text\n{placeholder}\n```")
    parts.append("You **MUST** consider the user input before proceeding (if not empty).")
    parts.append(f"## Context\n\n- [ ] {draw(words)}\n- [x] {draw(words)}")
    parts.append(f"Decision: {placeholder} because {draw(st.sampled_from(PLACEHOLDERS))}")
    if draw(st.booleans()):
        parts.insert(0, f"/speckit.{draw(st.sampled_from(['plan', 'tasks', 'specify']))}")
    if draw(st.booleans()):
        parts.append("<system-reminder>\nThe user opened the file app.py\n</system-reminder>")
    if draw(st.booleans()):
        parts.append("jim@box:~/app$ pytest -q\nE   AssertionError: 1 != 2")
    return "\n\n".join(draw(st.permutations(parts)))


@st.composite
def scaffolded_outcome(draw) -> str:
    lines = [
        "## Implementation Complete ✅",
        f"- [x] {draw(words)}",
        f"Decision: {draw(st.sampled_from(PLACEHOLDERS))} because it is simpler.",
        "Checklist status: 3/5 done",
        "[P1] Unsupported format errors return wrong payload shape.",
        "Perfect!",
    ]
    return "\n\n".join(draw(st.permutations(lines)))


def _run(turns: list[TurnInput]):
    pass_input = PassInput(source="claude_code", new_turns=turns)
    return validate_result(pass_input, OfflineRulesBackend().run(pass_input))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompts=st.lists(scaffolded_prompt(), min_size=1, max_size=4), data=st.data())
def test_scaffolding_is_never_titled_or_distilled(prompts, data):
    turns = [
        TurnInput(ordinal=i, prompt=p, outcome=data.draw(scaffolded_outcome()))
        for i, p in enumerate(prompts)
    ]
    result = _run(turns)
    for seg in result.segments:
        assert not is_scaffolding_title(seg.title, prompts, []), seg.title
        assert not PLACEHOLDER.search(seg.title), seg.title
        for mem in seg.memories:
            assert not is_scaffolding_title(mem.title, prompts, []), mem.title
            assert not PLACEHOLDER.search(mem.title + " " + mem.content), mem
            assert "[P1]" not in mem.content and "Checklist status" not in mem.title


@settings(max_examples=40, deadline=None)
@given(subject=st.sampled_from(SUBJECTS), heading=st.sampled_from(HEADINGS[:1]), data=st.data())
def test_a_templates_user_input_is_what_the_segment_is_titled_by(subject, heading, data):
    prompt = (
        f"---\ndescription: Plan a feature\n---\n\n{heading}\n\n```text\n{subject}\n```\n\n"
        "You **MUST** consider the user input before proceeding (if not empty).\n\n"
        f"## Outline\n\n1. Run `.specify/scripts/setup-plan.sh --json`\n- [ ] {data.draw(words)}"
    )
    assert subject_text(prompt) == subject
    result = _run([TurnInput(ordinal=0, prompt=prompt, outcome="Planned it in plan.md.")])
    assert result.segments[0].title.lower().startswith(subject.split()[0].lower())
    assert "User Input" not in result.segments[0].title


def test_slash_commands_mentions_directives_and_pastes_are_not_the_subject():
    assert subject_text("@claude-code-prompt.md really ULTRATHINK this") == ""
    assert subject_text("/export") == ""
    assert subject_text("still no\n\n(llm) jim@box:/mnt/c/app$ claude -c\nNo conversation") == (
        "still no\n\nNo conversation"
    )
    result = _run(
        [
            TurnInput(
                ordinal=0,
                prompt="@claude-code-prompt.md really ULTRATHINK this",
                outcome="## Phase 0 Investigation Complete\n\nI wrote docs/findings.md.",
            )
        ]
    )
    assert result.segments[0].title == "Phase 0 Investigation"
