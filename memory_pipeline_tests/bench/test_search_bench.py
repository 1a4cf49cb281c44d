"""The benchmark corpus and `memory-pipeline bench search` at a tiny scale, so neither rots."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from memory_pipeline.bench.corpus import _Generator, load_corpus, sentence_pool
from memory_pipeline.cli import app
from memory_pipeline.db.connection import connect
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.store import embed_window


def test_the_corpus_is_seeded() -> None:
    pool = sentence_pool()[:50]
    vectors = np.ones((len(pool), 384), dtype=np.float32)

    def memories(seed: int) -> list[tuple]:
        gen = _Generator(120, seed, pool, vectors)
        gen.generate()
        return [row[:4] for row in gen.rows.memories]

    assert memories(3) == memories(3)
    assert memories(3) != memories(4)
    assert len(memories(3)) == 120


def test_the_corpus_is_what_the_pipeline_would_have_written(db_url: str) -> None:
    """After the bulk load, the embedding asset's own step finds nothing to cut or embed: the
    passages, their source hashes and every vector's content hash match the pipeline's."""
    info = load_corpus(db_url, 200)
    assert info.memories == 200 and info.passages >= 200
    with connect(db_url, autocommit=True) as conn:
        report = embed_window(conn, get_minilm(), date(2020, 1, 1), date(2030, 1, 1))
        assert (report.embedded, report.passages_cut, report.passages_embedded) == (0, 0, 0)
        assert report.pieces_embedded == 0  # the messages' vectors, hashed by their turns
        assert report.serving_space == "local:all-minilm-l6-v2:384"
        kinds = dict(conn.execute("SELECT type, count(*) FROM memories GROUP BY 1").fetchall())
        assert {"segment", "decision", "insight", "correction_episode"} <= set(kinds)
        orphans = conn.execute(
            "SELECT count(*) FROM memories m WHERE NOT EXISTS"
            " (SELECT 1 FROM memory_provenance p WHERE p.memory_id = m.id)"
        ).fetchone()[0]  # type: ignore[index]
        assert orphans == 0
        postings = conn.execute("SELECT count(*) FROM passage_postings").fetchone()[0]  # type: ignore[index]
        assert postings > info.passages


def test_bench_search_runs_and_appends_its_figures(session_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    result = CliRunner().invoke(app, ["bench", "search", "--scale", "300", "--output", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    text = out.read_text()
    assert "## search at scale 300" in text
    figures = {
        cells[1].strip(): cells[2].split()[0]
        for cells in (line.split("|") for line in text.splitlines() if line.startswith("| "))
    }
    for figure in (
        "full pipeline p95 (no query embedding)",
        "BM25 channel p95",
        "vector channel p95",
        "query embedding p95",
        "HNSW recall@100 (no filter)",
        "HNSW recall@100 (filtered)",
        "BM25 top-10 memories shared with exhaustive",
    ):
        assert figure in figures
    # The channel ran on the keyword index the corpus load built, and ranks as exhaustive BM25
    # does up to tantivy's length quantisation (lengths above 40 tokens within about 7%).
    assert figures["BM25 channel on the keyword index (1) or PostgreSQL (0)"] == "1"
    assert float(figures["BM25 top-100 memories shared with exhaustive"]) >= 0.98
    assert float(figures["HNSW recall@100 (no filter)"]) >= 0.95
    # What agents use (issue 35), each figure measured, none FAILED, each target beside it.
    assert not [name for name in figures if "FAILED" in name], text
    rows = {
        cells[1].strip(): cells[3].strip()
        for cells in (line.split("|") for line in text.splitlines() if line.startswith("| "))
    }
    for figure, target in (
        ("context() p95 at 400 tokens", "<= 100 ms"),
        ("context() p95 at 1,000 tokens", "<= 100 ms"),
        ("context() p95 at 2,000 tokens", "<= 100 ms"),
        ("MCP sequential p50 / in-process search() p50", "<= 1.3"),
        ("MCP 1 clients: errors", "= 0"),
        ("MCP 4 clients: errors", "= 0"),
        ("MCP throughput 4 clients / 1 client", ">= 1.8"),
        ("MCP 20 sessions at once: answered without error", "= 20"),
        ("MCP 20 sessions at once: p95", "<= 5 s"),
        ("hook cold session start injected", "= 1"),
        ("hook prompt warm p95 (whole command)", "<= 500 ms"),
        ("hook 20 prompts at once: answered with memory", "= "),
    ):
        assert rows[figure].startswith(target), (figure, rows[figure])
    # Every MCP call was answered: the tiny corpus is no reason for an error.
    assert figures["MCP 1 clients: errors"] == figures["MCP 4 clients: errors"] == "0"
    assert float(figures["MCP 4 clients: calls/s"]) > 0
    # CPU per call, which load distorts less than the times: the search, and the MCP server.
    assert float(figures["in-process search() CPU per call"]) > 0
    assert float(figures["MCP server CPU per sequential call (server + workers)"]) > 0
    assert float(figures["MCP 4 clients: server CPU per call"]) > 0
    assert rows["MCP 20 sessions at once: failed otherwise"].startswith("= 0"), text
    # The file opens with the latest figure for every target, the history below it.
    head, history = text.split("## History", 1)
    assert "| search | 300 | context() p95 at 1,000 tokens |" in head
    assert "## search at scale 300" in history
