"""Storing inbox documents as sources, and their passages as `source` memories.

One run (`capture_inbox`) looks at every file of MEMORY_INBOX_DIR and every URL its `*.url` files
list, and for each document, in its own savepoint (a bad one is recorded, the others go on):

1. reads it (readers.py) or records why not in `capture_skips` (kind 'file', source = the kind);
2. skips it when forgotten (a tombstone in `forgotten_tasks` with source = kind, native id =
   locator: a forgotten URL is never fetched again) or excluded (MEMORY_EXCLUDE `path:`,
   `domain:` or `source:` rules, recorded as `excluded`);
3. compares the sha256 of its extracted title and text with the stored one: the same content
   changes nothing (re-adding is idempotent); new content is stored, and different content under
   the same locator is a revision: the text is replaced in place, its passages are rewritten by
   ordinal (the memory at each ordinal keeps its id, so embedding re-cuts and re-embeds it and
   relationship discovery re-links it, expiring edges that stop holding), and passages beyond
   the new count are deleted with their memories;
4. redacts every passage, title and author (and replaces `<private>` blocks) before storage.

Bounded memory: a document's sections are read one at a time (readers.py streams text formats and
PDFs), cut into passages as they come and written INBOX_WRITE_BATCH at a time; nothing holds the
whole document. A stored document whose file changed is read twice (its hash first: the same
content writes nothing); a new one once, its hash computed as it is written. A file found bad
halfway (binary past its first chunk) rolls its writes back and is recorded like any bad file.

A file that disappeared is not forgotten: its source is marked `missing_since` and stays
searchable until `memory-pipeline inbox forget` removes it. The memories of a revision belong to
the run's day (`partition_day`), so the same run's embedding and relationship steps process them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from itertools import islice
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline import tuning
from memory_pipeline.capture.models import ParseIssue
from memory_pipeline.capture.redact import redact
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.capture.store import Storable, record_file_issue
from memory_pipeline.forget.privacy import CaptureRules, strip_private
from memory_pipeline.forget.tombstones import task_forgotten
from memory_pipeline.inbox import fetch as fetching
from memory_pipeline.inbox.chunk import Passage, iter_passages
from memory_pipeline.inbox.readers import (
    DOCUMENT_SUFFIXES,
    HTML_SUFFIXES,
    MHTML_SUFFIXES,
    URL_SUFFIX,
    BadFile,
    Document,
    Section,
    kind_of,
    read_document,
)
from memory_pipeline.models.inbox import INBOX_KIND_LABELS, INBOX_KINDS
from memory_pipeline.semantic import classify

log = logging.getLogger(__name__)

OUTCOMES = (
    "new",
    "revised",
    "unchanged",
    "forgotten",
    "excluded",
    "failed",
    "missing",
    "waiting",  # a video URL waiting for yt-dlp to be installed
)


# The metadata key of the one line `memory-pipeline run` prints under the inbox's counts.
INBOX_LINE = "inbox_line"
WAITING_FOR_YT_DLP = "waiting_for_yt_dlp"
WAITING_DETAIL = (
    "install the video extra (pip install -e '.[video]') to fetch its subtitles;"
    " the next run fetches it"
)


@dataclass
class InboxReport:
    """What one inbox run did, per kind (Dagster metadata, `memory-pipeline run`)."""

    by_kind: dict[str, dict[str, int]] = field(
        default_factory=lambda: {k: dict.fromkeys(OUTCOMES, 0) for k in INBOX_KINDS}
    )
    passages_written: int = 0
    passages_deleted: int = 0
    redactions: int = 0
    urls_fetched: int = 0
    fetch_failures: dict[str, int] = field(default_factory=dict)
    file_issues: dict[str, int] = field(default_factory=dict)
    files_seen: int = 0

    def count(self, kind: str, outcome: str) -> None:
        self.by_kind[kind][outcome] += 1

    def line(self) -> str:
        """Per kind what the run did, and why files were not stored: 'inbox: article 1 new;
        document 1 new, 1 not stored; why: binary 1 (...)'. Empty when nothing happened."""
        shown = {
            "new": "new",
            "revised": "revised",
            "missing": "file deleted",
            "failed": "not stored",
            "excluded": "excluded",
            "waiting": "waiting for yt-dlp",
        }
        parts = []
        for kind, counts in self.by_kind.items():
            said = [f"{counts[k]} {label}" for k, label in shown.items() if counts[k]]
            if said:
                parts.append(f"{kind} {', '.join(said)}")
        if not parts:
            return ""
        line = "inbox: " + "; ".join(parts)
        why = {r: n for r, n in self.file_issues.items() if r != WAITING_FOR_YT_DLP}
        if why:
            line += "; why: " + ", ".join(f"{r} {n}" for r, n in sorted(why.items()))
        if why or any(c["waiting"] for c in self.by_kind.values()):
            line += " (`memory-pipeline inbox list` lists them)"
        return line

    def metadata(self) -> dict[str, Any]:
        totals = {o: sum(k[o] for k in self.by_kind.values()) for o in OUTCOMES}
        return {
            "files_seen": self.files_seen,
            "documents_new": totals["new"],
            "documents_revised": totals["revised"],
            "documents_unchanged": totals["unchanged"],
            "documents_failed": totals["failed"],
            "documents_missing": totals["missing"],
            "documents_waiting": totals["waiting"],
            "passages_written": self.passages_written,
            "passages_deleted": self.passages_deleted,
            "redactions": self.redactions,
            "urls_fetched": self.urls_fetched,
            "by_kind": self.by_kind,
            "fetch_failures": self.fetch_failures,
            "file_issues": self.file_issues,
        }


