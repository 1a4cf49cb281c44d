"""The inbox through the store: sources with their hash, idempotent re-adds, edits in place,
deleted files kept, redaction and <private>, exclusions, forget and tombstones, bad files."""

from __future__ import annotations

import os
import sys
from datetime import date
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.inbox import fetch as fetching
from memory_pipeline.inbox.changes import inbox_changed
from memory_pipeline.inbox.forget import find_document, forget_document, forget_unstored
from memory_pipeline.inbox.store import capture_inbox
from memory_pipeline_tests.inbox.files import image_only_pdf, text_pdf, write
from memory_pipeline_tests.inbox.server import PAGE, serve
from memory_pipeline_tests.inbox.test_readers import ARTICLE, INFO, VTT

DAY = date(2026, 11, 20)
LATER = date(2026, 11, 21)


def snapshot(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    return {
        "sources": conn.execute(
            "SELECT id, locator, content_sha256, revisions, passages, missing_since IS NULL,"
            " revised_at FROM inbox_sources ORDER BY locator"
        ).fetchall(),
        "memories": conn.execute(
            "SELECT id, title, content, updated_at, partition_day FROM memories ORDER BY id"
        ).fetchall(),
        "skips": conn.execute(
            "SELECT source, path, reason FROM capture_skips ORDER BY 1, 2, 3"
        ).fetchall(),
    }


def make_inbox(root: Path) -> Path:
    inbox = root / "inbox"
    write(inbox / "web" / "pgbackrest.html", ARTICLE)
    write(
        inbox / "notes" / "drill.md",
        "# Restore drill\n\nThe drill runs monthly.\n\n## Steps\n\nRun `make restore-drill`.\n",
    )
    write(inbox / "policy.pdf", text_pdf(["Backups are kept 14 days.", "Owner: the ops team."]))
    write(inbox / "video" / "Postgres backups [abc123].en.vtt", VTT)
    write(inbox / "video" / "Postgres backups [abc123].info.json", INFO)
    return inbox


def test_documents_stored_as_source_memories_with_positions(conn, tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert report.by_kind["article"]["new"] == 1
    assert report.by_kind["document"]["new"] == 2
    assert report.by_kind["video"]["new"] == 1
    rows = conn.execute(
        "SELECT s.kind, s.locator, p.position, m.type, m.source_type, m.source_url, m.mem_class,"
        " m.partition_day, m.content FROM inbox_sources s"
        " JOIN inbox_passages p ON p.source_id = s.id JOIN memories m ON m.id = p.memory_id"
        " ORDER BY s.kind, s.locator, p.ordinal"
    ).fetchall()
    assert {r[3] for r in rows} == {"source"}
    assert all(r[4] == r[0] for r in rows)  # source_type = the kind: `--source video` works
    assert all(r[7] == DAY for r in rows)
    video = [r for r in rows if r[0] == "video"]
    assert video[0][1] == "https://www.youtube.com/watch?v=abc123"
    assert [r[2] for r in video] == ["0:01", "12:31", "1:02:03"]
    article = [r for r in rows if r[0] == "article"]
    assert article[0][1] == article[0][5] == "https://opsnotes.example/pgbackrest"
    assert [r[2] for r in article][1] == "§ Incremental backups"
    pdf = [r for r in rows if r[1].endswith("policy.pdf")]
    assert [r[2] for r in pdf] == ["p. 1", "p. 2"] and pdf[0][5].startswith("file:///")
    drill = [r for r in rows if r[1].endswith("drill.md")]
    assert drill[1][6] == "procedural"  # `make restore-drill` is a how-to


def test_a_second_run_changes_nothing(conn, tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    before = snapshot(conn)
    report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert snapshot(conn) == before
    assert sum(k["unchanged"] for k in report.by_kind.values()) == 4
    # the same content again under a new mtime (a re-download): still nothing
    os.utime(inbox / "notes" / "drill.md", ns=(1, 1))
    capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert snapshot(conn)["memories"] == before["memories"]


def test_an_edited_document_is_replaced_in_place(conn, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    doc = write(
        inbox / "plan.md",
        "# Plan\n\nUse pg_dump.\n\n## Later\n\nMaybe WAL-G.\n\n## Old\n\nGone soon.\n",
    )
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    ids = conn.execute("SELECT ordinal, memory_id FROM inbox_passages ORDER BY ordinal").fetchall()
    assert len(ids) == 3
    doc.write_text("# Plan\n\nUse pgBackRest, not pg_dump.\n\n## Later\n\nMaybe WAL-G.\n")
    os.utime(doc, ns=(2_000_000_000_000_000_000, 2_000_000_000_000_000_000))
    report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert report.by_kind["document"]["revised"] == 1 and report.passages_deleted == 1
    after = conn.execute(
        "SELECT p.ordinal, p.memory_id, m.content, m.partition_day FROM inbox_passages p"
        " JOIN memories m ON m.id = p.memory_id ORDER BY p.ordinal"
    ).fetchall()
    assert [(r[0], r[1]) for r in after] == ids[:2]  # the same memories, rewritten
    assert after[0][2] == "Use pgBackRest, not pg_dump." and after[0][3] == LATER
    assert conn.execute("SELECT count(*) FROM memories WHERE id = %s", [ids[2][1]]).fetchone() == (
        0,
    )
    assert conn.execute("SELECT revisions FROM inbox_sources").fetchone() == (2,)


def test_a_deleted_file_is_kept_until_forgotten(conn, tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    (inbox / "policy.pdf").unlink()
    report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert report.by_kind["document"]["missing"] == 1
    row = conn.execute(
        "SELECT missing_since IS NOT NULL, passages FROM inbox_sources WHERE path LIKE %s",
        ["%policy.pdf"],
    ).fetchone()
    assert row == (True, 2)
    assert (
        conn.execute("SELECT count(*) FROM memories WHERE title LIKE 'policy%%'").fetchone()[0] == 2
    )


def test_redaction_and_private_blocks_before_storage(conn, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    write(
        inbox / "creds.md",
        "# Setup\n\nexport STRIPE_SECRET_KEY=sk_live_51HqLyjWDarjtT1zdp7dcXYZabc123456\n\n"
        "Public part. <private>my home address is 12 Elm St</private> End.\n",
    )
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    text = " ".join(r[0] for r in conn.execute("SELECT content FROM memories").fetchall())
    assert "sk_live_51HqLyjWDarjtT1zdp7dcXYZabc123456" not in text
    assert "Elm St" not in text and "[PRIVATE]" in text and "Public part." in text
    assert conn.execute("SELECT redactions FROM inbox_sources").fetchone()[0] >= 2


def test_exclusions_by_path_and_domain_and_private_tier(conn, tmp_path: Path, monkeypatch) -> None:
    inbox = make_inbox(tmp_path)
    monkeypatch.setenv("MEMORY_EXCLUDE", f"path:{inbox}/notes, domain:opsnotes.example")
    monkeypatch.setenv("MEMORY_PRIVATE", "source:video")
    report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert report.by_kind["article"]["excluded"] == 1
    assert report.by_kind["document"]["excluded"] == 1 and report.by_kind["document"]["new"] == 1
    kinds = conn.execute("SELECT kind, private FROM inbox_sources ORDER BY kind").fetchall()
    assert kinds == [("document", False), ("video", True)]
    assert conn.execute(
        "SELECT bool_and(private) FROM memories WHERE source_type = 'video'"
    ).fetchone() == (True,)
    reasons = {r[0] for r in conn.execute("SELECT reason FROM capture_skips").fetchall()}
    assert reasons == {"excluded"}


def test_bad_files_are_isolated_and_recorded(conn, tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    write(inbox / "scan.pdf", image_only_pdf())
    write(inbox / "binary.md", os.urandom(2048) + b"\x00")
    write(inbox / "cut.html", b"<html><head><title>Half")
    with (inbox / "huge.txt").open("wb") as fh:
        fh.truncate(1024**3 + 1)  # sparse, above 1 GiB: refused from its size
    report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert sum(k["new"] for k in report.by_kind.values()) == 4  # the good ones all stored
    skips = {
        (Path(r[0]).name, r[1])
        for r in conn.execute("SELECT path, reason FROM capture_skips").fetchall()
    }
    assert skips == {
        ("scan.pdf", "pdf_no_text_layer"),
        ("binary.md", "binary"),
        ("cut.html", "no_main_text"),
        ("huge.txt", "too_large"),
    }
    again = snapshot(conn)
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert snapshot(conn) == again  # recorded once


def test_urls_fetched_forgotten_and_never_fetched_again(conn, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    with serve() as site:
        url = site.url + "/article"
        write(inbox / "reading.url", f"# to read\n{url}\n{site.url}/image\n")
        report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
        assert report.urls_fetched == 1 and report.by_kind["article"]["new"] == 1
        assert report.fetch_failures == {"unsupported_type": 1}
        capture_inbox(conn, inbox, tmp_path / "cache", DAY)
        assert site.hits["/article"] == 1  # kept in the cache: not fetched twice
        doc = find_document(conn, url)
        assert doc is not None and doc.locator == url
        forgotten = forget_document(conn, doc, tmp_path / "cache")
        assert len(forgotten.memories) == 1
        assert conn.execute("SELECT count(*) FROM inbox_sources").fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM memories WHERE source_type = 'article'"
        ).fetchone() == (0,)
        report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
        assert report.by_kind["article"]["forgotten"] == 1
        assert site.hits["/article"] == 1  # the tombstone stops the fetch
        assert conn.execute("SELECT count(*) FROM inbox_sources").fetchone() == (0,)


def test_a_forgotten_file_is_not_stored_again(conn, tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    doc = find_document(conn, str(inbox / "policy.pdf"))
    assert doc is not None
    forget_document(conn, doc)
    write(inbox / "policy.pdf", text_pdf(["Backups are kept 30 days now."]))  # edited, even
    report = capture_inbox(conn, inbox, tmp_path / "cache", LATER)
    assert report.by_kind["document"]["forgotten"] == 1
    assert find_document(conn, str(inbox / "policy.pdf")) is None


@pytest.mark.parametrize("name", ["post.url", "post.URL"])
def test_a_url_sidecar_names_a_saved_page(conn, tmp_path: Path, name: str) -> None:
    inbox = tmp_path / "inbox"
    page = ARTICLE.replace('<link rel="canonical" href="https://opsnotes.example/pgbackrest">', "")
    write(inbox / "post.html", page)
    write(inbox / name, "https://saved.example/post\n")
    capture_inbox(conn, inbox, tmp_path / "cache", DAY)
    assert conn.execute("SELECT locator FROM inbox_sources").fetchall() == [
        ("https://saved.example/post",)
    ]


def test_a_video_url_waits_for_yt_dlp_then_is_fetched_through_it(
    conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A YouTube URL without yt-dlp is recorded as waiting (never a network call); with the real
    yt-dlp it is fetched (here from a video page on loopback, counted as a YouTube host), stored
    as a video with its cue times, and read from the cache on later runs."""
    inbox = tmp_path / "inbox"
    cache = tmp_path / "cache"
    with serve() as site:
        url = site.url + "/talk"
        write(inbox / "watch.url", f"https://www.youtube.com/watch?v=abc123\n{url}\n")
        monkeypatch.setattr(fetching, "YOUTUBE_HOSTS", (*fetching.YOUTUBE_HOSTS, "127.0.0.1"))
        with monkeypatch.context() as without:
            without.setitem(sys.modules, "yt_dlp", None)  # not installed
            report = capture_inbox(conn, inbox, cache, DAY)
        assert report.by_kind["video"]["waiting"] == 2
        assert report.metadata()["documents_waiting"] == 2 and site.hits == {}
        waiting = conn.execute(
            "SELECT path, reason, detail FROM capture_skips ORDER BY path"
        ).fetchall()
        assert [(r[0], r[1]) for r in waiting] == [
            (url, "waiting_for_yt_dlp"),
            ("https://www.youtube.com/watch?v=abc123", "waiting_for_yt_dlp"),
        ]
        assert "pip install" in waiting[0][2]
        pytest.importorskip("yt_dlp", reason="yt-dlp is not installed: the fetch is not run")

        write(inbox / "watch.url", f"{url}\n")
        report = capture_inbox(conn, inbox, cache, DAY)
        assert report.by_kind["video"]["new"] == 1 and report.urls_fetched == 1
        rows = conn.execute(
            "SELECT s.kind, s.locator, p.position, m.source_type, m.source_url FROM inbox_sources s"
            " JOIN inbox_passages p ON p.source_id = s.id JOIN memories m ON m.id = p.memory_id"
        ).fetchall()
        assert rows == [("video", url, "0:01", "video", url)]
        assert conn.execute(
            "SELECT count(*) FROM capture_skips WHERE path = %s", [url]
        ).fetchone() == (0,)  # no longer waiting
        report = capture_inbox(conn, inbox, cache, LATER)
        assert report.by_kind["video"]["unchanged"] == 1
        assert site.hits["/talk"] == 1  # from the cache: yt-dlp is not asked again


def test_waiting_video_urls_are_fetched_once_yt_dlp_arrives_but_not_a_forgotten_one(
    conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two YouTube URLs wait for yt-dlp; the user forgets one while it waits (it was never
    stored: the tombstone is for its URL). Once yt-dlp is installed the sensor's question
    (`inbox_changed`) names the other one, the next run fetches it, and the forgotten one is
    never fetched; afterwards nothing is waiting and the sensor is quiet."""
    pytest.importorskip("yt_dlp", reason="yt-dlp is not installed: the fetch is not run")
    inbox = tmp_path / "inbox"
    cache = tmp_path / "cache"
    with serve() as site:
        keep, drop = site.url + "/talk", site.url + "/other-talk"
        write(inbox / "watch.url", f"{keep}\n{drop}\n")
        monkeypatch.setattr(fetching, "YOUTUBE_HOSTS", (*fetching.YOUTUBE_HOSTS, "127.0.0.1"))
        with monkeypatch.context() as without:
            without.setitem(sys.modules, "yt_dlp", None)  # not installed
            report = capture_inbox(conn, inbox, cache, DAY)
            assert report.by_kind["video"]["waiting"] == 2
            assert inbox_changed(conn, inbox) == []  # waiting, and nothing to do about it yet
            assert forget_unstored(conn, drop) == "video"
            assert forget_unstored(conn, site.url + "/never-listed") is None
            assert inbox_changed(conn, inbox) == []

        # yt-dlp is installed now: the sensor asks for a run, which fetches the waiting one
        assert inbox_changed(conn, inbox) == [f"waiting:{keep}"]
        report = capture_inbox(conn, inbox, cache, DAY)
        assert report.by_kind["video"]["new"] == 1 and report.by_kind["video"]["forgotten"] == 1
        assert site.hits.get("/talk") == 1 and "/other-talk" not in site.hits
        assert conn.execute("SELECT locator FROM inbox_sources").fetchall() == [(keep,)]
        assert conn.execute(
            "SELECT count(*) FROM capture_skips WHERE reason = 'waiting_for_yt_dlp'"
        ).fetchone() == (0,)
        assert inbox_changed(conn, inbox) == []
        report = capture_inbox(conn, inbox, cache, LATER)  # idempotent: nothing fetched again
        assert report.by_kind["video"]["unchanged"] == 1 and site.hits.get("/talk") == 1
        assert "/other-talk" not in site.hits


def test_adding_a_url_again_fetches_its_new_version_and_revises_it_in_place(
    conn, tmp_path: Path
) -> None:
    """Runs read a fetched URL from the cache (never fetched twice); `memory-pipeline add URL`
    fetches it again (fetch and save, as here): an edited article replaces its text in place
    (same memory ids), the same article again changes nothing."""
    inbox = tmp_path / "inbox"
    cache = tmp_path / "cache"
    with serve() as site:
        url = site.url + "/article"
        write(inbox / "added.url", f"{url}\n")
        capture_inbox(conn, inbox, cache, DAY)
        before = snapshot(conn)
        site.pages["/article"] = ("text/html", PAGE.replace(b"every Sunday", b"every Saturday"))
        capture_inbox(conn, inbox, cache, DAY)
        assert snapshot(conn) == before and site.hits["/article"] == 1  # from the cache

        fetching.save(fetching.fetch(url), cache)  # `memory-pipeline add URL` again
        report = capture_inbox(conn, inbox, cache, LATER)
        assert report.by_kind["article"]["revised"] == 1
        after = snapshot(conn)
        assert [m[0] for m in after["memories"]] == [m[0] for m in before["memories"]]
        assert "every Saturday" in after["memories"][0][2]
        assert after["sources"][0][3] == 2  # its second revision

        fetching.save(fetching.fetch(url), cache)  # the same version again: nothing changes
        report = capture_inbox(conn, inbox, cache, LATER)
        assert report.by_kind["article"]["unchanged"] == 1 and snapshot(conn) == after


def test_a_waiting_video_that_then_fails_is_no_longer_waiting(
    conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once yt-dlp is installed, a waiting video without subtitles is recorded as what it is
    (`no_subtitles`), not as waiting for yt-dlp any more: `inbox list` says the truth and the
    sensor stops asking."""
    pytest.importorskip("yt_dlp", reason="yt-dlp is not installed: the fetch is not run")
    inbox = tmp_path / "inbox"
    with serve() as site:
        url = site.url + "/silent-talk"
        write(inbox / "watch.url", f"{url}\n")
        monkeypatch.setattr(fetching, "YOUTUBE_HOSTS", (*fetching.YOUTUBE_HOSTS, "127.0.0.1"))
        with monkeypatch.context() as without:
            without.setitem(sys.modules, "yt_dlp", None)
            capture_inbox(conn, inbox, tmp_path / "cache", DAY)
        report = capture_inbox(conn, inbox, tmp_path / "cache", DAY)
        assert report.by_kind["video"]["failed"] == 1
        assert conn.execute("SELECT reason FROM capture_skips").fetchall() == [("no_subtitles",)]
        assert inbox_changed(conn, inbox) == []
