"""Each inbox format on small files made here, and the bad-file cases (no database)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline import tuning
from memory_pipeline.inbox.chunk import passages
from memory_pipeline.inbox.readers import BadFile, Section, clock, read_document
from memory_pipeline_tests.inbox.files import encrypted_pdf, image_only_pdf, text_pdf, write

ARTICLE = """<!doctype html><html><head>
<title>Why we moved backups to pgBackRest | Ops Notes</title>
<link rel="canonical" href="https://opsnotes.example/pgbackrest">
<meta name="author" content="Ines Calder">
<meta property="article:published_time" content="2026-09-14">
</head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | Subscribe to our newsletter today</nav>
<article><h1>Why we moved backups to pgBackRest</h1>
<p>For years we ran a nightly pg_dump into a bucket. It worked until the database crossed 400 GB,
when the dump took six hours and a restore took a whole day.</p>
<h2>Incremental backups</h2>
<p>pgBackRest takes block-level incremental backups, so the nightly run copies only the changed
pages. Our backup window dropped from six hours to eleven minutes.</p>
<h2>Point-in-time recovery</h2>
<p>WAL archiving lets us restore to any second of the last fourteen days. We tested it by
restoring to just before a bad migration.</p>
</article>
<footer>Copyright 2026 Ops Notes. Cookie settings. Privacy policy. All rights reserved.</footer>
</body></html>"""


def test_html_main_text_metadata_and_sections_without_boilerplate(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path / "post.html", ARTICLE))
    assert doc.kind == "article"
    assert doc.title == "Why we moved backups to pgBackRest"
    assert doc.url == "https://opsnotes.example/pgbackrest"  # the canonical link
    assert doc.author == "Ines Calder"
    assert doc.published == "2026-09-14"
    assert [s.position for s in doc.sections] == [
        "§ Why we moved backups to pgBackRest",
        "§ Incremental backups",
        "§ Point-in-time recovery",
    ]
    text = doc.text
    assert "pg_dump" in text  # markdown escapes undone
    assert "eleven minutes" in text
    for boilerplate in ("Subscribe", "Cookie settings", "All rights reserved"):
        assert boilerplate not in text


def test_a_page_without_a_canonical_link_takes_its_og_url(tmp_path: Path) -> None:
    page = ARTICLE.replace(
        '<link rel="canonical" href="https://opsnotes.example/pgbackrest">',
        '<meta property="og:url" content="https://opsnotes.example/og">',
    )
    assert read_document(write(tmp_path / "post.htm", page)).url == "https://opsnotes.example/og"


def test_mhtml_archive_reads_its_html_part_and_url(tmp_path: Path) -> None:
    mhtml = (
        "From: <Saved by Blink>\r\nSnapshot-Content-Location: https://opsnotes.example/mht\r\n"
        "Subject: saved\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/related; type="text/html"; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: 8bit\r\n"
        "Content-Location: https://opsnotes.example/mht\r\n\r\n"
        f"{ARTICLE}\r\n--B--\r\n"
    )
    doc = read_document(write(tmp_path / "saved.mhtml", mhtml))
    assert doc.url == "https://opsnotes.example/mht"
    assert "eleven minutes" in doc.text


def test_markdown_cut_at_headings_with_front_matter(tmp_path: Path) -> None:
    md = (
        "---\ntitle: Restore drill\nauthor: Mara\nurl: https://wiki.example/drill\n---\n"
        "Intro paragraph.\n\n## Steps\n\n1. Stop the app\n\n```\n# not a heading\n```\n\n"
        "## Results\n\nRestore took 11 minutes.\n"
    )
    doc = read_document(write(tmp_path / "drill.md", md))
    assert (doc.title, doc.author, doc.url) == (
        "Restore drill",
        "Mara",
        "https://wiki.example/drill",
    )
    assert [s.position for s in doc.sections] == ["§ Restore drill", "§ Steps", "§ Results"]
    assert "# not a heading" in doc.sections[1].text  # a fenced block is not cut


def test_rst_sections(tmp_path: Path) -> None:
    rst = "Runbook\n=======\n\nIntro.\n\nRestore\n-------\n\nRun ``pgbackrest restore``.\n"
    doc = read_document(write(tmp_path / "runbook.rst", rst))
    assert doc.title == "Runbook"
    assert [(s.position, s.text) for s in doc.sections] == [
        ("§ Runbook", "Intro."),
        ("§ Restore", "Run pgbackrest restore."),
    ]


def test_pdf_text_layer_by_page(tmp_path: Path) -> None:
    pdf = text_pdf(["The drill runs monthly.", "Retention is 14 days."], title="Backup policy")
    doc = read_document(write(tmp_path / "policy.pdf", pdf))
    assert doc.title == "Backup policy"
    assert [(s.position, s.text) for s in doc.sections] == [
        ("p. 1", "The drill runs monthly."),
        ("p. 2", "Retention is 14 days."),
    ]
    assert doc.details["pages"] == 2


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (image_only_pdf(), "pdf_no_text_layer"),
        (encrypted_pdf("hidden text"), "pdf_encrypted"),
        (b"%PDF-1.4\n1 0 obj <<", "broken_pdf"),
    ],
)
def test_pdf_without_text_is_said_clearly(tmp_path: Path, data: bytes, reason: str) -> None:
    with pytest.raises(BadFile) as info:  # the text layer is read page by page: its lack
        _ = read_document(write(tmp_path / "scan.pdf", data)).sections  # is found reading it
    assert info.value.reason == reason
    assert "\n" not in info.value.detail


VTT = """WEBVTT

