"""A dream digest quotes the memories its run rested on: forgetting one leaves no copy of its
text in the stored digest or the digest file, and a dry run deletes no file."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import psycopg

from memory_pipeline.forget.run import forget
from memory_pipeline.forget.select import Selector
from memory_pipeline_tests.dream.helpers import reversed_decisions, run

QUOTED = "fixed window because it is fast"  # from the older decision, quoted by the digest


def test_forgetting_a_memory_a_dream_digest_quotes_scrubs_the_digest(
    conn: psycopg.Connection, tmp_path: Path
) -> None:
    older, _ = reversed_decisions(conn)
    report = run(conn, tmp_path)
    assert report.superseded == 1 and report.digest_path
    digest = Path(report.digest_path)
    assert QUOTED in digest.read_text()

    forget(conn, Selector(memory_ids=[UUID(older)]), dry_run=True)
    assert digest.exists()

    done = forget(conn, Selector(memory_ids=[UUID(older)]))
    assert done.digest_files_removed == 1 and not digest.exists()
    stored = conn.execute("SELECT coalesce(string_agg(digest, ''), '') FROM dream_cycle_runs")
    assert QUOTED not in stored.fetchone()[0]  # type: ignore[index]