@dataclass(frozen=True)
class Item:
    """One document to look at: an inbox file, or a URL (fetched into the cache)."""

    kind: str
    path: Path | None  # the file read (an inbox file, or the cached body of a URL)
    url: str | None  # the URL asked for (a `.url` entry, `add`), None for a plain file
    sidecar_url: str | None = None  # a saved page's URL from `<stem>.url` beside it


def content_sha(doc: Document) -> str:
    """sha256 of a document's title and sections (read one at a time)."""
    hashing = Hashing(doc)
    for _ in hashing.sections():
        pass
    return hashing.hexdigest()


class Hashing:
    """A document's sections as they are read, hashed on the way (content_sha's value)."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.h = hashlib.sha256()
        self.h.update(doc.title.encode("utf-8", "surrogatepass"))

    def sections(self) -> Iterator[Section]:
        for section in self.doc.iter_sections():
            self.h.update(b"\x00" + section.position.encode("utf-8", "surrogatepass"))
            self.h.update(b"\x01" + section.text.encode("utf-8", "surrogatepass"))
            yield section

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def clean(text: str, fix: Storable) -> tuple[str, int]:
    """Storable, `<private>` blocks replaced and secrets redacted: what may be stored."""
    text, private = strip_private(fix.text(text))
    text, found = redact(text)
    return text, private + found.total


def read_url_list(path: Path) -> list[str]:
    """URLs of a `.url` file: one per line (`#` comments), or a Windows shortcut's `URL=`."""
    data = path.read_bytes()[: 1024 * 1024]
    urls = []
    for raw in data.decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "[")):
            continue
        if line.upper().startswith("URL="):
            line = line[4:].strip()
        elif "=" in line and not line.startswith("http"):
            continue  # other shortcut keys (IconIndex=...)
        urls.append(line)
    return urls


def discover(inbox: Path) -> tuple[list[Path], list[Path]]:
    """The inbox's document files and URL-list files, sorted; hidden entries are left out."""
    docs: list[Path] = []
    lists: list[Path] = []
    if not inbox.is_dir():
        return docs, lists
    for root, dirs, files in os.walk(inbox):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(root) / name
            lower = name.lower()
            if lower.endswith(URL_SUFFIX):
                lists.append(path)
            elif lower.endswith(DOCUMENT_SUFFIXES):
                docs.append(path)
    return docs, lists


