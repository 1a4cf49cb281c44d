"""`memory-pipeline bench embed|ingest|backup` at tiny scales, so the harness never rots, and the
embedder's speed-ups (token-budget batches, BLAS threads by load) that must not change vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from memory_pipeline import tuning
from memory_pipeline.bench import ingest
from memory_pipeline.bench.embed import make_texts
from memory_pipeline.cli import app
from memory_pipeline.embedding import minilm


def _figures(path: Path) -> dict[str, str]:
    """figure name -> "value unit | target (met)" from the appended Markdown table."""
    return {
        cells[1].strip(): f"{cells[2].strip()} | {cells[3].strip()}"
        for cells in (line.split("|") for line in path.read_text().splitlines())
        if len(cells) > 3 and cells[1].strip() not in ("figure", "---")
    }


def test_token_budget_batches_give_the_vectors_of_one_text_at_a_time() -> None:
    texts = [*make_texts(12, seed=3), "", "ok", "word " * 400]
    embedder = minilm.get_minilm()
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.min(np.sum(together * alone, axis=1)) > 0.99999
    ids = [list(range(n)) for n in (3, 50, 50, 200, 7, 256)]
    batches = list(minilm._batches(ids, max_texts=128, max_tokens=300))
    assert sorted(i for b in batches for i in b) == list(range(len(ids)))
    for batch in batches:  # padded size within the budget unless a text is alone
        assert len(batch) == 1 or len(batch) * max(len(ids[i]) for i in batch) <= 300


@pytest.mark.parametrize(("load", "threads"), [(0.2, 2), (8.0, 1)])
def test_blas_uses_one_thread_on_a_busy_machine(
    monkeypatch: pytest.MonkeyPatch, load: float, threads: int
) -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    monkeypatch.setattr(minilm.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(minilm.os, "getloadavg", lambda: (load, load, load))
    # Two BLAS threads to start from, whatever this machine's default, so both cases can fail.
    with threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        assert before and min(before) == 2
        with minilm._blas_threads():
            inside = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert inside == ([1] * len(before) if threads == 1 else before)
    assert after == before


def test_bench_embed_reports_throughput(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    result = CliRunner().invoke(app, ["bench", "embed", "--scale", "16", "--output", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    figures = _figures(out)
    assert float(figures["numpy MiniLM throughput"].split()[0]) > 0
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        assert "sentence-transformers (not installed: skipped)" in figures
    else:
        assert "(met)" in figures["min cosine numpy vs torch"]


def test_bench_ingest_captures_every_turn_and_measures_a_large_file() -> None:
    messages: list[str] = []
    figures = {f.name: f for f in ingest.run(20, messages.append, large_mb=0.1)}
    assert figures["turns"].value == 20
    assert figures["memories made"].value > 0
    assert figures["ingest throughput"].value > 0
    assert figures["ingest peak RSS"].value > 50
    assert figures["nothing new: sensor tick + the same steps again"].met is not None
    large = [f for name, f in figures.items() if name.startswith("capture peak RSS")]
    assert large and large[0].met is not None
    assert any(m.startswith("capture:") for m in messages)
    assert any(m.startswith("again, nothing new: passages + embedding") for m in messages)


def test_bench_backup_backs_up_and_verifies(session_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    result = CliRunner().invoke(app, ["bench", "backup", "--scale", "60", "--output", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    figures = _figures(out)
    assert figures["memories"].startswith("60 ")
    # Every HNSW index is left out of the verify's restore: each space's index of memory
    # vectors and of passage vectors, and its partial passage indexes (sql/023).
    partial = sum(len(values) for values in tuning.VECTOR_PARTIAL_INDEXES.values())
    assert f"verify (restore without {2 * (2 + partial)} vector indexes, compare)" in figures
    assert figures["backup + verify"].endswith("(met)")


def test_the_documented_capture_memory_command_generates_and_measures_a_file() -> None:
    """`python -m memory_pipeline.bench.capture_memory --generate-mb N` (the module's and the
    issue notes' way to measure a 500 MB transcript by hand) writes the file and measures it."""
    proc = subprocess.run(
        [sys.executable, "-m", "memory_pipeline.bench.capture_memory", "--generate-mb", "0.3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    figure = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figure["source"] == "chat_import" and figure["turns"] > 100
    assert figure["peak_rss_mb"] >= figure["baseline_rss_mb"] > 0
