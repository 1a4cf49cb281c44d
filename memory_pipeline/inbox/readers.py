"""Reading inbox files into documents: plain functions, one per format, no database.

Each reader returns a `Document` (title, URL, author, date, site and the text as `Section`s with
their positions) or raises `BadFile` with a stable reason and a one-line detail. Libraries made
for each format do the work: trafilatura (HTML main text and metadata, boilerplate dropped),
pypdf (a PDF's text layer), webvtt-py (WebVTT and SRT cues), docutils (reStructuredText).

Bounded memory: a file above INBOX_MAX_FILE_BYTES is refused from its size alone (never opened),
so a 1 GB file costs one stat; anything smaller is read once.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from memory_pipeline import tuning
from memory_pipeline.models.inbox import InboxKind

HTML_SUFFIXES = (".html", ".htm")
MHTML_SUFFIXES = (".mhtml", ".mht")
TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".text", ".rst")
PDF_SUFFIXES = (".pdf",)
SUBTITLE_SUFFIXES = (".vtt", ".srt")
URL_SUFFIX = ".url"
INFO_SUFFIX = ".info.json"
DOCUMENT_SUFFIXES = (
    *HTML_SUFFIXES,
    *MHTML_SUFFIXES,
    *TEXT_SUFFIXES,
    *PDF_SUFFIXES,
    *SUBTITLE_SUFFIXES,
)


class BadFile(Exception):
    """A file the inbox cannot read: `reason` is stable (recorded in capture_skips)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Section:
    """A run of text with its position in the document ('§ Heading', 'p. 3', '12:31')."""

    position: str
    text: str
    heading: str = ""


@dataclass
class Document:
    kind: InboxKind
    title: str
    sections: list[Section]
    url: str | None = None
    author: str | None = None
    site: str | None = None
    published: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.sections)


def kind_of(path: Path) -> InboxKind | None:
    """The kind a file name says, or None when the inbox does not read it."""
    name = path.name.lower()
    if name.endswith(INFO_SUFFIX):
        return None  # a video's sidecar, read with its transcript
    if name.endswith(HTML_SUFFIXES + MHTML_SUFFIXES):
        return "article"
    if name.endswith(TEXT_SUFFIXES + PDF_SUFFIXES):
        return "document"
    if name.endswith(SUBTITLE_SUFFIXES):
        return "video"
    return None


def read_document(path: Path, data: bytes | None = None, url: str | None = None) -> Document:
    """Read one inbox file (or fetched bytes named like one) into a Document."""
    if data is None:
        data = _read_bounded(path)
    name = path.name.lower()
    if name.endswith(PDF_SUFFIXES):
        return read_pdf(path, data)
    if name.endswith(MHTML_SUFFIXES):
        html, located = mhtml_html(data)
        return read_html(path, html, url or located)
    if name.endswith(HTML_SUFFIXES):
        return read_html(path, data, url)
    text = decode_text(data)
    if name.endswith(SUBTITLE_SUFFIXES):
        return read_subtitles(path, text)
    if name.endswith(".rst"):
        return read_rst(path, text)
    if name.endswith((".md", ".markdown")):
        return read_markdown(path, text)
    return read_plain(path, text)


def _read_bounded(path: Path) -> bytes:
    size = path.stat().st_size
    if size > tuning.INBOX_MAX_FILE_BYTES:
        raise BadFile(
            "too_large",
            f"{size} bytes, above the inbox limit of {tuning.INBOX_MAX_FILE_BYTES}; split it",
        )
    if size == 0:
        raise BadFile("empty_file", "the file is empty")
    with path.open("rb") as fh:
        return fh.read(tuning.INBOX_MAX_FILE_BYTES + 1)


def decode_text(data: bytes) -> str:
    """A text file's content; a binary file (NUL bytes, mostly undecodable) is refused."""
    head = data[:8192]
    if b"\x00" in head:
        raise BadFile("binary", "the file holds NUL bytes: not a text file")
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad > max(8, len(text) // 100):
        raise BadFile("binary", f"{bad} bytes are not UTF-8: not a text file")
    return text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")


# --- web pages ---------------------------------------------------------------------------------
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def read_html(path: Path, data: bytes, url: str | None = None) -> Document:
    import trafilatura

    if b"\x00" in data[:8192]:
        raise BadFile("binary", "the file holds NUL bytes: not an HTML page")
    html = data.decode("utf-8", errors="replace")
    try:
        meta = trafilatura.extract_metadata(html, default_url=url)
        text = trafilatura.extract(
            html,
            url=url,
            output_format="markdown",
            include_formatting=True,
            include_comments=False,
            include_tables=True,
            include_links=False,
            include_images=False,
        )
    except Exception as exc:  # trafilatura/lxml refusing a page: the page, not the run
        raise BadFile("broken_html", f"{type(exc).__name__}: {exc}"[:300]) from exc
    if not text or not text.strip():
        raise BadFile("no_main_text", "no main text found in the page (broken or empty HTML)")
    text = _MD_ESCAPE.sub(r"\1", text)  # trafilatura escapes `pg_dump` as `pg\_dump`
    page_url = url or (meta.url if meta is not None else None)
    title = (meta.title if meta is not None else None) or _first_heading(text) or path.stem
    sections = markdown_sections(text, title)
    return Document(
        kind="article",
        title=title.strip(),
        sections=sections,
        url=page_url or None,
        author=(meta.author if meta is not None else None) or None,
        site=(meta.sitename or meta.hostname if meta is not None else None) or None,
        published=(meta.date if meta is not None else None) or None,
        details={"format": "html"},
    )


def mhtml_html(data: bytes) -> tuple[bytes, str | None]:
    """The HTML part of an MHTML archive (a browser's 'save as single file') and its URL."""
    message = email.message_from_bytes(data, policy=email.policy.default)
    url = message.get("Snapshot-Content-Location")
    for part in message.walk():
        if part.get_content_type() == "text/html":
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes) and payload:
                return payload, url or part.get("Content-Location")
    raise BadFile("broken_mhtml", "no text/html part in the MHTML archive")


