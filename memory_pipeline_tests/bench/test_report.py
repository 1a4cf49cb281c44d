"""BENCHMARKS.md opens with the latest figure for every target; the history stays below it."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.bench.report import Figure, append, latest_targets, render


def _section(scale: int, figures: list[Figure]) -> str:
    return render("search", scale, figures, 1.0)


def test_the_summary_holds_the_latest_figure_of_each_target(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    p95 = "full pipeline p95 (no query embedding)"
    append(_section(100_000, [Figure(p95, 61.0, "ms", "<= 50 ms", False)]), out)
    append(_section(300, [Figure(p95, 9.0, "ms", "<= 50 ms", True)]), out)
    append(
        _section(
            100_000,
            [
                Figure(p95, 44.0, "ms", "<= 50 ms", True),
                Figure("p50", 30.0, "ms"),  # no target: history only
                Figure("MCP call path: FAILED (TimeoutError: x)", 0, "", "measured", False),
            ],
        ),
        out,
    )
    text = out.read_text()
    head, history = text.split("## History", 1)
    assert head.startswith("# Benchmarks\n")
    latest = {(e.scale, e.figure): e for e in latest_targets(text)}
    assert latest[("100,000", p95)].value == "44 ms"
    assert latest[("100,000", p95)].target == "<= 50 ms (met)"
    assert latest[("300", p95)].value == "9 ms"  # each scale keeps its own
    assert ("100,000", "p50") not in latest
    # A failed part is reported while the latest run still fails it, with commit, load, date.
    failed = latest[("100,000", "MCP call path: FAILED (TimeoutError: x)")]
    assert failed.commit and failed.load and failed.when
    assert failed.target == "measured (NOT met)"
    assert history.count("## search at scale") == 3  # the history keeps every run
    # A later run that measures the part clears the failure from the summary.
    append(_section(100_000, [Figure(p95, 47.0, "ms", "<= 50 ms", True)]), out)
    latest = {(e.scale, e.figure): e for e in latest_targets(out.read_text())}
    assert not [f for _, f in latest if "FAILED" in f]
    assert latest[("100,000", p95)].value == "47 ms"
    assert out.read_text().count("## History") == 1
