"""The offline rules backend: where segments begin and end (cues, similarity, vectors, the tail)."""

from __future__ import annotations

import numpy as np

from memory_pipeline_tests.semantic.rules_support import CSV_EXPORT, DOCKER, T, memories, run, spans

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