def _first_heading(text: str) -> str | None:
    for line in text.splitlines():
        m = _MD_HEADING.match(line)
        if m:
            return m.group(2)
    return None


def markdown_sections(text: str, title: str) -> list[Section]:
    """Markdown cut at its ATX headings; a section's position is its heading ('§ Heading')."""
    sections: list[Section] = []
    heading, lines = "", []
    in_code = False

    def flush() -> None:
        body = "\n".join(lines).strip()
        if body:
            label = heading or title
            sections.append(Section(position=f"§ {label}", text=body, heading=heading))

    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        m = None if in_code else _MD_HEADING.match(line)
        if m:
            flush()
            heading, lines = m.group(2).strip(), []
        else:
            lines.append(line)
    flush()
    if not sections:
        raise BadFile("no_text", "the document holds no text")
    return sections


# --- documents ---------------------------------------------------------------------------------
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def read_markdown(path: Path, text: str) -> Document:
    front: dict[str, str] = {}
    m = _FRONT_MATTER.match(text)
    if m:  # simple `key: value` front matter (title, author, date, url)
        for line in m.group(1).splitlines():
            key, sep, value = line.partition(":")
            if sep:
                front[key.strip().lower()] = value.strip().strip("\"'")
        text = text[m.end() :]
    title = front.get("title") or _first_heading(text) or path.stem
    return Document(
        kind="document",
        title=title,
        sections=markdown_sections(text, title),
        url=front.get("url") or None,
        author=front.get("author") or None,
        published=front.get("date") or None,
        details={"format": "markdown"},
    )


def read_plain(path: Path, text: str) -> Document:
    if not text.strip():
        raise BadFile("no_text", "the document holds no text")
    return Document(
        kind="document",
        title=path.stem,
        sections=[Section(position=f"§ {path.stem}", text=text.strip())],
        details={"format": "text"},
    )


def read_rst(path: Path, text: str) -> Document:
    from docutils import nodes
    from docutils.core import publish_doctree

    try:
        tree = publish_doctree(
            text,
            settings_overrides={
                "report_level": 5,
                "halt_level": 5,
                "file_insertion_enabled": False,
                "raw_enabled": False,
            },
        )
    except Exception as exc:
        raise BadFile("broken_rst", f"{type(exc).__name__}: {exc}"[:300]) from exc
    title = ""
    for node in tree.findall(nodes.title):
        title = node.astext()
        break
    title = title or path.stem
    sections: list[Section] = []

    def visit(node: nodes.Node, heading: str) -> None:
        body: list[str] = []
        for child in node.children:
            if isinstance(child, nodes.section):
                if body:
                    sections.append(Section(f"§ {heading}", "\n\n".join(body), heading))
                    body = []
                sub = child.next_node(nodes.title)
                visit(child, sub.astext() if sub is not None else heading)
            elif not isinstance(child, nodes.title | nodes.system_message | nodes.comment):
                piece = child.astext().strip()
                if piece:
                    body.append(piece)
        if body:
            sections.append(Section(f"§ {heading}", "\n\n".join(body), heading))

    visit(tree, title)
    if not sections:
        raise BadFile("no_text", "the document holds no text")
    return Document(kind="document", title=title, sections=sections, details={"format": "rst"})


