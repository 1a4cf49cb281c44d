"""Reading memories the way the dream cycle's steps need them (read-only helpers)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import psycopg

from memory_pipeline import tuning
from memory_pipeline.dream.models import MemoryView

_STOP = frozenset(
    (
        "about",
        "after",
        "again",
        "also",
        "because",
        "been",
        "before",
        "being",
        "between",
        "both",
        "could",
        "does",
        "doing",
        "down",
        "each",
        "from",
        "have",
        "here",
        "into",
        "just",
        "like",
        "more",
        "most",
        "much",
        "only",
        "other",
        "over",
        "same",
        "should",
        "some",
        "such",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "under",
        "until",
        "very",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "will",
        "with",
        "would",
        "your",
        "instead",
        "using",
        "used",
        "user",
        "agent",
    )
)


def load(conn: psycopg.Connection, ids: Iterable[str]) -> dict[str, MemoryView]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = conn.execute(
        "SELECT id::text, type, title, content, project, status, created_at, source_type,"
        " mem_class, access_count FROM memories WHERE id = ANY(%s::uuid[])",
        [wanted],
    ).fetchall()
    return {r[0]: MemoryView(*r) for r in rows}


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def quote(text: str, limit: int = tuning.DREAM_QUOTE_CHARS) -> str:
    """A verbatim excerpt (whitespace collapsed), cut at a word boundary when long."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0]
    return cut


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z0-9_+-]{3,}", text.casefold()) if w not in _STOP]


def shared_terms(texts: list[str], limit: int = 3) -> list[str]:
    """Content words every text uses, in the order the first text uses them."""
    if not texts:
        return []
    common = set(words(texts[0]))
    for t in texts[1:]:
        common &= set(words(t))
    seen: list[str] = []
    for w in words(texts[0]):
        if w in common and w not in seen:
            seen.append(w)
    return seen[:limit]
