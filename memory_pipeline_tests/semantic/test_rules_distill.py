"""The offline rules backend: what becomes a decision or an insight (with its reason), and
determinism."""

from __future__ import annotations

from collections.abc import Sequence

from memory_pipeline.semantic.models import PassInput, PassResult, TurnInput, validate_result
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
from memory_pipeline_tests.semantic.rules_support import CSV_EXPORT, DOCKER, T, memories, run


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


def test_same_input_gives_the_same_output():
    turns = CSV_EXPORT + DOCKER
    a = run(turns)
    b = run(turns)
    assert a.model_dump() == b.model_dump()
    assert a == OfflineRulesBackend().run(PassInput(source="codex", new_turns=turns))


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
