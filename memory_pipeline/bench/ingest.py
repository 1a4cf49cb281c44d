"""Ingest at scale: generated chat transcripts through the pipeline's own steps, from empty.

A seeded generator writes conversations in the chat import format (20 to 300 turns each, prompts
of 1 to 3 and answers of 2 to 8 sentences drawn from the real sentence pool of
`bench/corpus.py`, timestamps spread over 60 days and long past, so every conversation is quiet).
They then go through exactly what an ingest run calls for its partition range: `capture_window`,
`process_window` with the offline rules, `embed_window` (passages and vectors) and, where it
exists, `discover_window` (relationships). Figures: seconds per step, turns per second end to end
(target >= 10) and the process's peak resident memory during the run.

Then one large transcript file (one conversation) through capture alone, in a process of its
own, with its peak memory: the issue's target is under 500 MB for a 500 MB file. Its size is
`--transcript-mb`, else it follows the scale (500 MB at 100,000; `scale / 200` MB, at least 1 MB).
"""

from __future__ import annotations

import json
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

from memory_pipeline.bench.capture_memory import START as _START
from memory_pipeline.bench.capture_memory import measure, write_file
from memory_pipeline.bench.report import Figure

Progress = Callable[[str], None]

TARGET_TURNS_PER_S = 10.0
TARGET_PEAK_MB = 500.0
IDLE_TARGET_S = 10.0  # issue 12: a sensor tick plus the hourly run with nothing new
MAX_TURNS = 10_000  # the corpus; `--scale` above it measures the same
_DAYS = 60


def generate(import_dir: Path, turns: int, sentences: list[str], seed: int = 0) -> int:
    """Write conversations holding `turns` complete turns in total; returns the file count."""
    rng = random.Random(seed)
    written = files = 0
    while written < turns:
        n = min(rng.randint(20, 300), turns - written)
        task = f"bench-{files:05d}"
        at = _START + timedelta(days=rng.randrange(_DAYS), minutes=rng.randrange(600))
        with (import_dir / f"{task}.jsonl").open("w") as f:
            for i in range(n):
                for role, count in (("user", rng.randint(1, 3)), ("assistant", rng.randint(2, 8))):
                    at += timedelta(seconds=rng.randint(20, 400))
                    message = {
                        "task_id": task,
                        "role": role,
                        "text": " ".join(rng.choice(sentences) for _ in range(count)),
                        "timestamp": at.isoformat(),
                        "message_id": f"{task}-{i}-{role[0]}",
                    }
                    if i == 0 and role == "user":
                        message["title"] = f"Bench conversation {files}"
                    f.write(json.dumps(message) + "\n")
        written += n
        files += 1
    return files


class PeakRss:
    """Samples this process's resident memory every 50 ms while entered; `.mb` is the peak."""

    def __init__(self) -> None:
        self.mb = 0.0
        self._stop = threading.Event()

    def _sample(self) -> None:
        import psutil

        proc = psutil.Process()
        while True:
            self.mb = max(self.mb, proc.memory_info().rss / 1e6)
            if self._stop.wait(0.05):
                return

    def __enter__(self) -> PeakRss:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def _timed(
    timings: dict[str, tuple[float, float]], name: str, progress: Progress
) -> Iterator[None]:
    """Wall seconds and this process's CPU seconds (on a shared machine the wall time mostly
    measures the neighbours; the database's own work is in its processes, not counted)."""
    t, c = time.monotonic(), time.process_time()
    yield
    timings[name] = (time.monotonic() - t, time.process_time() - c)
    progress(f"{name}: {timings[name][0]:.1f} s ({timings[name][1]:.1f} s CPU)")


def _steps(conn, import_dir: Path, start: date, end: date, progress: Progress):  # type: ignore[no-untyped-def]
    """The ingest job's steps over [start, end), as the assets call them."""
    from memory_pipeline import tuning
    from memory_pipeline.capture.ingest import capture_window
    from memory_pipeline.capture.sources import SourceRoots
    from memory_pipeline.embedding.minilm import get_minilm
    from memory_pipeline.embedding.store import embed_window
    from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
    from memory_pipeline.semantic.process import process_window

    roots = SourceRoots(
        codex_home=import_dir.parent / "no-codex",
        claude_home=import_dir.parent / "no-claude",
        import_dir=import_dir,
        kind="real",
    )
    quiet = tuning.SEMANTIC_QUIET_MINUTES
    steps = [
        ("capture", lambda: capture_window(conn, roots.connectors(), start, end, progress)),
        (
            "semantic pass (offline rules)",
            lambda: process_window(
                conn,
                OfflineRulesBackend(embedder=get_minilm()),
                start,
                end,
                quiet,
                progress=progress,
            ),
        ),
        ("passages + embedding", lambda: embed_window(conn, get_minilm(), start, end, progress)),
    ]
    try:
        from memory_pipeline.relationships.judges import judge_for
        from memory_pipeline.relationships.store import discover_window
    except ImportError:
        return steps
    judge = judge_for("http://127.0.0.1:9", None, 1.0)  # no model: the offline judge
    steps.append(
        ("relationships", lambda: discover_window(conn, judge, start, end, progress=progress))
    )
    return steps


