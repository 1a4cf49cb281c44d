"""Fetching a URL for the inbox: a timeout, a deadline, a size cap, never a hang.

`fetch` streams the body and stops at INBOX_FETCH_MAX_BYTES, so a huge or endless response costs
at most that much memory; redirects are followed up to INBOX_FETCH_MAX_REDIRECTS. Every failure
is a `FetchError` with one line saying what happened and what to do (offline, timed out, too
large, not a page the inbox reads). Fetched pages are kept in MEMORY_HOME/inbox-fetched (one
file per URL, named by its sha256) so a run reads them like any inbox file and re-adding a URL
whose content did not change stores nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from memory_pipeline import tuning

# Content types the inbox reads, and the suffix a fetched body is read as.
READABLE_TYPES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "application/pdf": ".pdf",
    "text/vtt": ".vtt",
    "application/x-subrip": ".srt",
}
YOUTUBE_HOSTS = ("youtube.com", "youtu.be", "youtube-nocookie.com")


class FetchError(Exception):
    """A URL that could not be fetched: `reason` is stable, the message is one line."""

    def __init__(self, reason: str, line: str) -> None:
        super().__init__(line)
        self.reason = reason


@dataclass(frozen=True)
class Fetched:
    url: str  # as asked
    final_url: str  # after redirects
    content_type: str
    suffix: str
    body: bytes


def is_youtube(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return any(host == h or host.endswith("." + h) for h in YOUTUBE_HOSTS)


def check_url(url: str) -> str:
    """The URL stripped, or a one-line error: only http(s) URLs with a host are fetched."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(
            "bad_url", f"{url!r} is not an http(s) URL; give one like https://host/page"
        )
    return url


def fetch(
    url: str,
    *,
    timeout_s: float = tuning.INBOX_FETCH_TIMEOUT_S,
    deadline_s: float = tuning.INBOX_FETCH_DEADLINE_S,
    max_bytes: int = tuning.INBOX_FETCH_MAX_BYTES,
) -> Fetched:
    import httpx

    url = check_url(url)
    started = time.monotonic()
    try:
        with (
            httpx.Client(
                timeout=httpx.Timeout(timeout_s),
                follow_redirects=True,
                max_redirects=tuning.INBOX_FETCH_MAX_REDIRECTS,
                headers={"User-Agent": "memory-pipeline-inbox/0.1 (+local)"},
            ) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code >= 400:
                raise FetchError("http_error", f"{url}: HTTP {response.status_code}; check the URL")
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            suffix = READABLE_TYPES.get(content_type)
            if suffix is None:
                raise FetchError(
                    "unsupported_type",
                    f"{url}: content type {content_type or 'none'!r} is not a page or document"
                    " the inbox reads (HTML, text, Markdown, PDF, VTT, SRT)",
                )
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise FetchError("too_large", f"{url}: {declared} bytes, above {max_bytes}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError("too_large", f"{url}: body above {max_bytes} bytes; not read")
                if time.monotonic() - started > deadline_s:
                    raise FetchError(
                        "timeout", f"{url}: still downloading after {deadline_s:.0f} s; gave up"
                    )
                chunks.append(chunk)
            final = str(response.url)
    except FetchError:
        raise
    except httpx.TooManyRedirects:
        raise FetchError(
            "too_many_redirects", f"{url}: more than {tuning.INBOX_FETCH_MAX_REDIRECTS} redirects"
        ) from None
    except httpx.TimeoutException:
        raise FetchError(
            "timeout", f"{url}: no answer within {timeout_s:.0f} s; try again later"
        ) from None
    except httpx.HTTPError as exc:
        raise FetchError(
            "offline",
            f"{url}: cannot connect ({type(exc).__name__}); offline? it is fetched on the next run",
        ) from None
    return Fetched(url, final, content_type, suffix, b"".join(chunks))


def cache_name(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:32]


def save(fetched: Fetched, cache: Path) -> Path:
    """Keep a fetched body in the cache (written whole, then renamed) and its metadata beside."""
    cache.mkdir(parents=True, exist_ok=True)
    name = cache_name(fetched.url)
    for old in cache.glob(name + ".*"):
        if old.suffix != ".json" and old.suffix != fetched.suffix:
            old.unlink(missing_ok=True)
    body = cache / (name + fetched.suffix)
    tmp = body.with_suffix(body.suffix + ".tmp")
    tmp.write_bytes(fetched.body)
    tmp.replace(body)
    meta = {
        "url": fetched.url,
        "final_url": fetched.final_url,
        "content_type": fetched.content_type,
    }
    (cache / (name + ".json")).write_text(json.dumps(meta))
    return body


def cached(url: str, cache: Path) -> Path | None:
    name = cache_name(url)
    for suffix in set(READABLE_TYPES.values()):
        path = cache / (name + suffix)
        if path.is_file():
            return path
    return None


class _Silent:
    """A logger for yt-dlp that keeps its messages off the terminal (its failure is raised)."""

    def debug(self, msg: str) -> None:
        pass

    info = warning = error = debug


def _ytdlp_reason(exc: Exception) -> str:
    """yt-dlp's error in a few words: no `ERROR: ` prefix, no `(caused by ...)` chain."""
    text = " ".join(str(exc).split())
    text = re.sub(r"^ERROR:\s*", "", text)
    text = re.sub(r"\s*\(caused by .*$", "", text)
    return text[:200]


def ytdlp_available() -> bool:
    """Whether yt-dlp (the optional `video` extra) can be imported in this process now: also
    when it was installed while the process (the sensor's, under `make ui`) was running."""
    import importlib

    importlib.invalidate_caches()
    try:
        import yt_dlp  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


def fetch_with_ytdlp(url: str, cache: Path) -> Path | None:
    """A video's subtitles and info.json through yt-dlp (an optional extra), or None when yt-dlp
    is not installed (the URL is then recorded as waiting). The subtitles are kept in the cache
    as `<name>.vtt` beside `<name>.info.json`, so `cached` finds them and the next run reads them
    without asking yt-dlp again."""
    try:
        import yt_dlp  # type: ignore[import-not-found]
    except ImportError:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    name = cache_name(url)
    options = {
        "skip_download": True,
        "writesubtitles": True,
        "writeautomaticsub": True,
        "subtitleslangs": ["en.*", "en"],
        "subtitlesformat": "vtt",
        "writeinfojson": True,
        "outtmpl": str(cache / f"{name}.%(ext)s"),
        "noplaylist": True,  # a watch URL inside a playlist: that video, not the playlist
        "cachedir": False,  # nothing written under the user's ~/.cache
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "socket_timeout": tuning.INBOX_FETCH_TIMEOUT_S,
        "logger": _Silent(),  # yt-dlp prints its errors itself otherwise: ours is the one line
    }
    try:
        with yt_dlp.YoutubeDL(options) as ydl:
            ydl.download([url])
    except Exception as exc:
        raise FetchError("yt_dlp_failed", f"{url}: yt-dlp: {_ytdlp_reason(exc)}") from None
    found = sorted(cache.glob(f"{name}.*.vtt"))  # yt-dlp names them <name>.<lang>.vtt
    if not found:
        raise FetchError("no_subtitles", f"{url}: the video has no English subtitles")
    kept = found[0].replace(cache / f"{name}.vtt")
    for other in found[1:]:
        other.unlink(missing_ok=True)
    return kept
