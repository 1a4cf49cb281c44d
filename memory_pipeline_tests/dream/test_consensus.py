"""Consensus arithmetic, and deferral tracked across runs until rejected for good."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memory_pipeline.dream.panel import tally
from memory_pipeline_tests.dream.helpers import mem, run, unit

A, R, D = "accept", "reject", "defer"


@pytest.mark.parametrize(
    ("votes", "previous", "expected"),
    [
        ([A, A, A, A], 0, ("ACCEPTED", 0, False)),  # 4-0
        ([A, A, A, R], 0, ("ACCEPTED", 0, False)),  # 3-1
        ([A, A, A, D], 0, ("ACCEPTED", 0, False)),  # three accepts carry a deferral
        ([A, A, R, R], 0, ("REJECTED", 0, False)),  # 2-2
        ([A, R, R, R], 0, ("REJECTED", 0, False)),
        ([A, A, D, R], 0, ("DEFERRED", 1, False)),  # the deferral could still make three
        ([A, D, D, R], 0, ("DEFERRED", 1, False)),
        ([A, D, R, R], 0, ("REJECTED", 0, False)),  # even an accept from it would not
        ([D, D, D, D], 0, ("DEFERRED", 1, False)),
        ([A, A, D, R], 1, ("REJECTED", 2, True)),  # deferred twice: rejected for good
    ],
)
def test_tally(votes: list[str], previous: int, expected: tuple[str, int, bool]) -> None:
    assert tally(votes, previous) == expected


def test_a_candidate_deferred_twice_is_rejected_for_good(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    # Two memories of different projects in the Skeptic's "maybe" band (cosine 0.56): Skeptic
    # defers; both projects went quiet 60 days before the newest memory: the User Advocate
    # rejects; the Epistemologist and the Methodologist accept. 2 accepts + 1 defer: DEFERRED.
    a = mem(
        conn,
        "Advisory lock per day",
        "Use a Postgres advisory lock per day for loads.",
        type="decision",
        project="meterflow",
        vector=unit(1, 0),
    )
    b = mem(
        conn,
        "Advisory lock for beat",
        "Use a Postgres advisory lock for Celery beat.",
        type="decision",
        project="ledgerline",
        vector=unit(0.56, (1 - 0.56**2) ** 0.5),
    )
    mem(
        conn,
        "Unrelated recent note",
        "Pi-hole v6 local DNS records.",
        project="homelab",
        days=60,
        vector=unit(0, 0, 1),
    )

    first = run(conn, tmp_path)
    assert (first.accepted, first.deferred) == (0, 1)
    row1 = conn.execute(
        "SELECT id::text, final_verdict, defer_count, deferred_from, evaluator_a_verdict,"
        " evaluator_b_verdict FROM dream_cycle_candidates"
    ).fetchone()
    assert row1[1:] == ("DEFERRED", 1, None, "defer", "reject")  # type: ignore[index]

    second = run(conn, tmp_path)
    assert (second.deferred, second.rejected) == (0, 1)
    row2 = conn.execute(
        "SELECT final_verdict, defer_count, deferred_from::text, deferred_twice_rejected"
        " FROM dream_cycle_candidates WHERE run_id = %s",
        [second.run_id],
    ).fetchone()
    assert row2 == ("REJECTED", 2, row1[0], True)  # type: ignore[index]
    assert "deferred twice" in second.digest

    third = run(conn, tmp_path)
    assert third.candidates == 0
    precheck = conn.execute(
        "SELECT precheck FROM dream_cycle_runs WHERE id = %s", [third.run_id]
    ).fetchone()[0]  # type: ignore[index]
    assert precheck["removed"]["candidate_deferred_twice"] == 1
    assert conn.execute(
        "SELECT count(*) FROM memories WHERE source_type = 'dream_cycle'"
    ).fetchone() == (0,)
    assert a != b