def read_pdf(path: Path, data: bytes) -> Document:
    import io

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise BadFile("pdf_encrypted", "the PDF is encrypted; save an unencrypted copy")
        sections = []
        for number, page in enumerate(reader.pages, start=1):
            text = (page.extract_text() or "").strip()
            if text:
                sections.append(Section(position=f"p. {number}", text=text))
        info = reader.metadata
    except BadFile:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise BadFile("broken_pdf", f"{type(exc).__name__}: {exc}"[:300]) from exc
    except Exception as exc:  # pypdf raises assorted errors on damaged files
        if "encrypt" in str(exc).lower() or "crypt" in type(exc).__name__.lower():
            raise BadFile(
                "pdf_encrypted", "the PDF is encrypted; save an unencrypted copy"
            ) from exc
        raise BadFile("broken_pdf", f"{type(exc).__name__}: {exc}"[:300]) from exc
    if not sections:
        raise BadFile(
            "pdf_no_text_layer",
            f"the PDF's {len(reader.pages)} page(s) have no text layer (scanned images?);"
            " run OCR on it (e.g. ocrmypdf) and drop the result in the inbox",
        )
    title = (info.title if info is not None else None) or path.stem
    author = info.author if info is not None else None
    try:
        made = info.creation_date if info is not None else None
    except Exception:  # a malformed date string: no date
        made = None
    return Document(
        kind="document",
        title=str(title).strip() or path.stem,
        sections=sections,
        author=str(author) if author else None,
        published=made.isoformat() if made is not None else None,
        details={"format": "pdf", "pages": len(reader.pages)},
    )


# --- video transcripts -------------------------------------------------------------------------
_LANG_TAIL = re.compile(r"\.[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$")
_TAGS = re.compile(r"<[^>]+>")


def clock(seconds: float) -> str:
    """A position in a video: `12:31`, or `1:02:03` past an hour."""
    s = int(seconds)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def info_json_for(path: Path) -> Path | None:
    """yt-dlp's metadata beside a transcript: `Title [id].en.vtt` -> `Title [id].info.json`."""
    stem = path.name[: -len(path.suffix)]
    for candidate in (stem, _LANG_TAIL.sub("", stem)):
        info = path.with_name(candidate + INFO_SUFFIX)
        if info.is_file():
            return info
    return None


def read_info(info: Path) -> dict[str, Any]:
    try:
        if info.stat().st_size > tuning.INBOX_MAX_FILE_BYTES:
            return {}
        value = json.loads(info.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def read_subtitles(path: Path, text: str) -> Document:
    import io

    import webvtt

    try:
        if path.suffix.lower() == ".srt":
            captions = webvtt.from_buffer(io.StringIO(text), format="srt")
        else:
            captions = webvtt.from_buffer(io.StringIO(text), format="vtt")
    except Exception as exc:
        raise BadFile("broken_subtitles", f"{type(exc).__name__}: {exc}"[:300]) from exc
    cues: list[tuple[float, str]] = []
    last = ""
    for caption in captions:
        words = " ".join(_TAGS.sub("", caption.text).split())
        if not words or words == last:  # auto-captions repeat the previous line
            continue
        if last and words.startswith(last):  # rolling captions: keep only what is new
            words = words[len(last) :].strip()
        last = " ".join(_TAGS.sub("", caption.text).split())
        if words:
            cues.append((caption.start_in_seconds, words))
    if not cues:
        raise BadFile("no_text", "the transcript holds no cue text")
    info_path = info_json_for(path)
    info = read_info(info_path) if info_path else {}
    chapters = [
        (float(c.get("start_time") or 0), str(c.get("title") or ""))
        for c in info.get("chapters") or []
        if isinstance(c, dict)
    ]
    title = str(info.get("title") or _LANG_TAIL.sub("", path.stem) or path.stem)
    published = _upload_date(info.get("upload_date"))
    return Document(
        kind="video",
        title=title,
        sections=cue_groups(cues, chapters),
        url=str(info.get("webpage_url") or "") or None,
        author=str(info.get("channel") or info.get("uploader") or "") or None,
        site=str(info.get("extractor_key") or "") or None,
        published=published,
        details={
            "format": path.suffix.lower().lstrip("."),
            "duration": info.get("duration"),
            "chapters": [{"start": s, "title": t} for s, t in chapters],
            "video_id": info.get("id"),
        },
    )


def _upload_date(value: object) -> str | None:
    if isinstance(value, str) and re.fullmatch(r"\d{8}", value):
        try:
            return date(int(value[:4]), int(value[4:6]), int(value[6:])).isoformat()
        except ValueError:
            return None
    return None


def cue_groups(cues: list[tuple[float, str]], chapters: list[tuple[float, str]]) -> list[Section]:
    """Cues grouped into passages: a new group at each chapter start and whenever the group
    reaches INBOX_CUE_GROUP_CHARS; each group's position is its first cue's time."""
    starts = sorted(chapters)
    sections: list[Section] = []
    group: list[str] = []
    group_start = 0.0
    chapter = ""  # the chapter the current group is in
    next_chapter = 0

    def flush() -> None:
        if group:
            sections.append(Section(clock(group_start), " ".join(group), chapter))

    for start, words in cues:
        upcoming = chapter
        while next_chapter < len(starts) and starts[next_chapter][0] <= start:
            upcoming = starts[next_chapter][1]
            next_chapter += 1
        size = sum(len(w) + 1 for w in group)
        if group and (upcoming != chapter or size + len(words) > tuning.INBOX_CUE_GROUP_CHARS):
            flush()
            group = []
        chapter = upcoming
        if not group:
            group_start = start
        group.append(words)
    flush()
    return sections
