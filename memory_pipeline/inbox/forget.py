"""Forgetting an inbox document: through the forget stage (one transaction, audit, cascade,
BM25 and keyword index), with a tombstone for the document's locator, URL and path, so it is
never stored (nor its URL fetched) again. A URL that was listed but never stored (waiting for
yt-dlp, offline, failed) is forgotten the same way: its tombstone keeps it from being fetched."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import psycopg

from memory_pipeline.forget.run import ForgetReport, forget
from memory_pipeline.forget.select import Selector
from memory_pipeline.inbox.fetch import cache_name, is_youtube
from memory_pipeline.models.inbox import INBOX_KINDS


@dataclass(frozen=True)
class StoredDocument:
    id: UUID
    kind: str
    locator: str
    url: str | None
    path: str | None
    title: str


def find_document(conn: psycopg.Connection, name: str) -> StoredDocument | None:
    """A stored document by its locator, URL or path (a relative path is resolved)."""
    candidates = [name]
    if "://" not in name:
        candidates.append(str(Path(name).expanduser().absolute()))
    row = conn.execute(
        "SELECT id, kind, locator, url, path, title FROM inbox_sources"
        " WHERE locator = ANY(%s) OR url = ANY(%s) OR path = ANY(%s) ORDER BY revised_at DESC"
        " LIMIT 1",
        [candidates, candidates, candidates],
    ).fetchone()
    return StoredDocument(*row) if row else None


def forget_document(
    conn: psycopg.Connection, doc: StoredDocument, cache: Path | None = None
) -> ForgetReport:
    memory_ids = [
        r[0]
        for r in conn.execute(
            "SELECT memory_id FROM inbox_passages WHERE source_id = %s", [doc.id]
        ).fetchall()
    ]
    keys = [(doc.kind, k) for k in dict.fromkeys(x for x in (doc.locator, doc.url, doc.path) if x)]
    report = forget(conn, Selector(memory_ids=memory_ids, tasks=keys, with_evidence=False))
    with conn.transaction():
        conn.execute("DELETE FROM inbox_sources WHERE id = %s", [doc.id])
        conn.execute(
            "DELETE FROM capture_skips WHERE kind = 'file' AND source = %s AND path = ANY(%s)",
            [doc.kind, [k for _, k in keys]],
        )
    if cache is not None:  # the fetched copy goes too
        for path in cache.glob(cache_name(doc.locator) + ".*"):
            path.unlink(missing_ok=True)
    return report


def forget_unstored(conn: psycopg.Connection, url: str, listed: Iterable[str] = ()) -> str | None:
    """Tombstone a URL the inbox recorded but never stored (waiting for yt-dlp, a failed
    fetch) or that an inbox `*.url` list names (`listed`), so no run fetches it; its recorded
    skips go. Returns its kind, or None when the inbox does not know the URL."""
    kinds = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT source FROM capture_skips WHERE kind = 'file' AND path = %s"
            " AND source = ANY(%s)",
            [url, list(INBOX_KINDS)],
        ).fetchall()
    ]
    if not kinds and url not in set(listed):
        return None
    kind = kinds[0] if kinds else ("video" if is_youtube(url) else "article")
    forget(conn, Selector(tasks=[(kind, url)], with_evidence=False))
    with conn.transaction():
        conn.execute(
            "DELETE FROM capture_skips WHERE kind = 'file' AND path = %s AND source = ANY(%s)",
            [url, list(INBOX_KINDS)],
        )
    return kind
