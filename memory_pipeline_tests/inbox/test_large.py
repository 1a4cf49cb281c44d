"""Large inbox files with bounded memory: text, Markdown and subtitles streamed in chunks, their
passages written in batches, every character captured; re-adding changes nothing; files above
the hard cap, and formats read whole above theirs, recorded and skipped, never crashing the run.

The tuning constants are made small here (4 KB chunks, 8 KB sections, batches of 7), so a
"large" file is a few MB and a run takes seconds; `python -m memory_pipeline.bench.inbox_memory`
measures the real sizes (README of bench/inbox_memory.py).
"""

from __future__ import annotations

import os
import random
import re
import tracemalloc
from datetime import date
from pathlib import Path

import psycopg
import pytest

from memory_pipeline import tuning
from memory_pipeline.inbox.readers import read_document
from memory_pipeline.inbox.store import capture_inbox
from memory_pipeline_tests.inbox.files import text_pdf, write

DAY = date(2026, 11, 20)
LATER = date(2026, 11, 21)
WORDS = [
    *("backup", "restore", "pgBackRest", "WAL", "archive", "retention", "drill", "replica"),
    *("vacuum", "index", "migration", "schema", "staging", "invoices", "rollback", "checkpoint"),
    *("ÿé€", "数据库"),  # multi-byte UTF-8: a character cut between two chunks
]


@pytest.fixture(autouse=True)
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tuning, "INBOX_READ_CHUNK_BYTES", 4096)
    monkeypatch.setattr(tuning, "INBOX_SECTION_MAX_CHARS", 8192)
    monkeypatch.setattr(tuning, "INBOX_WRITE_BATCH", 7)
    monkeypatch.setattr(tuning, "INBOX_MAX_WHOLE_FILE_BYTES", 64 * 1024)
    monkeypatch.setattr(tuning, "INBOX_MAX_FILE_BYTES", 4 * 1024 * 1024)
    monkeypatch.setattr(tuning, "INBOX_MAX_TEXT_BYTES", 4 * 1024 * 1024)
    monkeypatch.setattr(tuning, "INBOX_MAX_PDF_PAGES", 4)


def prose(rng: random.Random, paragraphs: int) -> str:
    out = []
    for i in range(paragraphs):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 18))) + rng.choice(".!?")
            for _ in range(rng.randint(1, 9))
        ]
        sep = rng.choice(["\n\n", "\r\n\r\n", "\n  \n", "\n"])  # CRLF, blank-ish lines
        out.append(" ".join(sentences) + sep)
        if i % 97 == 50:  # a very long line with no break at all (a minified log line)
            out.append("x" * 20_000 + " " + " ".join(rng.choice(WORDS) for _ in range(3000)))
            out.append("\n\n")
    return "".join(out)


def words(text: str) -> str:
    """The text's characters but whitespace, in order (a word longer than a passage is cut)."""
    return re.sub(r"\s+", "", text)


def stored(conn: psycopg.Connection, name: str) -> list[tuple[int, str, str]]:
    return conn.execute(
        "SELECT p.ordinal, p.position, m.content FROM inbox_sources s"
        " JOIN inbox_passages p ON p.source_id = s.id JOIN memories m ON m.id = p.memory_id"
        " WHERE s.path LIKE %s ORDER BY p.ordinal",
        ["%/" + name],
    ).fetchall()


def snapshot(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT m.id, m.content, m.updated_at, s.content_sha256, s.revisions, s.passages"
        " FROM memories m JOIN inbox_passages p ON p.memory_id = m.id"
        " JOIN inbox_sources s ON s.id = p.source_id ORDER BY s.locator, p.ordinal"
    ).fetchall()


