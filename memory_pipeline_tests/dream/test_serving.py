"""memory_read and memory_graph show the dream cycle's provenance, through the read-only role."""

from __future__ import annotations

from pathlib import Path

import psycopg

from memory_pipeline.db.connection import connect
from memory_pipeline_tests.dream.helpers import reversed_decisions, run
from serving.browse import memory_graph, read_memory
from serving.render import detail_text, graph_text


def test_read_and_graph_show_dream_provenance(
    conn: psycopg.Connection, reader_url: str, tmp_path: Path
) -> None:
    older, newer = reversed_decisions(conn)
    report = run(conn, tmp_path, run_type="session_start")
    dream_id = conn.execute("SELECT id FROM memories WHERE source_type = 'dream_cycle'").fetchone()[
        0
    ]  # type: ignore[index]

    with connect(reader_url, autocommit=True) as reader:
        made = read_memory(reader, dream_id)
        old = read_memory(reader, older)
        graph = memory_graph(reader, dream_id)

    (dp,) = made.dream
    assert dp.role == "created" and str(dp.run_id) == report.run_id
    assert dp.run_type == "session_start" and dp.operation == "SUPERSEDE"
    assert {str(m) for m in dp.rests_on} == {older, newer}
    assert set(dp.votes.values()) == {"accept"} and len(dp.votes) == 4
    assert "dream cycle: created by run" in detail_text(made)

    assert old.status == "superseded" and str(old.superseded_by) == newer
    assert [d.role for d in old.dream] == ["superseded"]
    text = detail_text(old)
    assert f"superseded by: {newer}" in text and "dream cycle: superseded by run" in text

    root = next(n for n in graph.nodes if n.depth == 0)
    assert str(root.dream_run_id) == report.run_id
    assert f'dream_run="{report.run_id}"' in graph_text(graph)
