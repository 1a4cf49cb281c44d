"""The offline rules backend: segmentation, distillation, corrections, project, determinism."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memory_pipeline.semantic.models import PassInput, PassResult, TurnInput, validate_result
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend


def T(ordinal: int, prompt: str, outcome: str) -> TurnInput:
    return TurnInput(ordinal=ordinal, prompt=prompt, outcome=outcome)


def run(
    turns: Sequence[TurnInput],
    tail: Sequence[TurnInput] = (),
    embedder=None,
    title: str | None = None,
) -> PassResult:
    pass_input = PassInput(
        task_title=title, source="codex", tail_context=list(tail), new_turns=list(turns)
    )
    result = OfflineRulesBackend(embedder=embedder).run(pass_input)
    validate_result(pass_input, result)  # the backend's output always passes the gate
    return result


def spans(result: PassResult) -> list[tuple[int, int]]:
    return [(s.first_ordinal, s.last_ordinal) for s in result.segments]


def memories(result: PassResult, kind: str | None = None):
    return [m for s in result.segments for m in s.memories if kind is None or m.type == kind]


# --- hand-made sessions ---------------------------------------------------------------------

CSV_EXPORT = [
    T(
        0,
        "The CSV export endpoint times out for large accounts. Can you profile export_csv?",
        "Profiled export_csv: 92% of the time is spent in per-row ORM queries for the account "
        "owner. The export issues one query per row.",
    ),
    T(
        1,
        "Batch those owner lookups in the export.",
        "The CSV export now prefetches owners with a single select_related query; a 50k-row "
        "export went from 41s to 3s.",
    ),
    T(
        2,
        "Stream the CSV rows instead of building the whole export in memory.",
        "export_csv now yields rows through a StreamingHttpResponse, so memory stays flat during "
        "large exports.",
    ),
]
DOCKER = [
    T(
        3,
        "Write a Dockerfile for the worker service with a slim Python base image.",
        "Added worker/Dockerfile based on python:3.12-slim with a non-root user and pip cache "
        "disabled.",
    ),
    T(
        4,
        "The Docker image build for the worker is slow in CI; cache the pip layer.",
        "Reordered the Dockerfile so requirements are copied and installed before the source, so "
        "CI reuses the cached pip layer.",
    ),
    T(
        5,
        "Add a healthcheck to the worker container image.",
        "Added a HEALTHCHECK that runs `python -m worker.health` every 30s in the Dockerfile.",
    ),
]
RATE_LIMIT = [
    T(
        0,
        "Add rate limiting to the public API endpoints.",
        "Added a token-bucket rate limiter middleware in api/ratelimit.py keyed by API key, 100 "
        "requests per minute.",
    ),
    T(1, "go ahead and wire it up", "Registered the rate limiter middleware for all /v1 routes."),
    T(
        2,
        "Thanks, now also add a Retry-After header when a client is limited.",
        "Limited responses now return HTTP 429 with a Retry-After header computed from the bucket "
        "refill time.",
    ),
    T(
        3,
        "Make the limit configurable per API key plan.",
        "The limiter reads requests-per-minute from the plan attached to each API key; free is "
        "60, pro is 600.",
    ),
    T(
        4,
        "Add tests for the limiter.",
        "Added tests/test_ratelimit.py covering refill, 429 responses, Retry-After and per-plan "
        "limits.",
    ),
]


# --- segmentation ---------------------------------------------------------------------------


def test_topic_shift_without_cue_starts_a_segment():
    result = run(CSV_EXPORT + DOCKER)
    assert spans(result) == [(0, 2), (3, 5)]
    assert "CSV export" in result.segments[0].title
    assert "Dockerfile" in result.segments[1].title


def test_explicit_shift_cue_starts_a_segment_even_with_shared_words():
    turns = [
        *CSV_EXPORT,
        T(
            3,
            "Switching gears: the CSV export docs page is outdated, rewrite the export section "
            "of the README.",
            "Rewrote the README export section: endpoints, parameters and the streaming CSV "
            "format.",
        ),
        T(
            4,
            "Also document the export rate limits in that README section.",
            "Added a paragraph on export limits to the README.",
        ),
    ]
    result = run(turns)
    assert spans(result) == [(0, 2), (3, 4)]
    # The cue is not part of the title.
    assert result.segments[1].title.startswith("The CSV export docs page is outdated")


def test_coherent_run_is_not_split():
    result = run(RATE_LIMIT)
    assert spans(result) == [(0, 4)]
    assert result.segments[0].title == "Add rate limiting to the public API endpoints"


def test_lone_turn_is_merged_into_the_more_similar_neighbour():
    # Turn 3 shares only a little vocabulary with the Docker work around it: raw boundaries would
    # make it a one-turn segment; it joins its closest neighbour instead.
    turns = [
        *CSV_EXPORT,
        T(
            3,
            "The worker container should log in JSON so our log shipper can parse it.",
            "Configured structlog JSON output for the worker.",
        ),
        *[t.model_copy(update={"ordinal": t.ordinal + 1}) for t in DOCKER],
    ]
    result = run(turns)
    assert all(s.last_ordinal > s.first_ordinal for s in result.segments), spans(result)
    assert spans(result) == [(0, 2), (3, 6)]


def test_genuine_one_turn_topic_with_a_cue_stays_alone():
    turns = [
        *CSV_EXPORT,
        T(
            3,
            "Unrelated question: what does `git rebase --onto` do?",
            "`git rebase --onto new-base old-base branch` replays the commits after old-base onto "
            "new-base.",
        ),
    ]
    assert spans(run(turns)) == [(0, 2), (3, 3)]


# --- tail continuation ------------------------------------------------------------------------


def test_new_turns_continue_the_tail_segment():
    tail = RATE_LIMIT[:2]
    tail[0] = tail[0].model_copy(
        update={"prompt": tail[0].prompt + " We decided to use a token bucket because bursts "}
    )
    new = RATE_LIMIT[2:] + [t.model_copy(update={"ordinal": t.ordinal + 2}) for t in DOCKER]
    result = run(new, tail=tail)
    first = result.segments[0]
    assert first.continues_tail and (first.first_ordinal, first.last_ordinal) == (0, 4)
    assert spans(result)[1:] == [(5, 7)]
    assert not result.segments[1].continues_tail
    # The tail's decision was distilled by an earlier pass: never again.
    assert not any("token bucket" in m.content for m in memories(result))


def test_new_turns_that_shift_away_do_not_continue_the_tail():
    result = run(DOCKER, tail=CSV_EXPORT)
    assert spans(result) == [(3, 5)]
    assert not result.segments[0].continues_tail


# --- distillation -----------------------------------------------------------------------------


def test_decision_with_reason_in_the_same_sentence():
    turns = [
        T(
            0,
            "We need a job queue for the email worker: Redis streams or Postgres SKIP LOCKED?",
            "Both work. Redis streams add consumer groups; Postgres SKIP LOCKED needs no new "
            "service.",
        ),
        T(
            1,
            "Let's go with Postgres SKIP LOCKED because we already run Postgres and don't want "
            "to operate Redis.",
            "Implemented the email_jobs table with a SKIP LOCKED dequeue in worker/queue.py.",
        ),
    ]
    [decision] = memories(run(turns), "decision")
    # The statement does not name its topic, so the segment title is prefixed.
    assert decision.content == (
        "We need a job queue for the email worker: decided to go with Postgres SKIP LOCKED "
        "because we already run Postgres and don't want to operate Redis."
    )
    assert decision.title == "Go with Postgres SKIP LOCKED"
    assert decision.supporting_ordinals == [1]


def test_decision_pulls_the_reason_from_the_next_sentence():
    turns = [
        T(
            0,
            "How should the importer handle duplicate invoices?",
            "We'll use an upsert keyed on (vendor_id, invoice_number) for the invoice importer. "
            "This avoids double-counting when a vendor re-sends the same file.",
        )
    ]
    [decision] = memories(run(turns), "decision")
    assert "upsert keyed on (vendor_id, invoice_number)" in decision.content
    assert "This avoids double-counting" in decision.content


def test_decision_pulls_the_reason_from_the_previous_sentence():
    turns = [
        T(
            0,
            "Running Redis only for locks is another service to patch and monitor. So we decided "
            "to use Postgres advisory locks for the scheduler.",
            "Switched the scheduler to pg_advisory_lock.",
        )
    ]
    [decision] = memories(run(turns), "decision")
    assert decision.content.startswith("Running Redis only for locks is another service")
    assert "Postgres advisory locks" in decision.content


def test_agent_first_person_decision_is_attributed():
    turns = [
        T(
            0,
            "Implement the LRU cache for the thumbnail service.",
            "I chose an OrderedDict over a plain dict because move_to_end gives O(1) recency "
            "updates.",
        )
    ]
    [decision] = memories(run(turns), "decision")
    assert decision.content == (
        "Implement the LRU cache for the thumbnail service: the agent chose an OrderedDict over a "
        "plain dict because move_to_end gives O(1) recency updates."
    )


def test_insights_root_cause_and_turns_out():
    turns = [
        T(
            0,
            "Why does the nightly backup job fail on Sundays?",
            "The root cause was the weekly log rotation holding an exclusive lock on backup.log, "
            "so the job cannot open its log file. It turns out logrotate runs at 03:00 on Sundays, "
            "exactly when the backup starts.",
        )
    ]
    insights = memories(run(turns), "insight")
    assert len(insights) == 2
    assert "root cause was the weekly log rotation" in insights[0].content
    assert "logrotate runs at 03:00 on Sundays" in insights[1].content


def test_leading_pronoun_is_resolved_with_the_subject():
    turns = [
        T(
            0,
            "The webhook retries stopped hammering the partner API after the change. Why?",
            "The client now reads the `retry_after` header. It works because the partner API "
            "sends the exact backoff it expects.",
        )
    ]
    [insight] = memories(run(turns), "insight")
    assert insight.content.startswith("`retry_after`: it works because the partner API")


def test_topic_is_prefixed_when_the_statement_does_not_name_it():
    turns = [
        T(
            0,
            "Pick a message queue for the email worker.",
            "Going with NATS because it is a single static binary.",
        )
    ]
    [decision] = memories(run(turns), "decision")
    assert decision.content == (
        "Pick a message queue for the email worker: going with NATS because it is a single "
        "static binary."
    )


def test_til_is_case_sensitive_and_questions_are_not_decisions():
    turns = [
        T(
            0,
            "Should we go with SQLite for the CLI cache? Wait until the spike is done.",
            "TIL: SQLite WAL mode lets readers proceed while one writer commits, so the CLI cache "
            "will not block.",
        )
    ]
    result = run(turns)
    assert memories(result, "decision") == []
    [insight] = memories(result, "insight")
    assert "SQLite WAL mode lets readers proceed" in insight.content


def test_a_repeated_decision_is_one_memory_citing_both_turns():
    turns = [
        T(
            0,
            "Let's use pgvector for the embeddings because it keeps everything in one database.",
            "Sounds good.",
        ),
        T(
            1,
            "Set up the schema.",
            "Created the embeddings table. We decided to use pgvector for the embeddings "
            "because it keeps everything in one database.",
        ),
    ]
    [decision] = memories(run(turns), "decision")
    assert decision.supporting_ordinals == [0, 1]


def test_code_blocks_are_not_distilled():
    turns = [
        T(
            0,
            "Show me the config loader.",
            "Here it is:\n```python\n# we decided to use yaml because json has no comments\n"
            "load()\n```\nThe loader reads config.toml.",
        )
    ]
    assert memories(run(turns)) == []


# --- corrections --------------------------------------------------------------------------------


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


# --- project ------------------------------------------------------------------------------------


def test_explicit_project_name_is_set_with_evidence():
    turns = [
        T(
            0,
            "For Billing: the invoice PDF renders the VAT line twice.",
            "Fixed the duplicate VAT line in the invoice template.",
        )
    ]
    seg = run(turns).segments[0]
    assert seg.project == "Billing"
    assert seg.project_evidence and "For Billing:" in seg.project_evidence


def test_the_name_project_pattern():
    turns = [
        T(
            0,
            "In the memory-pipeline project we store vectors in pgvector. Add an index.",
            "Added an HNSW index on the embeddings table.",
        )
    ]
    seg = run(turns).segments[0]
    assert seg.project == "memory-pipeline"
    assert "memory-pipeline project" in (seg.project_evidence or "")


@pytest.mark.parametrize(
    "prompt",
    [
        "cd /home/dev/src/acme-api and run the tests.",
        "Run the tests in ~/work/billing-service/tests please.",
        "This project needs a linter config.",
        "In the main repo, bump the version.",
    ],
)
def test_no_project_from_paths_or_vague_mentions(prompt):
    seg = run([T(0, prompt, "Done.")]).segments[0]
    assert seg.project is None and seg.project_evidence is None


def test_two_different_project_names_are_ambiguous():
    turns = [T(0, "Port the Atlas project's retry helper to project Hermes.", "Ported it.")]
    assert run(turns).segments[0].project is None


# --- determinism and the embedder ---------------------------------------------------------------


def test_same_input_gives_the_same_output():
    turns = CSV_EXPORT + DOCKER
    a = run(turns)
    b = run(turns)
    assert a.model_dump() == b.model_dump()
    assert a == OfflineRulesBackend().run(PassInput(source="codex", new_turns=turns))


class TableEmbedder:
    """Maps each turn (by its prompt) to a fixed unit vector; records calls."""

    dims = 2
    space = "test:table:2"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            vec = next(v for k, v in self.table.items() if k in text)
            rows.append(np.asarray(vec, dtype=np.float32) / np.linalg.norm(vec))
        return np.vstack(rows)


# Turn 3 words its topic differently from turns 0-2 (no shared content words), so lexical
# similarity alone starts a new segment there.
PAGE_SPEED = [
    T(
        0,
        "The dashboard page takes eight seconds to render for big teams.",
        "Most of the render time is the activity widget computing aggregates per request.",
    ),
    T(
        1,
        "Cache the dashboard activity aggregates.",
        "The activity widget aggregates are cached for 60 seconds per team.",
    ),
    T(
        2,
        "Render the dashboard widgets in parallel.",
        "Dashboard widgets now render concurrently; the page renders in 2.1 seconds.",
    ),
    T(
        3,
        "Users still say the UI feels sluggish, can we make it snappier?",
        "Lazy-loaded the charts below the fold and memoized selectors, first paint is now under "
        "one second.",
    ),
    T(
        4,
        "Also prefetch the chart data when the user hovers the charts tab.",
        "Chart data is prefetched on hover, so opening the charts tab feels instant.",
    ),
]


def test_vector_similarity_can_keep_a_borderline_turn_in_its_segment():
    assert spans(run(PAGE_SPEED)) == [(0, 2), (3, 4)]
    same_topic = TableEmbedder({t.prompt: [1.0, 0.05 * t.ordinal] for t in PAGE_SPEED})
    assert spans(run(PAGE_SPEED, embedder=same_topic)) == [(0, 4)]
    assert len(same_topic.calls) == 1 and len(same_topic.calls[0]) == len(PAGE_SPEED)


def test_vector_similarity_can_split_a_lexically_similar_pair():
    # Turn 3 reuses some of the CSV export's words but is about auditing downloads.
    turns = [
        *CSV_EXPORT,
        T(
            3,
            "Record who downloads each export in an audit trail.",
            "Added an audit_log table recording user, account and timestamp for each download.",
        ),
        T(
            4,
            "Show the audit trail in the admin panel.",
            "The admin panel lists audit_log entries, newest first.",
        ),
    ]
    assert spans(run(turns)) == [(0, 4)]
    vectors = {t.prompt: ([1.0, 0.0] if t.ordinal < 3 else [0.0, 1.0]) for t in turns}
    assert spans(run(turns, embedder=TableEmbedder(vectors))) == [(0, 2), (3, 4)]


def test_minilm_changes_a_borderline_boundary():
    from memory_pipeline.embedding.minilm import get_minilm

    embedder = get_minilm()
    assert spans(run(PAGE_SPEED)) == [(0, 2), (3, 4)]
    assert spans(run(PAGE_SPEED, embedder=embedder)) == [(0, 4)]


# --- answers to questions, plans with reasons, accepted proposals --------------------------------


def test_plan_with_a_reason_is_a_decision_and_without_one_is_not():
    with_reason = [
        T(
            0,
            "fix?",
            "We'll turn server-side prepares off in Django, because the named cursors behind "
            "`.iterator()` break under transaction pooling too.",
        )
    ]
    [decision] = memories(run(with_reason), "decision")
    assert "because the named cursors" in decision.content
    without_reason = [T(0, "next step?", "We'll run the migration tomorrow morning.")]
    assert memories(run(without_reason), "decision") == []


def test_answer_to_a_why_question_is_an_insight_carrying_the_question():
    turns = [
        T(
            0,
            "the musl build of logslice is 2x slower than the gnu one. why?",
            "It's the allocator: the musl binary spends 38% of its time in `malloc`, versus under "
            "3% with glibc. The fix is a different allocator.",
        )
    ]
    insights = memories(run(turns), "insight")
    # The answer to the question, and separately the cue sentence "The fix is ...".
    assert len(insights) == 2
    [insight] = [m for m in insights if m.questions]
    assert insight.content.startswith(
        "The musl build of logslice is 2x slower than the gnu one. Why? It's the allocator"
    )
    assert insight.questions == ["The musl build of logslice is 2x slower than the gnu one. Why?"]


def test_answer_to_a_choice_question_is_a_decision():
    turns = [
        T(
            0,
            "should the window edges be inclusive or exclusive?",
            "The window is now half-open: `--since` is inclusive and `--until` is exclusive. "
            "Half-open means adjacent windows never print a line twice.",
        )
    ]
    [decision] = memories(run(turns), "decision")
    assert decision.title == "The window is now half-open"
    assert "never print a line twice" in decision.content
    assert decision.questions == ["Should the window edges be inclusive or exclusive?"]


def test_problem_report_answer_is_an_insight_only_when_it_explains():
    explained = [
        T(
            0,
            "the nightly load failed with CardinalityViolation, every other day works",
            "It's daylight saving time: on 25 October the hour from 02:00 to 03:00 happened twice.",
        )
    ]
    [insight] = memories(run(explained), "insight")
    assert "daylight saving time" in insight.content and insight.questions == []
    not_explained = [
        T(0, "the nightly load failed again", "Restarted the loader and it finished at 03:12.")
    ]
    assert memories(run(not_explained)) == []


def test_accepted_proposal_becomes_a_decision_citing_both_turns():
    turns = [
        T(
            0,
            "negative kwh readings? how",
            "Those meters are bidirectional. We should store import and export separately "
            "instead of clipping, because the CSV has an OBIS column that tells them apart.",
        ),
        T(1, "ok store both", "Added a `direction` column and backfilled existing rows."),
    ]
    [decision] = memories(run(turns), "decision")
    assert decision.supporting_ordinals == [0, 1]
    assert "store import and export separately instead of clipping" in decision.content


# --- how real sessions phrase a new problem and a choice (issue 36) ----------------------------

EXPORT_BUILT = [
    T(
        0,
        "build a script that exports each chat session to a folder named by its session id",
        "Perfect! The export script is ready.\n\n- writes session_info.json\n- writes the "
        "conversation as markdown",
    ),
    T(
        1,
        "please copy the export script into the working directory",
        "Copied export_session.py into the working directory.",
    ),
]


def test_a_problem_report_after_the_work_is_reported_done_starts_a_bug_hunt():
    done = T(
        1, EXPORT_BUILT[1].prompt, "✅ Session exported successfully!\nFiles: session_info.json"
    )
    report = T(
        2,
        "any idea why the export folder is not named by the session id?",
        "The export folder takes the session file name, not the session id.",
    )
    result = run([EXPORT_BUILT[0], done, report])
    assert [s.first_ordinal for s in result.segments] == [0, 2]
    # The same report while the work is still going on is a follow-up of it.
    going = T(1, EXPORT_BUILT[1].prompt, "Copying the export script; two files are left to do.")
    assert [s.first_ordinal for s in run([EXPORT_BUILT[0], going, report]).segments] == [0]


def test_a_direction_the_agent_agrees_with_is_a_decision_and_a_correction_is_not():
    base = T(0, "design how the sync tracks conversations", "The design tracks each message.")
    adopted = T(
        1,
        "conversationId is the same as sessionId. let's set the same value for the conversation",
        "Brilliant! You're absolutely right. If conversationId is the same as sessionId, we do "
        "not need to store it at all, just use the existing sessionId.",
    )
    decisions = memories(run([base, adopted]), "decision")
    assert len(decisions) == 1 and decisions[0].supporting_ordinals == [1]
    assert "sessionId" in decisions[0].content and "conversationId" in decisions[0].content
    # Agreeing with a report (no direction in the prompt) decides nothing.
    reported = T(1, "the sync log shows two runs at 10:02.", adopted.outcome)
    assert memories(run([base, reported]), "decision") == []


def test_declining_an_offer_keeps_things_as_they_are_for_the_reason_given():
    asked = T(
        0,
        "j goes down the list and k goes up, wouldn't the other way around make more sense",
        "The j/k bindings follow the vim convention, j is down and k is up. That is what most "
        "developers expect. Want me to swap them anyway?",
    )
    declined = T(1, "no", "Got it, leaving them as they are.")
    (decision,) = memories(run([asked, declined]), "decision")
    assert decision.supporting_ordinals == [0, 1]
    assert "vim convention" in decision.content and "declined" in decision.content
    # "no" to an outcome that offered nothing is no decision.
    told = T(0, asked.prompt, "The j/k bindings follow the vim convention, j is down and k is up.")
    assert memories(run([told, declined]), "decision") == []


def test_a_user_direction_with_its_reason_is_a_decision_without_one_it_is_not():
    base = T(0, "design where conversation sync state lives", "Proposed a separate state file.")
    direction = T(
        1,
        "track it in the same file as the metrics, just extend the json so that old clients "
        "are not broken",
        "Updated the design: one file per session.",
    )
    (decision,) = memories(run([base, direction]), "decision")
    assert "extend the json" in decision.content
    bare = T(1, "track it in the same file as the metrics", direction.outcome)
    assert memories(run([base, bare]), "decision") == []


def test_a_rejected_alternative_is_the_reason_of_the_direction_after_it():
    turn = T(
        0,
        "i don't want to open issues or prs directly. let's design a write-up for each team.",
        "Here's the draft write-up template.",
    )
    (decision,) = memories(run([turn]), "decision")
    assert "open issues or prs directly" in decision.content
    assert "write-up for each team" in decision.content


def people(turns: Sequence[TurnInput]) -> PassResult:
    """A chat between two people (a chat import read by the speaker rule)."""
    named = [
        t.model_copy(update={"prompt_speaker": "Sam", "outcome_speaker": "Aoife"}) for t in turns
    ]
    pass_input = PassInput(source="chat_import", new_turns=named, between_people=True)
    result = OfflineRulesBackend().run(pass_input)
    validate_result(pass_input, result)
    return result


def test_chit_chat_between_people_is_neither_a_decision_nor_an_insight():
    result = people(
        [
            T(
                0,
                "Your last day at work yesterday! How do you feel?",
                "Good weird. They gave me a card.",
            ),
            T(
                1,
                "3 hours and 12 minutes, slow but no pain.",
                "That's basically a marathon already.",
            ),
            T(2, "Where do we stand with the wedding?", "Final decision: Victoria Baths."),
            T(3, "I asked me why anyone needs logarithms.", "That's all I know. Are you nervous?"),
        ]
    )
    assert memories(result) == []


def test_between_people_a_decision_says_who_chose_and_a_why_answer_is_a_finding():
    result = people(
        [
            T(
                0,
                "Cottage planning: we'll drive ourselves because of the car seat and the pram.",
                "Good plan, the train would be a nightmare with all that.",
            ),
            T(
                1,
                "Why did staging have the index and prod not?",
                "Someone created it by hand in staging in July for a test and never put it in a "
                "migration.",
            ),
        ]
    )
    decisions, insights = memories(result, "decision"), memories(result, "insight")
    assert len(decisions) == 1 and "car seat" in decisions[0].content
    assert "The user" not in decisions[0].content  # nobody is "the user" between people
    assert len(insights) == 1 and "by hand in staging" in insights[0].content


def test_a_fact_answering_a_choice_question_is_no_decision():
    fact = run(
        [
            T(
                0,
                "What about the webhooks during downtime?",
                "Stripe retries failed webhook deliveries for up to three days with backoff, so a "
                "short outage loses nothing.",
            )
        ]
    )
    assert memories(fact, "decision") == []
    chosen = run(
        [
            T(
                0,
                "Should it use inotify via the notify crate instead?",
                "I'd keep polling, because inotify never fires on NFS mounts for writes made by "
                "other hosts.",
            )
        ]
    )
    assert [m.title for m in memories(chosen, "decision")] == ["Keep polling"]


def test_a_plan_a_remark_or_a_measurement_is_no_insight_or_decision():
    result = run(
        [
            T(
                0,
                "The backup failed again last night.",
                "I'll finish the IAM role change and delete the tokens, so the backup can't fail "
                "that way again.",
            ),
            T(
                1,
                "Offline downloads on mobile data?",
                "That's acceptable if the app makes it clear: show the size and only download on "
                "wifi by default.",
            ),
            T(
                2,
                "Ledger-core is live.",
                "The statements query was slow after the switch, 4 seconds instead of 200 ms.",
            ),
        ]
    )
    assert memories(result) == []


def test_a_title_is_never_cut_inside_code():
    result = run(
        [
            T(
                0,
                "It's a dbt model, how do I add partitioning in the config?",
                'Yes: partition_by={"field": "order_ts", "granularity": "day"} and '
                'cluster_by=["store_id"] in the model config.',
            )
        ]
    )
    titles = [m.title for m in memories(result)]
    assert titles and all(t != 'partition_by={"field"' for t in titles)
    assert titles[0].startswith('partition_by={"field": "order_ts"')


def test_a_fix_reported_with_its_reason_is_a_decision_and_without_one_a_finding():
    chosen = run(
        [
            T(
                0,
                "it crashed, please check the crash log",
                "The finding content contains literal `[` characters that Textual parses as "
                "markup tags. Fixed by passing `markup=False` to `Static` for the body sections so "
                "they're rendered as plain text.",
            )
        ]
    )
    assert [m.type for m in memories(chosen) if "markup=False" in m.content] == ["decision"]
    found = run(
        [
            T(
                0,
                "The Dialyzer warning is back, any idea?",
                "Key fix: resolved the Dialyzer false positive by using `hex_trace_id/1` instead "
                "of reading the span record by hand.",
            )
        ]
    )
    assert [m.type for m in memories(found) if "Dialyzer" in m.content] == ["insight"]


def test_a_fix_with_its_purpose_in_parentheses_is_a_decision():
    result = run(
        [
            T(
                0,
                "the active row is still lost sometimes",
                "Fixed by splitting into `htmx:afterSwap` (for scroll reset) and "
                "`htmx:afterSettle` (for active row sync).",
            ),
        ]
    )
    assert any("afterSettle" in m.content for m in memories(result, "decision"))


def test_a_new_error_pasted_after_the_work_is_reported_done_starts_a_bug_hunt():
    error = T(
        2,
        'I\'m getting this error:\n\n  File "export_session.py", line 12, in export\n'
        "FileNotFoundError: session folder not found",
        "The export script now creates the session folder before it writes the export.",
    )
    done = T(1, EXPORT_BUILT[1].prompt, "Perfect! The export script runs from any folder now.")
    assert [s.first_ordinal for s in run([EXPORT_BUILT[0], done, error]).segments] == [0, 2]
    # Pasted output while the work is still going on is a follow-up of it.
    going = T(1, EXPORT_BUILT[1].prompt, "Copying the export script; two files are left to do.")
    assert [s.first_ordinal for s in run([EXPORT_BUILT[0], going, error]).segments] == [0]


def test_the_next_request_after_the_work_is_reported_done_opens_a_segment():
    done = T(1, EXPORT_BUILT[1].prompt, "Done! The script is in the working directory.")
    request = T(
        2,
        "can we publish this on npm so people run it with npx, with a README?",
        "package.json now has a bin entry and the README explains npx usage.",
    )
    assert [s.first_ordinal for s in run([EXPORT_BUILT[0], done, request]).segments] == [0, 2]
    # A request about the same things is the follow-through of the work just done.
    more = T(
        2,
        "can we also copy the export script into the session folder?",
        "The export script is copied into the session folder too.",
    )
    assert [s.first_ordinal for s in run([EXPORT_BUILT[0], done, more]).segments] == [0]


@pytest.mark.parametrize(
    "announcement", ["ok, let's add a new feature.", "One more thing.", "Another small change:"]
)
def test_a_sentence_that_only_announces_a_subject_is_never_the_title(announcement):
    turn = T(
        0,
        f"{announcement} i would like to choose between the web ui and a terminal ui at start",
        "Added a --ui option: web or tui.",
    )
    title = run([turn]).segments[0].title
    assert "feature" not in title.lower() and "thing" not in title.lower()
    assert "web ui" in title.lower(), title