def items(
    inbox: Path,
    cache: Path,
    conn: psycopg.Connection,
    rules: CaptureRules,
    report: InboxReport,
    extra_urls: list[str] | None = None,
) -> Iterator[Item]:
    docs, lists = discover(inbox)
    pages = {
        p.with_suffix("") for p in docs if p.name.lower().endswith(HTML_SUFFIXES + MHTML_SUFFIXES)
    }
    sidecars: dict[Path, str] = {}
    urls: list[str] = list(extra_urls or [])
    for path in lists:
        try:
            listed = read_url_list(path)
        except OSError as exc:
            _issue(conn, "article", str(path), "unreadable", str(exc), report)
            continue
        if path.with_suffix("") in pages and listed:  # `post.url` beside `post.html`: its URL
            sidecars[path.with_suffix("")] = listed[0]
        else:
            urls.extend(listed)
    for path in docs:
        report.files_seen += 1
        kind = kind_of(path)
        if kind is None:
            continue
        yield Item(kind, path, None, sidecars.get(path.with_suffix("")))
    for url in dict.fromkeys(urls):
        item = _url_item(url, cache, conn, rules, report)
        if item is not None:
            yield item


def _url_item(
    url: str, cache: Path, conn: psycopg.Connection, rules: CaptureRules, report: InboxReport
) -> Item | None:
    """A listed URL as an item, fetched first when the cache does not hold it."""
    kind = "video" if fetching.is_youtube(url) else "article"
    if _forgotten(conn, url):
        report.count(kind, "forgotten")
        return None
    rule = rules.excluded_by(kind, _context(None, url))
    if rule is not None:
        report.count(kind, "excluded")
        _issue(conn, kind, url, "excluded", f"matched {rule}", report)
        return None
    body = fetching.cached(url, cache)
    if body is None:
        try:
            if kind == "video":
                try:
                    body = fetching.fetch_with_ytdlp(fetching.check_url(url), cache)
                except fetching.FetchError:
                    _not_waiting(conn, url)  # yt-dlp is there: the failure says what it is
                    raise
                if body is None:
                    report.count(kind, "waiting")
                    _issue(conn, kind, url, WAITING_FOR_YT_DLP, WAITING_DETAIL, report)
                    return None
                _not_waiting(conn, url)
            else:
                body = fetching.save(fetching.fetch(url), cache)
            report.urls_fetched += 1
        except fetching.FetchError as exc:
            report.fetch_failures[exc.reason] = report.fetch_failures.get(exc.reason, 0) + 1
            report.count(kind, "failed")
            _issue(conn, kind, url, exc.reason, str(exc), report)
            return None
    kind = kind_of(body) or kind
    return Item(kind, body, url)


def _not_waiting(conn: psycopg.Connection, url: str) -> None:
    with conn.transaction():
        conn.execute(
            "DELETE FROM capture_skips WHERE kind = 'file' AND source = 'video'"
            " AND path = %s AND reason = %s",
            [url, WAITING_FOR_YT_DLP],
        )


def _forgotten(conn: psycopg.Connection, locator: str) -> bool:
    return any(task_forgotten(conn, kind, locator) for kind in INBOX_KINDS)


def _context(path: Path | None, url: str | None) -> dict[str, Any]:
    """What the exclusion and private-tier rules match a document on (forget/privacy.py)."""
    return {
        "path": str(path) if path is not None else None,
        "domain": (urlsplit(url).hostname or "").lower() if url else None,
    }


def _issue(
    conn: psycopg.Connection, kind: str, where: str, reason: str, detail: str, report: InboxReport
) -> None:
    report.file_issues[reason] = report.file_issues.get(reason, 0) + 1
    with conn.transaction():
        record_file_issue(
            conn, kind, ParseIssue(path=where, reason=reason, detail=detail), CaptureReport()
        )


def capture_inbox(
    conn: psycopg.Connection,
    inbox: Path,
    cache: Path,
    day: date,
    progress: Callable[[str], None] | None = None,
    extra_urls: list[str] | None = None,
) -> InboxReport:
    """Store every document of the inbox that is new or changed; memories on `day`."""
    rules = CaptureRules.from_settings()
    report = InboxReport()
    seen_paths: set[str] = set()
    for looked, item in enumerate(items(inbox, cache, conn, rules, report, extra_urls), 1):
        if item.path is not None and item.url is None:
            seen_paths.add(str(item.path))
        try:
            with conn.transaction():
                outcome = store_item(conn, item, rules, day, report, progress)
        except Exception as exc:
            if conn.closed or conn.broken:
                raise
            log.warning("inbox %s: %s", item.url or item.path, exc)
            outcome = "failed"
            _issue(conn, item.kind, item.url or str(item.path), "store_failed", _line(exc), report)
        report.count(item.kind, outcome)
        if progress and looked % 25 == 0:
            progress(f"inbox: {looked} documents looked at ({report.files_seen} files seen)")
    _mark_missing(conn, inbox, seen_paths, report)
    return report