def _sensor_tick(conn, import_dir: Path) -> list[date]:  # type: ignore[no-untyped-def]
    """One evaluation of the transcript sensor's decision (`watch`), from a fresh cursor;
    returns the days it would request a run for."""
    from memory_pipeline.capture.changes import WatchCursor, watch
    from memory_pipeline.capture.sources import SourceRoots

    roots = SourceRoots(
        codex_home=import_dir.parent / "no-codex",
        claude_home=import_dir.parent / "no-claude",
        import_dir=import_dir,
        kind="real",
    )
    outcome = watch(
        conn,
        roots.connectors(),
        WatchCursor.load(None),
        in_flight=lambda: (set(), set()),
        settle_ns=int(roots.quiet_minutes * 60e9),
    )
    return sorted(outcome.days)


def run(scale: int, progress: Progress, large_mb: float | None = None) -> list[Figure]:
    from memory_pipeline.bench.corpus import bench_database, sentence_pool
    from memory_pipeline.db.connection import connect

    turns = max(20, min(scale, MAX_TURNS))
    if large_mb is None:
        large_mb = max(1.0, min(TARGET_PEAK_MB, scale / 200))
    sentences = sentence_pool()
    start, end = _START.date(), _START.date() + timedelta(days=_DAYS + 30)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="mp-bench-ingest-") as tmp:
        import_dir = Path(tmp) / "imports"
        import_dir.mkdir()
        files = generate(import_dir, turns, sentences)
        progress(f"{turns:,} turns in {files} conversations written")
        timings: dict[str, tuple[float, float]] = {}
        with bench_database(progress) as url, connect(url, autocommit=True) as conn:
            from memory_pipeline.embedding.minilm import get_minilm

            get_minilm()  # loading the model is start-up, not ingest
            with PeakRss() as peak:
                t, c = time.monotonic(), time.process_time()
                for name, step in _steps(conn, import_dir, start, end, progress):
                    with _timed(timings, name, progress):
                        step()
                total, cpu = time.monotonic() - t, time.process_time() - c
            # With nothing new: one transcript sensor tick, then the hourly catch-up (the same
            # steps again over the same range).
            again: dict[str, tuple[float, float]] = {}
            t = time.monotonic()
            with _timed(again, "sensor tick, nothing new", progress):
                requested = _sensor_tick(conn, import_dir)
            if requested:
                raise RuntimeError(f"the sensor asked for {requested} with nothing new")
            for name, step in _steps(conn, import_dir, start, end, progress):
                with _timed(again, f"again, nothing new: {name}", progress):
                    step()
            idle = time.monotonic() - t
            stored = conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0]
            memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            if stored != turns:
                raise RuntimeError(f"captured {stored} turns of {turns}")
            rate = turns / total
            figures += [
                Figure("turns", turns, ""),
                Figure("memories made", memories, ""),
                *(
                    Figure(f"{name} time (CPU of this process)", round(s, 1), f"s ({c:.1f} s)")
                    for name, (s, c) in timings.items()
                ),
                Figure("ingest total (CPU of this process)", round(total, 1), f"s ({cpu:.1f} s)"),
                Figure(
                    "ingest throughput",
                    round(rate, 2),
                    "turns/s",
                    f">= {TARGET_TURNS_PER_S:g} turns/s",
                    rate >= TARGET_TURNS_PER_S,
                ),
                Figure("turns per CPU second of the pipeline process", round(turns / cpu, 2), ""),
                Figure("ingest peak RSS", round(peak.mb), "MB"),
                Figure(
                    "nothing new: sensor tick + the same steps again",
                    round(idle, 1),
                    "s",
                    f"<= {IDLE_TARGET_S:g} s",
                    idle <= IDLE_TARGET_S,
                ),
            ]

        # In a process of its own (bench/capture_memory.py): the peak is the capture's, not
        # what the steps above left in this one.
        large = write_file(Path(tmp) / "large", "chat_import", large_mb)
        size_mb = large.stat().st_size / 1e6
        progress(f"one transcript of {size_mb:.0f} MB: capture in a process of its own")
        captured = measure(large)
        figures += [
            Figure(
                f"capture of one {size_mb:.0f} MB transcript ({captured.turns:,} turns)",
                captured.seconds,
                "s",
            ),
            Figure(
                f"capture peak RSS, {size_mb:.0f} MB transcript",
                round(captured.peak_rss_mb),
                "MB",
                f"< {TARGET_PEAK_MB:g} MB (target at 500 MB)",
                captured.peak_rss_mb < TARGET_PEAK_MB,
            ),
        ]
    return figures
