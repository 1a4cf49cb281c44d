"""What in the inbox differs from what the inbox stored: the sensor's and `run`'s question."""

from __future__ import annotations

from pathlib import Path

import psycopg

from memory_pipeline.inbox.fetch import ytdlp_available
from memory_pipeline.inbox.readers import kind_of
from memory_pipeline.inbox.store import WAITING_FOR_YT_DLP, discover, read_url_list
from memory_pipeline.models.inbox import INBOX_KINDS


def has_files(inbox: Path) -> bool:
    docs, lists = discover(inbox)
    return bool(docs or lists)


def inbox_changed(conn: psycopg.Connection, inbox: Path) -> list[str]:
    """One key per change ('file:path:size:mtime', 'gone:path', 'url:URL', 'waiting:URL'): files
    never stored or changed since, stored files that are gone, listed URLs not stored, and
    listed video URLs waiting for yt-dlp once yt-dlp can be imported (a forgotten one is not a
    change). Files recorded as bad in their current version are not changes (their key would
    repeat: the sensor asks once)."""
    docs, lists = discover(inbox)
    stored = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT path, size, mtime_ns FROM inbox_sources WHERE path IS NOT NULL"
        ).fetchall()
    }
    changes = []
    for path in docs:
        if kind_of(path) is None:
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        if stored.get(str(path)) != (st.st_size, st.st_mtime_ns):
            changes.append(f"file:{path}:{st.st_size}:{st.st_mtime_ns}")
    for key in stored:
        if key.startswith(str(inbox).rstrip("/") + "/") and not Path(key).exists():
            row = conn.execute(
                "SELECT 1 FROM inbox_sources WHERE path = %s AND missing_since IS NULL", [key]
            ).fetchone()
            if row:
                changes.append(f"gone:{key}")
    pages = {p.with_suffix("") for p in docs}
    urls = [u for p in lists if p.with_suffix("") not in pages for u in _safe_list(p)]
    if urls:
        known = {
            r[0]
            for r in conn.execute(
                "SELECT locator FROM inbox_sources WHERE locator = ANY(%s)"
                " UNION SELECT native_id FROM forgotten_tasks WHERE source = ANY(%s)"
                " AND native_id = ANY(%s)"
                " UNION SELECT path FROM capture_skips WHERE kind = 'file' AND path = ANY(%s)",
                [urls, list(INBOX_KINDS), urls, urls],
            ).fetchall()
        }
        changes += [f"url:{u}" for u in dict.fromkeys(urls) if u not in known]
        waiting = conn.execute(
            "SELECT DISTINCT path FROM capture_skips WHERE kind = 'file' AND reason = %s"
            " AND path = ANY(%s) AND path NOT IN (SELECT native_id FROM forgotten_tasks"
            " WHERE source = ANY(%s))",
            [WAITING_FOR_YT_DLP, urls, list(INBOX_KINDS)],
        ).fetchall()
        if waiting and ytdlp_available():
            changes += [f"waiting:{r[0]}" for r in sorted(waiting)]
    return changes


def _safe_list(path: Path) -> list[str]:
    try:
        return read_url_list(path)
    except OSError:
        return []
