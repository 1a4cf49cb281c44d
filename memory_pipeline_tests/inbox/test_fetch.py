"""Fetching URLs against a real HTTP server on loopback: timeouts, redirects, a huge body, a
non-HTML type, no server at all. Every failure is one line, never a hang."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_pipeline.inbox import fetch as fetching
from memory_pipeline.inbox.readers import read_document
from memory_pipeline_tests.inbox.server import Site, serve


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve() as s:
        yield s


def test_a_page_is_fetched_cached_and_read(site: Site, tmp_path: Path) -> None:
    got = fetching.fetch(site.url + "/article")
    assert got.content_type == "text/html" and got.suffix == ".html"
    body = fetching.save(got, tmp_path)
    assert fetching.cached(site.url + "/article", tmp_path) == body
    doc = read_document(body, url=got.url)
    assert doc.title == "Loopback article" and "every Sunday" in doc.text


def test_redirects_are_followed_up_to_the_limit(site: Site) -> None:
    got = fetching.fetch(site.url + "/redirect/3")
    assert got.final_url.endswith("/article")
    with pytest.raises(fetching.FetchError) as info:
        fetching.fetch(site.url + "/redirect/12")
    assert info.value.reason == "too_many_redirects"


def test_a_slow_server_times_out(site: Site) -> None:
    started = time.monotonic()
    with pytest.raises(fetching.FetchError) as info:
        fetching.fetch(site.url + "/slow", timeout_s=0.5)
    assert info.value.reason == "timeout"
    assert time.monotonic() - started < 2.5
    assert "\n" not in str(info.value)


def test_a_huge_body_stops_at_the_cap(site: Site) -> None:
    with pytest.raises(fetching.FetchError) as info:
        fetching.fetch(site.url + "/huge", max_bytes=1_000_000)
    assert info.value.reason == "too_large"


def test_a_non_html_type_is_refused(site: Site) -> None:
    with pytest.raises(fetching.FetchError) as info:
        fetching.fetch(site.url + "/image")
    assert info.value.reason == "unsupported_type"
    assert "image/png" in str(info.value)


def test_no_server_is_one_line_offline_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(fetching.FetchError) as info:
        fetching.fetch(f"http://127.0.0.1:{port}/x", timeout_s=1)
    assert info.value.reason == "offline"
    assert "next run" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("url", ["ftp://host/x", "file:///etc/passwd", "not a url", "http://"])
def test_only_http_urls(url: str) -> None:
    with pytest.raises(fetching.FetchError) as info:
        fetching.fetch(url)
    assert info.value.reason == "bad_url"


def test_without_yt_dlp_a_video_url_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yt_dlp", None)  # `import yt_dlp` fails: not installed
    assert fetching.fetch_with_ytdlp("https://youtu.be/abc", tmp_path) is None
    assert not any(tmp_path.iterdir())


def _yt_dlp() -> None:
    pytest.importorskip(
        "yt_dlp",
        reason="yt-dlp is not installed (pip install --constraint requirements.lock -e '.[dev]'"
        " or '.[video]'); the yt-dlp download path is not exercised",
    )


def test_yt_dlp_downloads_a_videos_subtitles_and_info(site: Site, tmp_path: Path) -> None:
    """The real yt-dlp, through its generic extractor, on a video page served on loopback."""
    _yt_dlp()
    url = site.url + "/talk"
    body = fetching.fetch_with_ytdlp(url, tmp_path)
    name = fetching.cache_name(url)
    assert body == tmp_path / f"{name}.vtt"  # where `cached` finds it on the next run
    assert fetching.cached(url, tmp_path) == body
    assert (tmp_path / f"{name}.info.json").is_file()
    assert site.hits.get("/media/talk.mp4") is None  # subtitles only, never the video
    doc = read_document(body)
    assert doc.kind == "video" and doc.url == url  # yt-dlp's webpage_url from its info.json
    assert doc.title.startswith("Postgres backups explained")
    assert doc.sections[0].position == "0:01" and "every Sunday" in doc.text


@pytest.mark.parametrize(
    ("path", "reason"), [("/silent-talk", "no_subtitles"), ("/article", "yt_dlp_failed")]
)
def test_yt_dlp_without_subtitles_is_one_line(
    site: Site, tmp_path: Path, path: str, reason: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """The failure is our one line; yt-dlp itself prints nothing (no `ERROR: [generic] ...`
    of its own on the terminal of `memory-pipeline add` before ours)."""
    _yt_dlp()
    with pytest.raises(fetching.FetchError) as info:
        fetching.fetch_with_ytdlp(site.url + path, tmp_path)
    assert info.value.reason == reason and "\n" not in str(info.value)
    assert "ERROR:" not in str(info.value) and "caused by" not in str(info.value)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
