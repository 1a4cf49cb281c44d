"""A web server on loopback for the inbox's fetch tests: real HTTP, scripted pages."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = b"""<html><head><title>Loopback article</title></head><body><article>
<h1>Loopback article</h1><p>The staging database is restored from pgBackRest every Sunday at
03:00, and the restore is checked by counting rows in the invoices table.</p></article>
</body></html>"""


# A video page as yt-dlp's generic extractor reads it: an HTML5 <video> with a subtitle track.
VIDEO_PAGE = b"""<html><head><title>Postgres backups explained</title></head><body>
<video controls><source src="/media/talk.mp4" type="video/mp4">
<track kind="subtitles" src="/media/talk.en.vtt" srclang="en" label="English"></video>
</body></html>"""
SILENT_PAGE = VIDEO_PAGE.replace(b'<track kind="subtitles"', b'<img alt=""')  # no subtitles
TALK_VTT = b"""WEBVTT

00:00:01.000 --> 00:00:04.000
We restore staging from pgBackRest every Sunday.

00:12:31.000 --> 00:12:35.000
The restore drill runs monthly and counts the invoices.
"""


class Site:
    """Routes of the server; `hits` counts requests per path."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[str, bytes]] = {
            "/article": ("text/html", PAGE),
            "/talk": ("text/html", VIDEO_PAGE),
            "/silent-talk": ("text/html", SILENT_PAGE),
            "/other-talk": ("text/html", VIDEO_PAGE),
            "/media/talk.en.vtt": ("text/vtt", TALK_VTT),
        }
        self.hits: dict[str, int] = {}
        self.url = ""


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            site.hits[self.path] = site.hits.get(self.path, 0) + 1
            if self.path.startswith("/redirect/"):
                n = int(self.path.rsplit("/", 1)[1])
                self.send_response(302)
                self.send_header("Location", f"/redirect/{n - 1}" if n > 1 else "/article")
                self.end_headers()
                return
            if self.path == "/slow":
                time.sleep(3)
            if self.path == "/huge":  # an endless body, no length given
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                try:
                    chunk = b"<p>" + b"x" * 65536 + b"</p>"
                    for _ in range(10_000):
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                return
            if self.path == "/image":
                body = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            page = site.pages.get(self.path)
            if page is None:
                self.send_response(404)
                self.end_headers()
                return
            ctype, body = page
            self.send_response(200)
            self.send_header("Content-Type", f"{ctype}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def serve() -> Iterator[Site]:
    site = Site()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    server.daemon_threads = True
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
