"""`memory-pipeline bench freshness` at a tiny scale, so the harness never rots: nothing new asks
for no work, and a turn appended to a chat import file reaches `serving.search`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from memory_pipeline.cli import app


def test_bench_freshness_finds_the_new_turn_and_idles_cheaply(
    session_home: Path, tmp_path: Path
) -> None:
    out = tmp_path / "BENCHMARKS.md"
    result = CliRunner().invoke(app, ["bench", "freshness", "--scale", "60", "--output", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    rows = {
        cells[1].strip(): (cells[2].strip(), cells[3].strip())
        for cells in (line.split("|") for line in out.read_text().splitlines())
        if len(cells) > 3 and cells[1].strip() not in ("figure", "---")
    }
    assert rows["memories"][0] == "60"
    idle = rows["nothing new: sensor ticks + hourly catch-up + hourly maintenance"]
    assert idle[1] == "<= 10 s (met)"
    assert "nothing new: hourly maintenance: BM25 statistics" in rows
    fresh = float(rows["new turn: write to search (median of 3)"][0].split()[0])
    assert 0 < fresh < 60
    assert rows["new turn: worst, plus a full sensor interval (15 s)"][1].endswith("(met)")