def test_large_text_markdown_and_subtitles_are_captured_whole(conn, tmp_path: Path) -> None:
    rng = random.Random(7)
    inbox = tmp_path / "inbox"
    log_text = prose(rng, 1500)
    write(inbox / "big.log.txt", log_text.encode())
    md_parts = []
    for n in range(60):
        md_parts.append(f"## Part {n}\n\n{prose(rng, 25)}")
    md_text = "---\ntitle: The export\n---\n" + "\n".join(md_parts)
    write(inbox / "export.md", md_text.encode())
    cues = []
    for n in range(1, 4000):
        at = f"{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}"
        cues.append(f"{n}\n{at},000 --> {at},900\ncue{n} {' '.join(WORDS[n % 7 :][:6])}\n\n")
    write(inbox / "talk.en.srt", "".join(cues))
    assert all(p.stat().st_size > 20 * tuning.INBOX_SECTION_MAX_CHARS for p in inbox.iterdir())

    report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)

    assert report.by_kind["document"]["new"] == 2 and report.by_kind["video"]["new"] == 1
    assert report.file_issues == {}
    log = stored(conn, "big.log.txt")
    assert [r[0] for r in log] == list(range(len(log)))
    assert all(len(r[2]) <= tuning.INBOX_PASSAGE_MAX_CHARS for r in log)
    assert words(" ".join(r[2] for r in log)) == words(log_text)  # every word, in order
    md = stored(conn, "export.md")
    assert words(" ".join(r[2] for r in md)) == words(
        "\n".join(re.sub(r"^## Part \d+$", "", p, flags=re.M) for p in md_parts)
    )
    assert [r[1] for r in md][:1] == ["§ Part 0"] and md[-1][1] == "§ Part 59"
    assert conn.execute(
        "SELECT title FROM inbox_sources WHERE path LIKE '%export.md'"
    ).fetchone() == ("The export",)
    srt = stored(conn, "talk.en.srt")
    said = " ".join(r[2] for r in srt)
    assert [int(n) for n in re.findall(r"\bcue(\d+)\b", said)] == list(range(1, 4000))
    seconds = [sum(int(x) * 60**i for i, x in enumerate(reversed(r[1].split(":")))) for r in srt]
    assert seconds[0] == 1 and seconds == sorted(seconds) and seconds[-1] > 3600
    counts = dict(
        conn.execute("SELECT path, passages FROM inbox_sources WHERE kind = 'document'").fetchall()
    )
    assert sorted(counts.values()) == sorted([len(log), len(md)])


def test_streaming_keeps_memory_bounded(conn, tmp_path: Path) -> None:
    """Capturing a 1.6 MB text holds a small fraction of it at any time (Python objects): about
    250 KB, for 1 MB as for 3 MB (measured), with 8 KB sections and batches of 7 passages."""
    inbox = tmp_path / "inbox"
    text = prose(random.Random(3), 1800)
    path = write(inbox / "log.txt", text.encode())
    size = path.stat().st_size
    assert size > 1_500_000
    warm = write(tmp_path / "warm" / "warm.txt", prose(random.Random(4), 30))
    capture_inbox(conn, warm.parent, tmp_path / "cache", DAY)  # imports, compiled patterns
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.by_kind["document"]["new"] == 1
    assert peak < size / 4, f"peak {peak} bytes for a {size} byte file"