def _line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]


def store_item(
    conn: psycopg.Connection,
    item: Item,
    rules: CaptureRules,
    day: date,
    report: InboxReport,
    progress: Callable[[str], None] | None = None,
) -> str:
    """Store one document (the caller's savepoint); returns its outcome."""
    path_key = str(item.path) if item.path is not None and item.url is None else None
    st = item.path.stat() if item.path is not None else None
    if path_key is not None and st is not None:
        row = conn.execute(
            "SELECT size, mtime_ns FROM inbox_sources WHERE path = %s", [path_key]
        ).fetchone()
        if row and row[0] == st.st_size and row[1] == st.st_mtime_ns:
            conn.execute(
                "UPDATE inbox_sources SET missing_since = NULL WHERE path = %s"
                " AND missing_since IS NOT NULL",
                [path_key],
            )
            return "unchanged"  # same size and mtime: not read again
    if path_key is not None and _forgotten(conn, path_key):
        return "forgotten"
    where = item.url or path_key or ""
    try:
        assert item.path is not None
        doc = read_document(item.path, url=item.url or item.sidecar_url)
    except BadFile as exc:
        _issue(conn, item.kind, where, exc.reason, exc.detail, report)
        return "failed"
    except OSError as exc:
        _issue(conn, item.kind, where, "unreadable", _line(exc), report)
        return "failed"
    url = item.url or item.sidecar_url or doc.url
    locator = item.url or doc.url or item.sidecar_url or path_key or where
    if _forgotten(conn, locator):
        return "forgotten"
    context = _context(item.path if path_key else None, url)
    rule = rules.excluded_by(doc.kind, context)
    if rule is not None:
        _issue(conn, doc.kind, where, "excluded", f"matched {rule}", report)
        return "excluded"
    private = rules.is_private(doc.kind, context)
    row = conn.execute(
        "SELECT id, content_sha256, kind FROM inbox_sources WHERE locator = %s FOR UPDATE",
        [locator],
    ).fetchone()
    size, mtime = (st.st_size, st.st_mtime_ns) if st is not None else (None, None)
    try:
        with conn.transaction():  # a file found bad halfway leaves nothing behind
            return _store_document(
                conn,
                doc,
                row,
                locator,
                url,
                path_key,
                size,
                mtime,
                private,
                day,
                report,
                _Progress(progress, where),
            )
    except BadFile as exc:
        _issue(conn, item.kind, where, exc.reason, exc.detail, report)
        return "failed"
    except OSError as exc:
        _issue(conn, item.kind, where, "unreadable", _line(exc), report)
        return "failed"


