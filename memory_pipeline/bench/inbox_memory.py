"""Peak memory of capturing one large inbox document, measured in a process of its own.

Issue 33: a large plain-text log, Markdown export, subtitle file or PDF book is captured with
bounded memory (readers.py streams text formats in chunks and PDFs page by page; store.py writes
passages in batches). Like capture_memory.py, the figure is the capture's own: `main` writes the
file, then runs this module again on it in a fresh process (`python -m
memory_pipeline.bench.inbox_memory FILE`), which captures it into a fresh bench database and
prints one JSON line: the peak RSS (`VmHWM`), the RSS before capture, the seconds, the passages
stored and the characters they hold.

Re-run by hand: `python -m memory_pipeline.bench.inbox_memory --generate-mb 200 --format txt`
(`md`, `srt`, or `pdf --pages 200`). `--max-file-bytes N` overrides INBOX_MAX_FILE_BYTES and
INBOX_MAX_TEXT_BYTES in the measuring process (to measure a file the inbox refuses by default:
a text above 32 MiB, like the 200 MB log below, is recorded as `too_large` from its size).

Measured (2 shared cores, other work running; 69 MB before capture): 200 MB text, 156,493
passages: peak 101.6 MB, 600 s (the reader before streaming: 1,868.9 MB, 1,749 s); 120 MB
Markdown: 105.3 MB; 20 MB SRT: 105.4 MB, 43 s (before: 435.3 MB, 150 s); 2,000-page PDF
(10.6 MB): 106.8 MB (before: 162.3 MB). Later (load 16 to 20), with the default limits: 30 MB
text, 23,455 passages, 100.4 MB, 88 s; 30 MB Markdown, 24,098 passages, 106.2 MB, 94 s; 30 MB
WebVTT (287,516 cues), 24,310 passages, 106.8 MB, 92 s. The time is each passage's work
(cProfile, 20 MB files): for text, database writes 36%, redaction 29%, depth scoring 23%; for
subtitles, webvtt-py's parsing 39%, the database 17%, redaction 13%.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from memory_pipeline.bench.capture_memory import _current_rss_mb, _rss_mb

FORMATS = ("txt", "md", "srt", "pdf")


@dataclass(frozen=True)
class InboxMemory:
    file_mb: float
    passages: int
    stored_chars: int
    seconds: float
    peak_rss_mb: float
    baseline_rss_mb: float  # the process before capture started (imports, database)
    outcome: str  # new, failed (with the recorded reason)


def measure(path: Path, max_file_bytes: int | None = None, timeout_s: float = 3600) -> InboxMemory:
    """Capture `path` (an inbox file) in a fresh process; its figures."""
    extra = ["--max-file-bytes", str(max_file_bytes)] if max_file_bytes else []
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline.bench.inbox_memory", str(path), *extra],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"capture of {path} failed: {done.stderr.strip()[-2000:]}")
    return InboxMemory(**json.loads(done.stdout.strip().splitlines()[-1]))


def _capture(path: Path) -> InboxMemory:
    from memory_pipeline.bench.corpus import bench_database
    from memory_pipeline.db.connection import connect
    from memory_pipeline.inbox.store import capture_inbox

    with bench_database() as url, connect(url, autocommit=True) as conn:
        baseline = _current_rss_mb()
        t = time.monotonic()
        report = capture_inbox(conn, path.parent, path.parent / ".cache", date(2026, 12, 1))
        took = time.monotonic() - t
        peak = _rss_mb()
        passages, chars = conn.execute(
            "SELECT count(*), coalesce(sum(length(content)), 0) FROM memories WHERE type = 'source'"
        ).fetchone()  # type: ignore[misc]
    new = sum(k["new"] for k in report.by_kind.values())
    outcome = "new" if new else f"failed: {', '.join(report.file_issues) or 'unknown'}"
    return InboxMemory(
        file_mb=round(path.stat().st_size / 1e6, 1),
        passages=passages,
        stored_chars=chars,
        seconds=round(took, 1),
        peak_rss_mb=round(peak, 1),
        baseline_rss_mb=round(baseline, 1),
        outcome=outcome,
    )


def write_file(directory: Path, fmt: str, megabytes: float, pages: int = 200) -> Path:
    """One inbox document of about `megabytes` MB (a PDF: `pages` pages) in `directory`."""
    from memory_pipeline.bench.corpus import sentence_pool

    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    sentences = sentence_pool()
    limit = int(megabytes * 1_000_000)
    if fmt == "pdf":
        from memory_pipeline.demo.pdf import text_pdf

        texts = []
        for _ in range(pages):
            lines = [
                " ".join(rng.choice(sentences) for _ in range(2))[:95]
                .encode("latin-1", "replace")
                .decode("latin-1")
                for _ in range(50)
            ]
            texts.append("\n".join(lines))
        path = directory / "book.pdf"
        path.write_bytes(text_pdf(texts, title="A generated book"))
        return path
    path = directory / {"txt": "large.log.txt", "md": "export.md", "srt": "talk.en.srt"}[fmt]
    size = n = 0
    with path.open("w", encoding="utf-8") as f:
        while size < limit:
            n += 1
            if fmt == "srt":
                start = n * 3
                stamp = f"{start // 3600:02d}:{start // 60 % 60:02d}:{start % 60:02d}"
                end = start + 2
                stamp_end = f"{end // 3600:02d}:{end // 60 % 60:02d}:{end % 60:02d}"
                block = f"{n}\n{stamp},000 --> {stamp_end},500\n{rng.choice(sentences)}\n\n"
            else:
                para = " ".join(rng.choice(sentences) for _ in range(rng.randint(2, 8)))
                heading = f"## Part {n}\n\n" if fmt == "md" and n % 40 == 1 else ""
                block = f"{heading}{para}\n\n"
            f.write(block)
            size += len(block.encode())
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, help="an inbox file to capture")
    parser.add_argument("--generate-mb", type=float, default=200, help="size of the file made")
    parser.add_argument("--format", choices=FORMATS, default="txt")
    parser.add_argument("--pages", type=int, default=200, help="pages of a generated PDF")
    parser.add_argument(
        "--max-file-bytes",
        type=int,
        help="override INBOX_MAX_FILE_BYTES and INBOX_MAX_TEXT_BYTES (and lift the passage cap)",
    )
    args = parser.parse_args(argv)
    if args.file is not None:
        if args.max_file_bytes:
            from memory_pipeline import tuning

            tuning.INBOX_MAX_FILE_BYTES = args.max_file_bytes
            tuning.INBOX_MAX_TEXT_BYTES = args.max_file_bytes
            tuning.INBOX_MAX_DOCUMENT_PASSAGES = args.max_file_bytes  # a passage holds > 1 byte
        print(json.dumps(_capture(args.file).__dict__))
        return
    with tempfile.TemporaryDirectory(prefix="mp-bench-inbox-") as tmp:
        path = write_file(Path(tmp) / "inbox", args.format, args.generate_mb, args.pages)
        figures = measure(path, args.max_file_bytes)
        print(json.dumps({"format": args.format, **figures.__dict__}))


if __name__ == "__main__":
    main()
