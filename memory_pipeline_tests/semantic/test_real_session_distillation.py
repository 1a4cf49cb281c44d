"""Decisions and insights as real sessions state them (issue 36): agents report choices in change
lists ("Uses X (not Y)", "Added X" + what no longer happens, "This ensures ..."), users give
directions with a hedge ("i think we would want to ..."), findings come as "I have found that",
"X is NOT required", "Key finding:". What only looks like one is not distilled: a list of
contents justified by "This ensures", a quoted talk track being written, a check-mark line, a
long report sentence opening with "Added".

The sentences are shaped like the labelled real sessions' (evaluation/real_sessions/), the
subjects are drawn by hypothesis so no rule can key on one session's words."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.semantic.models import PassInput, PassResult, TurnInput, validate_result
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend

THINGS = st.sampled_from(
    ["session ID", "tenant key", "cache entry", "upload token", "report folder", "queue name"]
)
SOURCES = st.sampled_from(
    [("the metadata", "the filename"), ("the header", "the URL"), ("the database", "the cookie")]
)
NOUNS = st.sampled_from(["export", "invoice", "thumbnail", "backup", "digest"])
SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(*turns: tuple[str, str]) -> PassResult:
    pass_input = PassInput(
        source="claude_code",
        new_turns=[TurnInput(ordinal=i, prompt=p, outcome=o) for i, (p, o) in enumerate(turns)],
    )
    return validate_result(pass_input, OfflineRulesBackend().run(pass_input))


def _memories(result: PassResult, kind: str) -> list[str]:
    return [f"{m.title} {m.content}" for s in result.segments for m in s.memories if m.type == kind]


@SLOW
@given(thing=THINGS, source=SOURCES, noun=NOUNS)
def test_a_choice_against_a_named_alternative_with_its_benefit_is_a_decision(thing, source, noun):
    chosen, rejected = source
    outcome = (
        f"I've successfully fixed the {noun} naming issue:\n\n**Fix Applied**: the script now:\n"
        f"- Uses the {thing} from {chosen} (not {rejected}) for the {noun} folder\n"
        f"- Shows a note when there's a mismatch\n"
        f"- Ensures the folder name matches what's displayed in the summary"
    )
    [decision] = _memories(
        _run((f"please implement this change for the {noun}s", outcome)), "decision"
    )
    assert f"from {chosen} (not {rejected})" in decision
    assert "Ensures the folder name matches" in decision  # its reason, two items further


@SLOW
@given(noun=NOUNS)
def test_a_reported_change_and_what_no_longer_happens_is_a_decision(noun):
    outcome = (
        f"### Git Integration\n- Added `{noun}_*/` to `.gitignore`\n"
        f"- {noun.capitalize()} folders won't clutter your git repository"
    )
    [decision] = _memories(
        _run((f"copy each {noun} into the working directory", outcome)), "decision"
    )
    assert f"`{noun}_*/` to `.gitignore`" in decision and "won't clutter" in decision


@SLOW
@given(noun=NOUNS, thing=THINGS)
def test_an_approach_justified_by_this_ensures_is_a_decision_a_list_of_contents_is_not(noun, thing):
    approach = (
        f"The enhanced script now:\n1. Detects the {thing}\n2. Creates a marker file\n"
        f"3. Validates that we're exporting the correct {noun}\n\n"
        f"This ensures that concurrent runs never export the wrong {noun}."
    )
    contents = (
        f"The README now includes:\n- A detailed JSON example showing the {thing}\n"
        f"- Clear emphasis that every {noun} field is preserved\n\n"
        f"This ensures users understand they get a complete {noun}."
    )
    [decision] = _memories(_run((f"does it check the {thing}?", approach)), "decision")
    assert f"Detects the {thing}" in decision and "This ensures" in decision
    assert _memories(_run((f"make the {noun} readme clear", contents)), "decision") == []


@SLOW
@given(noun=NOUNS)
def test_a_hedged_user_direction_takes_its_reason_from_the_answer(noun):
    prompt = (
        f"i think we would want to include all sources related to a {noun} and just include "
        "the source name and empty if it was empty."
    )
    outcome = (
        "### Empty Marker Strategy\n\nFor GitHub visibility, use an `_empty` marker file in "
        "directories that have no content:\n\nThis way reviewers can see what was checked vs what "
        "was missing."
    )
    [decision] = _memories(_run((prompt, outcome)), "decision")
    assert "`_empty` marker" in decision and "This way reviewers can see" in decision


@SLOW
@given(noun=NOUNS, thing=THINGS)
def test_findings_as_sessions_state_them_are_insights(noun, thing):
    turns = [
        (
            f"if I just rename the {noun} folder i have found that I get the same not found "
            f"error so it seems like the folder name is referenced somewhere",
            "Try again now.",
        ),
        (
            "still no",
            f"**Key finding**: the tool normalizes underscores to hyphens in the {noun} path:\n\n"
            f"- Path: `/srv/{noun}_data`\n- Uses: `-srv-{noun}-data`",
        ),
        (
            f"what else could be captured for the {noun}?",
            f"- A database is NOT required - the {thing} alone enables discovery\n"
            f"- Only `{noun}.jsonl` is required (confirmed by testing)",
        ),
    ]
    insights = " ".join(_memories(_run(*turns), "insight"))
    assert "i have found that" in insights.lower()
    assert f"`-srv-{noun}-data`" in insights  # what the "Key finding: ...:" line announced
    assert "NOT required" in insights and f"Only `{noun}.jsonl` is required" in insights


@SLOW
@given(noun=NOUNS, data=st.data())
def test_quoted_talk_tracks_check_marks_and_long_report_lines_are_not_distilled(noun, data):
    lines = [
        f"Talk track:\n“By default, the system rebalances every {noun} budget because owners "
        f"rarely set one. The root cause of overspend is missing limits.”",
        f"✅ Root cause was the stale {noun} cache, fixed",
        f"Added {noun} themes with smooth transitions by toggling `body.mode` in `script.js:17` "
        f"and `script.js:72`, and introduced a fade so the switch between {noun} modes is calm.",
    ]
    outcome = "\n\n".join(data.draw(st.permutations(lines)))
    result = _run((f"prepare the {noun} demo scenario", outcome))
    assert [m for s in result.segments for m in s.memories] == []
