"""Fetching URLs against a real HTTP server on loopback: timeouts, redirects, a huge body, a
non-HTML type, no server at all. Every failure is one line, never a hang."""

from __future__ import annotations

import socket
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


def test_youtube_without_yt_dlp_waits(tmp_path: Path) -> None:
    try:
        import yt_dlp  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        assert fetching.fetch_with_ytdlp("https://youtu.be/abc", tmp_path) is None
    else:
        pytest.fail("yt-dlp is installed in the test venv: this test assumes the default install")