def test_re_adding_a_large_file_changes_nothing_and_an_edit_re_derives(
    conn, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    rng = random.Random(11)
    text = prose(rng, 1200)
    path = write(inbox / "notes.txt", text)
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    before = snapshot(conn)
    assert len(before) > 3 * tuning.INBOX_WRITE_BATCH
    report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert snapshot(conn) == before and report.by_kind["document"]["unchanged"] == 1
    os.utime(path, ns=(1, 1))  # the same content again under a new mtime: hashed, not written
    report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert snapshot(conn) == before and report.by_kind["document"]["unchanged"] == 1
    assert report.passages_written == 0

    shorter = text[: len(text) // 2]
    path.write_text(shorter)
    os.utime(path, ns=(2, 2))
    report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert report.by_kind["document"]["revised"] == 1 and report.passages_deleted > 0
    after = snapshot(conn)
    assert len(after) < len(before)
    assert [r[0] for r in after] == [r[0] for r in before[: len(after)]]  # same memories
    assert words(" ".join(r[2] for r in stored(conn, "notes.txt"))) == words(shorter)
    assert after[0][5] == len(after) and after[0][4] == 2


def test_files_over_the_caps_are_recorded_and_skipped(conn, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    write(inbox / "fine.md", "# Fine\n\nThe drill runs monthly.\n")
    with (inbox / "absurd.txt").open("wb") as fh:  # sparse: over the hard cap, never read
        fh.truncate(tuning.INBOX_MAX_FILE_BYTES + 1)
    page = "<html><body><article>" + "<p>Restores are tested weekly.</p>" * 3000
    write(inbox / "page.html", page + "</article></body></html>")  # > the whole-file cap
    body = "Text that looks fine at first.\n" * 1000
    write(inbox / "late-binary.txt", body.encode() + os.urandom(60_000))  # binary past chunk 1
    write(inbox / "book.pdf", text_pdf([f"Chapter {n}." for n in range(6)]))  # > the page cap
    report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert report.by_kind["document"]["new"] == 1
    skips = {
        Path(r[0]).name: (r[1], r[2])
        for r in conn.execute("SELECT path, reason, detail FROM capture_skips").fetchall()
    }
    assert set(skips) == {"absurd.txt", "page.html", "late-binary.txt", "book.pdf"}
    assert skips["book.pdf"][0] == "too_large" and "6 pages" in skips["book.pdf"][1]
    assert skips["absurd.txt"][0] == "too_large" and "split it" in skips["absurd.txt"][1]
    assert skips["page.html"][0] == "too_large_to_read_whole"
    assert "cannot be streamed" in skips["page.html"][1]
    assert skips["late-binary.txt"][0] == "binary"
    # nothing of the binary file was kept (its first chunks had been written)
    assert conn.execute("SELECT count(*) FROM inbox_sources").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
    assert report.passages_written == 1 and report.metadata()["documents_failed"] == 4


def test_a_long_line_is_cut_at_spaces_not_lost(tmp_path: Path) -> None:
    line = " ".join(f"w{i}" for i in range(20_000))  # one 120 KB line, no newline
    doc = read_document(write(tmp_path / "one-line.txt", line))
    sections = doc.sections
    assert len(sections) > 1
    assert all(len(s.text) <= tuning.INBOX_SECTION_MAX_CHARS for s in sections)
    assert " ".join(s.text for s in sections).split() == line.split()


@pytest.mark.parametrize("name", ["huge.log.txt", "export.md", "stream.en.vtt", "stream.srt"])
def test_a_text_file_above_the_text_limit_is_refused_from_its_size(
    conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A text, Markdown or subtitle file above INBOX_MAX_TEXT_BYTES (a log, a dump: tens of
    thousands of passages to embed and link) is recorded at once from its size, never read (a
    sparse file of NUL bytes would be `binary` if it were opened); the run goes on."""
    monkeypatch.setattr(tuning, "INBOX_MAX_TEXT_BYTES", 1024 * 1024)
    inbox = tmp_path / "inbox"
    write(inbox / "fine.md", "# Fine\n\nThe drill runs monthly.\n")
    with (inbox / name).open("wb") as fh:
        fh.truncate(tuning.INBOX_MAX_TEXT_BYTES + 1)
    report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert sum(k["new"] for k in report.by_kind.values()) == 1
    assert sum(k["failed"] for k in report.by_kind.values()) == 1
    ((reason, detail),) = conn.execute("SELECT reason, detail FROM capture_skips").fetchall()
    assert reason == "too_large"
    assert str(tuning.INBOX_MAX_TEXT_BYTES + 1) in detail and "split it" in detail
    again = capture_inbox(conn, inbox, tmp_path / "cache", LATER)  # recorded once, not re-read
    assert conn.execute("SELECT count(*) FROM capture_skips").fetchone() == (1,)
    assert again.by_kind["document"]["new"] == 0


def test_a_document_with_too_many_passages_is_rolled_back_and_recorded(
    conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document that cuts into more than INBOX_MAX_DOCUMENT_PASSAGES passages (a heading on
    every line, a PDF of dense pages) is stopped as soon as it passes the limit: nothing of it
    is kept, the reason is recorded, the other documents are stored."""
    monkeypatch.setattr(tuning, "INBOX_MAX_DOCUMENT_PASSAGES", 40)
    inbox = tmp_path / "inbox"
    write(inbox / "many.md", "".join(f"# H{n}\n\nLine {n}.\n" for n in range(100)))
    write(inbox / "few.md", "".join(f"# H{n}\n\nLine {n}.\n" for n in range(40)))
    report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert report.by_kind["document"]["new"] == 1 and report.by_kind["document"]["failed"] == 1
    assert report.passages_written == 40
    ((path, reason, detail),) = conn.execute(
        "SELECT path, reason, detail FROM capture_skips"
    ).fetchall()
    assert Path(path).name == "many.md" and reason == "too_many_passages"
    assert "more than 40 passages" in detail and "split it" in detail
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (40,)
    assert conn.execute("SELECT count(*) FROM inbox_sources").fetchone() == (1,)


def test_a_large_document_reports_its_progress_as_it_is_written(
    conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Capturing one long document says how far it got every INBOX_PROGRESS_PASSAGES passages
    (the run's terminal and the Dagster UI show these lines): a large file is never silent."""
    monkeypatch.setattr(tuning, "INBOX_PROGRESS_PASSAGES", 10)
    inbox = tmp_path / "inbox"
    write(inbox / "long.md", "".join(f"# H{n}\n\nLine {n}.\n" for n in range(35)))
    lines: list[str] = []
    capture_inbox(conn, inbox, tmp_path / "cache", DAY, progress=lines.append)
    about = [line for line in lines if "long.md" in line]
    assert len(about) == 3, lines
    assert "10 passages" in about[0] and "30 passages" in about[-1]
