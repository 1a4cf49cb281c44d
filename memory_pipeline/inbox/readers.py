"""Reading inbox files into documents: plain functions, one per format, no database.

Each reader returns a `Document` (title, URL, author, date, site and the text as `Section`s with
their positions) or raises `BadFile` with a stable reason and a one-line detail. Libraries made
for each format do the work: trafilatura (HTML main text and metadata, boilerplate dropped),
pypdf (a PDF's text layer), webvtt-py (WebVTT and SRT cues), docutils (reStructuredText).

Bounded memory: a file above INBOX_MAX_FILE_BYTES (1 GiB), or a text, Markdown or subtitle file
above INBOX_MAX_TEXT_BYTES (32 MiB), is refused from its size alone (never opened), so an absurd
file costs one stat. Below that, the formats that can be streamed are: plain
text, Markdown and subtitles are read INBOX_READ_CHUNK_BYTES at a time, PDFs page by page, and a
document's sections come out of `Document.iter_sections()` one at a time (a section longer than
INBOX_SECTION_MAX_CHARS is handed out in pieces cut at paragraph breaks), so a 30 MB text costs
a few MB, as a 2,000-page PDF does. HTML, MHTML and reStructuredText are parsed whole by their
libraries: above INBOX_MAX_WHOLE_FILE_BYTES they are refused (`too_large_to_read_whole`). A streamed
document's BadFile (a binary file, no text) can come while its sections are read.
"""

from __future__ import annotations

import codecs
import email
import email.policy
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, BinaryIO

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
    """A document's metadata, and its text as sections: a list (a format read whole) or a
    function that reads them again on each call (a streamed format: the file is read anew)."""

    kind: InboxKind
    title: str
    source: list[Section] | Callable[[], Iterator[Section]]
    url: str | None = None
    author: str | None = None
    site: str | None = None
    published: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def iter_sections(self) -> Iterator[Section]:
        """The sections one at a time (bounded memory: what the store reads)."""
        return iter(self.source) if isinstance(self.source, list) else self.source()

    @property
    def sections(self) -> list[Section]:
        """Every section at once: for small documents and tests, never the store."""
        return list(self.iter_sections())

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.iter_sections())


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
    """Read one inbox file (or fetched bytes named like one) into a Document; streamed formats
    are only opened here (metadata, title), their text is read by `iter_sections()`."""
    size = len(data) if data is not None else path.stat().st_size
    _check_size(size, tuning.INBOX_MAX_FILE_BYTES, "")
    opener = _opener(path, data)
    name = path.name.lower()
    if name.endswith(TEXT_SUFFIXES + SUBTITLE_SUFFIXES) and size > tuning.INBOX_MAX_TEXT_BYTES:
        raise BadFile(
            "too_large",
            f"{size} bytes, above the inbox limit of {tuning.INBOX_MAX_TEXT_BYTES} for a text,"
            " Markdown or subtitle file (a log or a dump: tens of thousands of passages);"
            " split it, or keep the part you read",
        )
    if name.endswith(PDF_SUFFIXES):
        return read_pdf(path, opener)
    if name.endswith(SUBTITLE_SUFFIXES):
        return read_subtitles(path, opener)
    if name.endswith((".md", ".markdown")):
        return read_markdown(path, opener)
    if name.endswith(TEXT_SUFFIXES) and not name.endswith(".rst"):
        return read_plain(path, opener)
    # the formats whose libraries parse a whole file: HTML, MHTML, reStructuredText
    what = "HTML" if name.endswith(HTML_SUFFIXES + MHTML_SUFFIXES) else "reStructuredText"
    _check_size(size, tuning.INBOX_MAX_WHOLE_FILE_BYTES, what)
    if data is None:
        with path.open("rb") as fh:
            data = fh.read(tuning.INBOX_MAX_WHOLE_FILE_BYTES + 1)
    if name.endswith(MHTML_SUFFIXES):
        html, located = mhtml_html(data)
        return read_html(path, html, url or located)
    if name.endswith(HTML_SUFFIXES):
        return read_html(path, data, url)
    return read_rst(path, decode_text(data))