def _store_document(
    conn: psycopg.Connection,
    doc: Document,
    row: tuple | None,
    locator: str,
    url: str | None,
    path_key: str | None,
    size: int | None,
    mtime: int | None,
    private: bool,
    day: date,
    report: InboxReport,
    progress: _Progress,
) -> str:
    # A stored document: its hash first (one read), nothing written when it is the same.
    if row is not None and content_sha(doc) == row[1]:
        conn.execute(
            "UPDATE inbox_sources SET size = %s, mtime_ns = %s, path = coalesce(%s, path),"
            " missing_since = NULL WHERE id = %s",
            [size, mtime, path_key, row[0]],
        )
        return "unchanged"
    fix = Storable()
    title, n_title = clean(doc.title, fix)
    author, n_author = clean(doc.author, fix) if doc.author else (None, 0)
    shown_url, n_url = clean(url, fix) if url else (None, 0)
    redactions = n_title + n_author + n_url
    values = [
        doc.kind,
        locator,
        shown_url,
        path_key,
        title,
        author,
        fix.optional(doc.site),
        fix.optional(doc.published),
        Jsonb(fix.json(doc.details)),
        row[1] if row is not None else "",  # set when the passages are written
        size,
        mtime,
        private,
        day,
    ]
    if row is None:
        source_id = conn.execute(
            "INSERT INTO inbox_sources (kind, locator, url, path, title, author, site, published,"
            " details, content_sha256, size, mtime_ns, private, partition_day)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            values,
        ).fetchone()[0]  # type: ignore[index]
        outcome = "new"
    else:
        source_id = row[0]
        conn.execute(
            "UPDATE inbox_sources SET kind = %s, locator = %s, url = %s,"
            " path = coalesce(%s, path), title = %s, author = %s, site = %s, published = %s,"
            " details = %s, content_sha256 = %s, size = %s, mtime_ns = %s,"
            " private = %s, partition_day = %s, revisions = revisions + 1, revised_at = now(),"
            " missing_since = NULL WHERE id = %s",
            [*values, source_id],
        )
        outcome = "revised"
    hashing = Hashing(doc)
    count, n_passages, deleted = _write_passages(
        conn,
        source_id,
        doc,
        title,
        shown_url,
        locator,
        iter_passages(hashing.sections()),
        private,
        day,
        fix,
        mtime,
        progress,
    )
    redactions += n_passages
    conn.execute(
        "UPDATE inbox_sources SET content_sha256 = %s, passages = %s, redactions = %s"
        " WHERE id = %s",
        [hashing.hexdigest(), count, redactions, source_id],
    )
    report.passages_written += count  # counted once all is written (a bad file rolls back)
    report.passages_deleted += deleted
    report.redactions += redactions
    return outcome


def _write_passages(
    conn: psycopg.Connection,
    source_id: UUID,
    doc: Document,
    title: str,
    url: str | None,
    locator: str,
    cut: Iterable[Passage],
    private: bool,
    day: date,
    fix: Storable,
    mtime_ns: int | None = None,
    progress: _Progress | None = None,
) -> tuple[int, int, int]:
    """Write the passages as they come, INBOX_WRITE_BATCH at a time: the memory at an ordinal
    the document had keeps its id (rewritten), new ordinals get new memories, ordinals past the
    new count are deleted with their memories. Returns (passages, redactions, deleted). Past
    INBOX_MAX_DOCUMENT_PASSAGES it stops with BadFile `too_many_passages` (the caller's
    savepoint rolls its writes back)."""
    created = created_at(doc, mtime_ns)
    positions: dict[str, str] = {}  # a section's position, cleaned once for all its passages
    redactions = 0
    count = 0
    source_url = url or _file_url(locator)
    label = INBOX_KIND_LABELS[doc.kind]
    context = " · ".join(p for p in (label, doc.site, title) if p)[:200]
    limit = tuning.INBOX_MAX_DOCUMENT_PASSAGES
    for batch in _batched(islice(cut, limit + 1), tuning.INBOX_WRITE_BATCH):
        if batch[-1].ordinal >= limit:
            raise BadFile(
                "too_many_passages",
                f"more than {limit} passages (the inbox limit for one document); split it,"
                " or keep the part you read",
            )
        existing = dict(
            conn.execute(
                "SELECT ordinal, memory_id FROM inbox_passages WHERE source_id = %s"
                " AND ordinal BETWEEN %s AND %s",
                [source_id, batch[0].ordinal, batch[-1].ordinal],
            ).fetchall()
        )
        inserts: list[list[Any]] = []
        links: list[list[Any]] = []
        updates: list[list[Any]] = []
        moves: list[list[Any]] = []
        for passage in batch:
            text, n = clean(passage.text, fix)
            position = positions.get(passage.position)
            if position is None:
                position, _ = clean(passage.position, fix)
                positions = {passage.position: position}  # the sections come in order
            redactions += n
            memory_title = f"{title} — {position}" if position.lstrip("§ ") != title else title
            metadata = {
                "inbox_source_id": str(source_id),
                "position": position,
                "locator": locator,
                "document_title": title,
            }
            if passage.heading:
                metadata["section"] = fix.text(passage.heading)
            mem_class = "procedural" if classify.is_procedural(text) else "semantic"
            depth = classify.depth_score("segment", text)  # raw text, like a segment
            fields = [
                memory_title[:500],
                text,
                source_url,
                doc.kind,
                Jsonb(metadata),
                mem_class,
                depth,
                context,
                day,
                private,
                created,
            ]
            memory_id = existing.get(passage.ordinal)
            if memory_id is None:
                memory_id = uuid.uuid4()
                inserts.append([memory_id, *fields])
                links.append([source_id, passage.ordinal, position, memory_id])
            else:
                updates.append([*fields, memory_id])
                moves.append([position, source_id, passage.ordinal])
        with conn.cursor() as cur:
            if inserts:
                cur.executemany(
                    "INSERT INTO memories (id, type, title, content, source_url, source_type,"
                    " metadata, mem_class, depth_score, encoding_context, partition_day, private,"
                    " created_at) VALUES (%s, 'source', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                    " %s)",
                    inserts,
                )
                cur.executemany(
                    "INSERT INTO inbox_passages (source_id, ordinal, position, memory_id)"
                    " VALUES (%s, %s, %s, %s)",
                    links,
                )
            if updates:
                cur.executemany(
                    "UPDATE memories SET title = %s, content = %s, source_url = %s,"
                    " source_type = %s, metadata = %s, mem_class = %s, depth_score = %s,"
                    " encoding_context = %s, partition_day = %s, private = %s, created_at = %s"
                    " WHERE id = %s",
                    updates,
                )
                cur.executemany(
                    "UPDATE inbox_passages SET position = %s WHERE source_id = %s AND ordinal = %s",
                    moves,
                )
        count += len(batch)
        if progress is not None:
            progress.passages(count)
    # the revision is shorter: its extra passages go, with their memories
    gone = conn.execute(
        "DELETE FROM memories WHERE id IN (SELECT memory_id FROM inbox_passages"
        " WHERE source_id = %s AND ordinal >= %s)",
        [source_id, count],
    ).rowcount
    return count, redactions, gone