00:00:01.000 --> 00:00:04.000
Welcome to this talk about <c>Postgres</c> backups.

00:00:04.000 --> 00:00:09.500
Today we compare pg_dump with pgBackRest.

00:12:31.000 --> 00:12:36.000
Block-level incremental backups copy only the changed pages.

01:02:03.000 --> 01:02:05.000
Thanks for watching.
"""
INFO = (
    '{"id": "abc123", "title": "Postgres backups in practice", "channel": "DB Talks",'
    ' "webpage_url": "https://www.youtube.com/watch?v=abc123", "upload_date": "20260910",'
    ' "duration": 3800, "chapters": [{"start_time": 0, "title": "Intro"},'
    ' {"start_time": 600, "title": "Incrementals"}, {"start_time": 3600, "title": "Outro"}]}'
)


def test_vtt_with_info_json_keeps_cue_times_and_chapters(tmp_path: Path) -> None:
    write(tmp_path / "Postgres backups [abc123].info.json", INFO)
    doc = read_document(write(tmp_path / "Postgres backups [abc123].en.vtt", VTT))
    assert doc.kind == "video"
    assert (doc.title, doc.author, doc.url, doc.published) == (
        "Postgres backups in practice",
        "DB Talks",
        "https://www.youtube.com/watch?v=abc123",
        "2026-09-10",
    )
    assert [(s.position, s.heading) for s in doc.sections] == [
        ("0:01", "Intro"),
        ("12:31", "Incrementals"),
        ("1:02:03", "Outro"),
    ]
    assert "<c>" not in doc.text


def test_srt_without_info_json(tmp_path: Path) -> None:
    srt = (
        "1\n00:00:05,000 --> 00:00:07,000\nFirst line.\n\n"
        "2\n00:15:00,000 --> 00:15:02,000\nLater.\n"
    )
    doc = read_document(write(tmp_path / "lecture.srt", srt))
    assert doc.title == "lecture"
    assert doc.sections[0].position == "0:05"
    assert "Later." in doc.text


def test_cue_groups_are_bounded() -> None:
    from memory_pipeline.inbox.readers import cue_groups

    cues = [(i * 3.0, f"sentence number {i} of the talk") for i in range(400)]
    groups = cue_groups(cues, [])
    assert len(groups) > 5
    assert all(len(g.text) <= tuning.INBOX_CUE_GROUP_CHARS + 40 for g in groups)
    assert groups[0].position == clock(0)
    assert [g.position for g in groups] == sorted(
        (g.position for g in groups), key=lambda p: [int(x) for x in p.split(":")]
    )


def test_a_binary_named_md_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadFile) as info:
        read_document(write(tmp_path / "notes.md", os.urandom(4096) + b"\x00" * 10))
    assert info.value.reason == "binary"


def test_a_1gb_file_is_refused_from_its_size(tmp_path: Path) -> None:
    path = tmp_path / "huge.md"
    with path.open("wb") as fh:  # sparse: no disk, and the reader must never read it
        fh.truncate(1024**3 + 1)
    with pytest.raises(BadFile) as info:
        read_document(path)
    assert info.value.reason == "too_large"


@pytest.mark.parametrize(
    "data",
    [
        b"<html><head><title>Half a page</title><script>var x = 1;",  # cut off: no body
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,  # an image saved as .html
    ],
)
def test_broken_html_is_a_bad_file(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(BadFile) as info:
        read_document(write(tmp_path / "broken.html", data))
    assert info.value.reason in ("no_main_text", "broken_html", "binary")


def test_long_sections_cut_at_paragraphs_keep_their_position() -> None:
    para = "A sentence about restores. " * 20
    cut = passages([Section("§ Long", "\n\n".join([para] * 6)), Section("p. 2", "Short.")])
    assert all(len(p.text) <= tuning.INBOX_PASSAGE_MAX_CHARS for p in cut)
    assert {p.position for p in cut[:-1]} == {"§ Long"}
    assert cut[-1].position == "p. 2"
    assert [p.ordinal for p in cut] == list(range(len(cut)))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(max_size=2048) | st.text(max_size=800).map(str.encode),
    suffix=st.sampled_from([".html", ".md", ".txt", ".rst", ".vtt", ".srt", ".pdf", ".mhtml"]),
)
def test_any_bytes_read_or_refused_never_crash(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = write(tmp_path / f"x{suffix}", data)
    try:
        sections = read_document(path).sections  # a streamed format's errors come reading it
    except BadFile as exc:
        assert exc.reason and "\n" not in exc.detail
    else:
        assert sections and all(s.text.strip() for s in sections)
