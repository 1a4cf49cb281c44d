"""Peak memory of capturing one large transcript file, measured in a process of its own.

Issue 12: streaming keeps capture's peak resident memory under 500 MB on a single 500 MB
transcript. The figure must be the capture's own, not what earlier steps of a benchmark left in
the process, so `measure()` runs this module as a subprocess (`python -m
memory_pipeline.bench.capture_memory FILE`): it captures the file into a fresh bench database and
prints one JSON line with the peak RSS (`VmHWM`, exact, no sampling), the seconds and the
turns stored. The chat-import file is one conversation written by `large_file` (below); a
Codex rollout or Claude Code session is a demo transcript whose tool output is repeated until
the file has the size asked for (real agent files grow large by tool output).

Re-run by hand: `python -m memory_pipeline.bench.capture_memory --generate-mb 500
[--source chat_import|codex|claude_code]`.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

# The first timestamp of the generated conversations (bench ingest uses the same).
START = datetime(2026, 6, 1, tzinfo=UTC)


@dataclass(frozen=True)
class CaptureMemory:
    file_mb: float
    turns: int
    seconds: float
    peak_rss_mb: float
    baseline_rss_mb: float  # the process before capture started (imports, database)


def measure(path: Path, timeout_s: float = 3600) -> CaptureMemory:
    """Capture `path` (under a root made by `write_file`) in a fresh process; its figures."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline.bench.capture_memory", str(path)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"capture of {path} failed: {done.stderr.strip()[-2000:]}")
    return CaptureMemory(**json.loads(done.stdout.strip().splitlines()[-1]))


def _rss_mb() -> float:
    """This process's peak resident memory. VmHWM, not ru_maxrss: Linux carries ru_maxrss over
    fork and exec, so a capture started from a large benchmark process would report the
    parent's peak (317 MB instead of 101 MB at 50 MB, measured)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # KiB on Linux


def _current_rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 1e6


def _capture(path: Path) -> CaptureMemory:
    from memory_pipeline.bench.corpus import bench_database
    from memory_pipeline.capture.ingest import capture_window
    from memory_pipeline.capture.sources import SourceRoots
    from memory_pipeline.db.connection import connect

    start, end = START.date() - timedelta(days=3650), START.date() + timedelta(days=3650)
    root = next(p for p in path.parents if p.name == "root")
    with bench_database() as url, connect(url, autocommit=True) as conn:
        roots = SourceRoots(
            codex_home=root / "codex",
            claude_home=root / "claude",
            import_dir=root / "imports",
            kind="real",
        )
        baseline = _current_rss_mb()
        t = time.monotonic()
        capture_window(conn, roots.connectors(), start, end)
        took = time.monotonic() - t
        peak = _rss_mb()
        turns = conn.execute("SELECT count(*) FROM agent_turns").fetchone()[0]
    return CaptureMemory(
        file_mb=round(path.stat().st_size / 1e6, 1),
        turns=turns,
        seconds=round(took, 1),
        peak_rss_mb=round(peak, 1),
        baseline_rss_mb=round(baseline, 1),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, help="a chat import file to capture")
    parser.add_argument("--generate-mb", type=float, help="write a file of this size first")
    parser.add_argument("--source", choices=SOURCES, default="chat_import")
    args = parser.parse_args(argv)
    if args.file is not None:
        print(json.dumps(_capture(args.file).__dict__))
        return
    with tempfile.TemporaryDirectory(prefix="mp-bench-capture-") as tmp:
        path = write_file(Path(tmp), args.source, args.generate_mb or 500)
        print(json.dumps({"source": args.source, **measure(path).__dict__}))


SOURCES = ("chat_import", "codex", "claude_code")
_DEMO_CODEX = "sessions/2026/09/21/rollout-2026-09-21T09-41-33-01a0c2e9-bd9a-7629-b996-e3bf2128d61f"
_DEMO_CLAUDE = "projects/-home-mara-homelab/0fa0246b-c0af-4dcb-ba29-2c9a6e43758d"
_PAD = 20_000  # characters of tool output per repeated record


def write_file(tmp: Path, source: str, megabytes: float) -> Path:
    """One transcript of about `megabytes` MB under `tmp/root/<source root>`; its path."""
    from memory_pipeline.settings import DEMO_CORPUS

    root = tmp / "root"
    if source == "chat_import":
        from memory_pipeline.bench.corpus import sentence_pool

        path = root / "imports" / "large.jsonl"
        path.parent.mkdir(parents=True)
        large_file(path, megabytes, sentence_pool())
        return path
    name = _DEMO_CODEX if source == "codex" else _DEMO_CLAUDE
    home = "codex_home" if source == "codex" else "claude_home"
    lines = (DEMO_CORPUS / home / f"{name}.jsonl").read_text().splitlines()
    path = root / ("codex" if source == "codex" else "claude") / f"{name}.jsonl"
    path.parent.mkdir(parents=True)
    copies = max(1, int(megabytes * 1e6 / (_PAD * (1 if source == "codex" else 2))))
    with path.open("w") as f:
        for line in (
            _inflate_codex(lines, copies) if source == "codex" else _inflate_claude(lines, copies)
        ):
            f.write(line + "\n")
    return path


def _pad(i: int) -> str:
    return (f"line {i}: " + "build output and test log text " * (_PAD // 31))[:_PAD]


def _inflate_codex(lines: list[str], copies: int):  # type: ignore[no-untyped-def]
    """The rollout with its first tool output repeated `copies` times (distinct outputs)."""
    at = next(i for i, line in enumerate(lines) if '"function_call_output"' in line)
    record = json.loads(lines[at])
    yield from lines[: at + 1]
    for i in range(copies):
        record["payload"]["output"] = _pad(i)
        yield json.dumps(record)
    yield from lines[at + 1 :]


def _inflate_claude(lines: list[str], copies: int):  # type: ignore[no-untyped-def]
    """The session with `copies` more tool call / tool result pairs chained after its first."""
    at = next(i for i, line in enumerate(lines) if '"tool_result"' in line)
    call, result = json.loads(lines[at - 1]), json.loads(lines[at])
    yield from lines[: at + 1]
    parent = result["uuid"]
    for i in range(copies):
        call.update(uuid=f"bench-call-{i}", parentUuid=parent)
        result.update(uuid=f"bench-result-{i}", parentUuid=f"bench-call-{i}")
        result["sourceToolAssistantUUID"] = f"bench-call-{i}"
        result["message"]["content"][0]["content"] = _pad(i)
        result["toolUseResult"]["content"] = _pad(i)
        yield json.dumps(call)
        yield json.dumps(result)
        parent = f"bench-result-{i}"
    rest = json.loads(lines[at + 1])
    rest["parentUuid"] = parent
    yield json.dumps(rest)
    yield from lines[at + 2 :]


def large_file(path: Path, megabytes: float, sentences: list[str], seed: int = 1) -> int:
    """One conversation of about `megabytes` MB; returns its turns."""
    rng = random.Random(seed)
    at = START
    limit = int(megabytes * 1_000_000)
    size = turns = 0
    with path.open("w") as f:
        while size < limit:
            for role, count in (("user", rng.randint(1, 3)), ("assistant", rng.randint(2, 8))):
                at += timedelta(seconds=rng.randint(20, 400))
                line = json.dumps(
                    {
                        "task_id": "bench-large",
                        "role": role,
                        "text": " ".join(rng.choice(sentences) for _ in range(count)),
                        "timestamp": at.isoformat(),
                    }
                )
                f.write(line + "\n")
                size += len(line) + 1
            turns += 1
    return turns


if __name__ == "__main__":
    main()