class _Progress:
    """A document's progress lines: every INBOX_PROGRESS_PASSAGES passages written."""

    def __init__(self, say: Callable[[str], None] | None, where: str) -> None:
        self.say = say
        self.name = Path(where).name if "://" not in where else where
        self.next = tuning.INBOX_PROGRESS_PASSAGES

    def passages(self, count: int) -> None:
        if self.say is None:
            return
        while count >= self.next:
            self.say(f"inbox: {self.name}: {self.next:,} passages stored so far")
            self.next += tuning.INBOX_PROGRESS_PASSAGES


def _batched(values: Iterable[Passage], n: int) -> Iterator[list[Passage]]:
    it = iter(values)
    while batch := list(islice(it, n)):
        yield batch


def created_at(doc: Document, mtime_ns: int | None) -> datetime:
    """When a document's content was made, its memories' `created_at` (recency ranks by it): the
    date it gives (published, uploaded), else its file's mtime, else now. A document read today
    is not new knowledge when it was written two years ago."""
    if doc.published:
        try:
            value: datetime | None = datetime.fromisoformat(doc.published[:25])
        except ValueError:
            value = None
        if value is not None:
            return value if value.tzinfo else value.replace(tzinfo=UTC)
    if mtime_ns is not None:
        return datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC)
    return datetime.now(UTC)


def _file_url(locator: str) -> str:
    return locator if "://" in locator else Path(locator).absolute().as_uri()


def _mark_missing(
    conn: psycopg.Connection, inbox: Path, seen: set[str], report: InboxReport
) -> None:
    """Sources whose inbox file is gone: marked missing, never forgotten."""
    rows = conn.execute(
        "SELECT id, kind, path FROM inbox_sources WHERE path IS NOT NULL AND missing_since IS NULL"
        " AND path LIKE %s",
        [str(inbox).rstrip("/") + "/%"],
    ).fetchall()
    gone = [(r[0], r[1]) for r in rows if r[2] not in seen and not Path(r[2]).exists()]
    if gone:
        with conn.transaction():
            conn.execute(
                "UPDATE inbox_sources SET missing_since = now() WHERE id = ANY(%s)",
                [[g[0] for g in gone]],
            )
        for _, kind in gone:
            report.count(kind, "missing")