def _check_size(size: int, limit: int, whole: str) -> None:
    """Refuse a file from its size: above the inbox's limit, or (`whole` names the format) above
    the limit of the formats read whole."""
    if size > limit and not whole:
        raise BadFile(
            "too_large",
            f"{size} bytes, above the inbox limit of {limit}; split it into smaller files",
        )
    if size > limit:
        raise BadFile(
            "too_large_to_read_whole",
            f"{size} bytes of {whole}, which is parsed whole (it cannot be streamed), above the"
            f" limit of {limit} for such files; save it as text or Markdown, or split it",
        )
    if size == 0:
        raise BadFile("empty_file", "the file is empty")


def _opener(path: Path, data: bytes | None) -> Callable[[], BinaryIO]:
    if data is not None:
        return lambda: io.BytesIO(data)
    return lambda: path.open("rb")


def decode_text(data: bytes) -> str:
    """A text file's content; a binary file (NUL bytes, mostly undecodable) is refused."""
    return "".join(text_chunks(lambda: io.BytesIO(data)))


def text_chunks(opener: Callable[[], BinaryIO]) -> Iterator[str]:
    """A text file decoded INBOX_READ_CHUNK_BYTES at a time (UTF-8, undecodable bytes replaced,
    newlines made `\n`, a BOM dropped); a binary file (NUL bytes near its start, or more than 1%
    of it undecodable so far) is refused."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    bad = total = 0
    carry = ""  # a `\r` at the end of a chunk: a `\r\n` may be cut in two
    first = True
    with opener() as fh:
        while True:
            block = fh.read(tuning.INBOX_READ_CHUNK_BYTES)
            if first and b"\x00" in block[:8192]:
                raise BadFile("binary", "the file holds NUL bytes: not a text file")
            text = carry + decoder.decode(block, final=not block)
            carry = ""
            bad += text.count("\ufffd")
            total += len(text)
            if bad > max(8, total // 100):
                raise BadFile("binary", f"{bad} bytes are not UTF-8: not a text file")
            if block and text.endswith("\r"):
                text, carry = text[:-1], "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            if first:
                text = text.lstrip("\ufeff")
                first = False
            if text:
                yield text
            if not block:
                return


_LINE_ENDS = "\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines() splits at


def text_lines(chunks: Iterable[str], universal: bool = True) -> Iterator[tuple[str, bool]]:
    """(line, continued) for each line of the text (`str.splitlines()` lines, or `\n` only);
    a line longer than INBOX_SECTION_MAX_CHARS comes in pieces cut at a space, `continued`
    true for every piece after the first."""
    limit = tuning.INBOX_SECTION_MAX_CHARS
    rest = ""
    continued = False
    for chunk in chunks:
        buf = rest + chunk
        parts = buf.splitlines(keepends=True) if universal else buf.split("\n")
        if universal:
            rest = parts.pop() if parts and parts[-1][-1] not in _LINE_ENDS else ""
            lines = [p[:-1] for p in parts]
        else:
            rest = parts.pop()
            lines = parts
        for line in lines:
            yield line, continued
            continued = False
        while len(rest) > limit:
            cut = rest.rfind(" ", limit // 2, limit)
            cut = cut if cut > 0 else limit
            yield rest[:cut], continued
            rest, continued = rest[cut:], True
    if rest:
        yield rest, continued


class _Body:
    """The lines of the section being read. Above INBOX_SECTION_MAX_CHARS its head is handed
    out (cut at its last paragraph break, else line break, else space), the rest kept."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.size = 0

    def add(self, line: str) -> str | None:
        self.lines.append(line)
        self.size += len(line) + 1
        if self.size <= tuning.INBOX_SECTION_MAX_CHARS:
            return None
        text = "\n".join(self.lines)
        limit = tuning.INBOX_SECTION_MAX_CHARS
        cut = -1
        for mark in ("\n\n", "\n", " "):
            cut = text.rfind(mark, limit // 4, limit)
            if cut > 0:
                break
        cut = cut if cut > 0 else limit
        self.lines, self.size = [text[cut:]], len(text) - cut
        return text[:cut]

    def take(self) -> str:
        text = "\n".join(self.lines)
        self.lines, self.size = [], 0
        return text


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
        source=sections,
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
    return _first_heading_of(line for line in text.splitlines())


def _first_heading_of(lines: Iterable[str]) -> str | None:
    for line in lines:
        m = _MD_HEADING.match(line)
        if m:
            return m.group(2)
    return None


def markdown_sections(text: str, title: str) -> list[Section]:
    """Markdown cut at its ATX headings; a section's position is its heading ('§ Heading')."""
    sections = list(iter_markdown_sections(((ln, False) for ln in text.splitlines()), title))
    if not sections:
        raise BadFile("no_text", "the document holds no text")
    return sections


def iter_markdown_sections(
    lines: Iterable[tuple[str, bool]], title: str, headings: bool = True
) -> Iterator[Section]:
    """Sections of Markdown lines (`text_lines`), one at a time: cut at ATX headings outside
    fenced code (with `headings`; plain text has none), a long section in pieces (`_Body`)."""
    heading = ""
    body = _Body()
    in_code = False

    def section(text: str) -> Section | None:
        text = text.strip()
        return Section(f"§ {heading or title}", text, heading) if text else None

    for line, continued in lines:
        m = None
        if headings and not continued:
            if line.lstrip().startswith(("```", "~~~")):
                in_code = not in_code
            m = None if in_code else _MD_HEADING.match(line)
        if m:
            done = section(body.take())
            if done:
                yield done
            heading = m.group(2).strip()
            continue
        full = body.add(line)
        if full is not None:
            done = section(full)
            if done:
                yield done
    done = section(body.take())
    if done:
        yield done


def _require_text(sections: Iterator[Section], detail: str) -> Iterator[Section]:
    """The sections, and BadFile `no_text` at their end when there were none."""
    empty = True
    for section in sections:
        empty = False
        yield section
    if empty:
        raise BadFile("no_text", detail)


# --- documents ---------------------------------------------------------------------------------
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def _after_front_matter(opener: Callable[[], BinaryIO]) -> tuple[dict[str, str], Iterator[str]]:
    """A Markdown file's simple `key: value` front matter (title, author, date, url; within its
    first chunk) and its text after it, in chunks."""
    chunks = text_chunks(opener)
    first = next(chunks, "")
    front: dict[str, str] = {}
    m = _FRONT_MATTER.match(first)
    if m:
        for line in m.group(1).splitlines():
            key, sep, value = line.partition(":")
            if sep:
                front[key.strip().lower()] = value.strip().strip("\"'")
        first = first[m.end() :]
    return front, _chain(first, chunks)


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    if first:
        yield first
    yield from rest


def read_markdown(path: Path, opener: Callable[[], BinaryIO]) -> Document:
    front, chunks = _after_front_matter(opener)
    # the title: the front matter's, else the first heading (read up to it), else the name
    title = front.get("title") or _first_heading_of(ln for ln, _ in text_lines(chunks)) or path.stem

    def sections() -> Iterator[Section]:
        _, text = _after_front_matter(opener)
        return _require_text(
            iter_markdown_sections(text_lines(text), title), "the document holds no text"
        )

    return Document(
        kind="document",
        title=title,
        source=sections,
        url=front.get("url") or None,
        author=front.get("author") or None,
        published=front.get("date") or None,
        details={"format": "markdown"},
    )


def read_plain(path: Path, opener: Callable[[], BinaryIO]) -> Document:
    next(text_chunks(opener), None)  # a binary file is refused now, not halfway

    def sections() -> Iterator[Section]:
        lines = text_lines(text_chunks(opener), universal=False)
        return _require_text(
            iter_markdown_sections(lines, path.stem, headings=False), "the document holds no text"
        )

    return Document(kind="document", title=path.stem, source=sections, details={"format": "text"})


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
    return Document(kind="document", title=title, source=sections, details={"format": "rst"})


def _pdf_error(exc: Exception) -> BadFile:
    if "encrypt" in str(exc).lower() or "crypt" in type(exc).__name__.lower():
        return BadFile("pdf_encrypted", "the PDF is encrypted; save an unencrypted copy")
    return BadFile("broken_pdf", f"{type(exc).__name__}: {exc}"[:300])


def _pdf_reader(fh: BinaryIO):  # type: ignore[no-untyped-def]
    """pypdf's reader over an open file: objects are read from the file as pages need them."""
    from pypdf import PdfReader

    reader = PdfReader(fh)
    if reader.is_encrypted and not reader.decrypt(""):
        raise BadFile("pdf_encrypted", "the PDF is encrypted; save an unencrypted copy")
    return reader


def read_pdf(path: Path, opener: Callable[[], BinaryIO]) -> Document:
    """A PDF's metadata now; its text layer page by page, each page one section ('p. 3')."""
    try:
        with opener() as fh:
            reader = _pdf_reader(fh)
            pages = len(reader.pages)
            if pages > tuning.INBOX_MAX_PDF_PAGES:
                raise BadFile(
                    "too_large",
                    f"{pages} pages, above the inbox limit of {tuning.INBOX_MAX_PDF_PAGES} pages"
                    " for a PDF (its page tree is held in memory); split it",
                )
            info = reader.metadata
            title = (info.title if info is not None else None) or path.stem
            author = info.author if info is not None else None
            try:
                made = info.creation_date if info is not None else None
            except Exception:  # a malformed date string: no date
                made = None
    except BadFile:
        raise
    except Exception as exc:  # pypdf raises assorted errors on damaged files
        raise _pdf_error(exc) from exc

    def sections() -> Iterator[Section]:
        found = False
        try:
            with opener() as fh:
                reader = _pdf_reader(fh)
                for number in range(1, len(reader.pages) + 1):
                    page = reader.pages[number - 1]
                    text = (page.extract_text() or "").strip()
                    if text:
                        found = True
                        yield Section(position=f"p. {number}", text=text)
        except BadFile:
            raise
        except GeneratorExit:
            raise
        except Exception as exc:
            raise _pdf_error(exc) from exc
        if not found:
            raise BadFile(
                "pdf_no_text_layer",
                f"the PDF's {pages} page(s) have no text layer (scanned images?);"
                " run OCR on it (e.g. ocrmypdf) and drop the result in the inbox",
            )

    return Document(
        kind="document",
        title=str(title).strip() or path.stem,
        source=sections,
        author=str(author) if author else None,
        published=made.isoformat() if made is not None else None,
        details={"format": "pdf", "pages": pages},
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
        if info.stat().st_size > tuning.INBOX_MAX_WHOLE_FILE_BYTES:
            return {}
        value = json.loads(info.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def read_subtitles(path: Path, opener: Callable[[], BinaryIO]) -> Document:
    """A transcript's metadata (yt-dlp's info.json beside it) now; its cues, grouped, as they
    are read: the file is parsed a batch of cue blocks at a time."""
    srt = path.suffix.lower() == ".srt"
    next(text_chunks(opener), None)  # a binary file is refused now, not halfway
    info_path = info_json_for(path)
    info = read_info(info_path) if info_path else {}
    chapters = [
        (float(c.get("start_time") or 0), str(c.get("title") or ""))
        for c in info.get("chapters") or []
        if isinstance(c, dict)
    ]
    title = str(info.get("title") or _LANG_TAIL.sub("", path.stem) or path.stem)

    def sections() -> Iterator[Section]:
        return _require_text(
            iter_cue_groups(cues(opener, srt), chapters), "the transcript holds no cue text"
        )

    return Document(
        kind="video",
        title=title,
        source=sections,
        url=str(info.get("webpage_url") or "") or None,
        author=str(info.get("channel") or info.get("uploader") or "") or None,
        site=str(info.get("extractor_key") or "") or None,
        published=_upload_date(info.get("upload_date")),
        details={
            "format": path.suffix.lower().lstrip("."),
            "duration": info.get("duration"),
            "chapters": [{"start": s, "title": t} for s, t in chapters],
            "video_id": info.get("id"),
        },
    )


def _cue_batches(opener: Callable[[], BinaryIO]) -> Iterator[str]:
    """A subtitle file's text in batches of whole blocks (cut at blank lines), each about
    INBOX_SECTION_MAX_CHARS: a small file is one batch."""
    lines: list[str] = []
    size = 0
    for line, _ in text_lines(text_chunks(opener)):
        lines.append(line)
        size += len(line) + 1
        if size > tuning.INBOX_SECTION_MAX_CHARS and not line.strip():
            yield "\n".join(lines) + "\n"
            lines, size = [], 0
    if lines:
        yield "\n".join(lines) + "\n"


def cues(opener: Callable[[], BinaryIO], srt: bool) -> Iterator[tuple[float, str]]:
    """(start in seconds, words) of each cue that adds text: auto-captions repeat the previous
    line, and rolling captions keep only what is new."""
    import webvtt

    last = ""
    for number, batch in enumerate(_cue_batches(opener)):
        if not srt and number:  # WebVTT: each batch parsed as a file of its own
            batch = "WEBVTT\n\n" + batch
        try:
            captions = webvtt.from_buffer(io.StringIO(batch), format="srt" if srt else "vtt")
        except Exception as exc:
            raise BadFile("broken_subtitles", f"{type(exc).__name__}: {exc}"[:300]) from exc
        for caption in captions:
            words = " ".join(_TAGS.sub("", caption.text).split())
            if not words or words == last:
                continue
            if last and words.startswith(last):
                words = words[len(last) :].strip()
            last = " ".join(_TAGS.sub("", caption.text).split())
            if words:
                yield caption.start_in_seconds, words


def _upload_date(value: object) -> str | None:
    if isinstance(value, str) and re.fullmatch(r"\d{8}", value):
        try:
            return date(int(value[:4]), int(value[4:6]), int(value[6:])).isoformat()
        except ValueError:
            return None
    return None


def cue_groups(cues: list[tuple[float, str]], chapters: list[tuple[float, str]]) -> list[Section]:
    return list(iter_cue_groups(cues, chapters))


def iter_cue_groups(
    cues: Iterable[tuple[float, str]], chapters: list[tuple[float, str]]
) -> Iterator[Section]:
    """Cues grouped into passages: a new group at each chapter start and whenever the group
    reaches INBOX_CUE_GROUP_CHARS; each group's position is its first cue's time."""
    starts = sorted(chapters)
    group: list[str] = []
    size = 0
    group_start = 0.0
    chapter = ""  # the chapter the current group is in
    next_chapter = 0
    for start, words in cues:
        upcoming = chapter
        while next_chapter < len(starts) and starts[next_chapter][0] <= start:
            upcoming = starts[next_chapter][1]
            next_chapter += 1
        if group and (upcoming != chapter or size + len(words) > tuning.INBOX_CUE_GROUP_CHARS):
            yield Section(clock(group_start), " ".join(group), chapter)
            group, size = [], 0
        chapter = upcoming
        if not group:
            group_start = start
        group.append(words)
        size += len(words) + 1
    if group:
        yield Section(clock(group_start), " ".join(group), chapter)
