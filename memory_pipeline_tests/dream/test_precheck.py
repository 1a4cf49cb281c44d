"""The deterministic precheck: what it removes before any model call, and what it always holds."""

from __future__ import annotations

import psycopg

from memory_pipeline.dream import precheck
from memory_pipeline.dream.feedback import Feedback
from memory_pipeline.dream.models import Candidate, CandidateDraft, Slice
from memory_pipeline_tests.dream.helpers import edge, mem


def _draft(rests_on: list[str], title: str = "A new synthesis", **kw: object) -> CandidateDraft:
    return CandidateDraft(
        operation=kw.pop("operation", "CREATE"),  # type: ignore[arg-type]
        schema_operation="assimilation",
        type="synthesis",
        title=title,
        content=kw.pop("content", "Something new that rests on both memories, stated in full."),  # type: ignore[arg-type]
        rests_on=rests_on,
        **kw,  # type: ignore[arg-type]
    )


def test_slices(conn: psycopg.Connection) -> None:
    a, b, c = (mem(conn, f"m{i}", f"memory {i}") for i in range(3))
    dream = mem(conn, "Earlier synthesis", "Already thought.", source_type="dream_cycle")
    edge(conn, dream, a, "derived_from")
    edge(conn, dream, c, "derived_from")
    supersede = mem(conn, "Earlier supersede", "Reversed.", source_type="dream_cycle")
    edge(conn, supersede, a, "derived_from")
    edge(conn, supersede, b, "derived_from")
    found = [
        Slice("temporal_juxtaposition", "same day", (b, c)),
        Slice("cross_project_collision", "similar", (c, b), score=0.9),  # same set, better
        Slice("orphan_archaeology", "alone", (a,)),
        Slice("stale_priority", "old", (c, a)),  # what the earlier synthesis rests on
        Slice("contradiction_hunt", "reversed", (b, a)),  # restates too, but always held
    ]
    report = precheck.PrecheckReport()
    kept = precheck.slices(conn, found, report)
    assert [s.strategy for s in kept] == ["cross_project_collision", "contradiction_hunt"]
    assert report.removed == {
        "slice_repeat_in_run": 1,
        "slice_too_small": 1,
        "slice_restates_memory": 1,
    }
    # The slice holds exactly what the earlier synthesis rests on: its own evidence, so it is
    # dropped without corroborating it (corroboration counts distinct evidence, not runs).
    assert not report.corroborated and dream


def test_candidates(conn: psycopg.Connection) -> None:
    a, b = mem(conn, "Lock per day", "advisory lock"), mem(conn, "Lock for beat", "advisory")
    existing = mem(conn, "Advisory locks in two projects", "Both projects use advisory locks.")
    fresh = Candidate(_draft([a, b]), "cross_project_collision", "similar")
    repeat = Candidate(_draft([b, a], title="Same proposal again"), "temporal", "same day")
    restates = Candidate(_draft([a], title="advisory locks in two projects"), "x", "y")
    by_user = Candidate(_draft([existing, a]), "x", "y")
    supersede = Candidate(
        _draft(
            [a, b], title="Lock for beat", operation="SUPERSEDE", target_memory_id=a, successor_id=b
        ),
        "contradiction_hunt",
        "reversed",
    )
    feedback = Feedback(user_rejected={by_user.fingerprint})
    report = precheck.PrecheckReport()
    kept = precheck.candidates(
        conn, [fresh, repeat, restates, by_user, supersede], feedback, report
    )
    # The SUPERSEDE has the title of an active memory, yet reaches the panel.
    assert kept == [fresh, supersede]
    assert report.removed == {
        "candidate_repeat_in_run": 1,
        "candidate_restates_memory": 1,
        "candidate_rejected_by_user": 1,
    }
    assert report.corroborated == {existing: {precheck.evidence_key([a])}}


def test_one_supersede_per_target_the_newest_successor(conn: psycopg.Connection) -> None:
    old = mem(conn, "Redis", "keep counters in Redis", type="decision", days=0)
    review = mem(conn, "Move to Postgres", "move counters to Postgres", type="decision", days=27)
    done = mem(conn, "Postgres bucket", "token bucket in Postgres", type="decision", days=29)

    def sup(successor: str) -> Candidate:
        draft = _draft(
            [successor, old],
            title=f"Reversed by {successor}",
            operation="SUPERSEDE",
            target_memory_id=old,
            successor_id=successor,
        )
        return Candidate(draft, "contradiction_hunt", "reversed")

    first, newest = sup(review), sup(done)
    report = precheck.PrecheckReport()
    kept = precheck.candidates(conn, [first, newest], Feedback(), report)
    assert kept == [newest]
    assert report.removed == {"supersede_older_successor": 1}
