"""Tombstones: what was forgotten stays forgotten although capture re-reads transcripts in place.

A forgotten task is remembered by its identity (source, native id), a forgotten turn by the
sha256 of its stored (redacted) text, `agent_turns.content_sha256`, and by `source_key`, an HMAC
of its source text before redaction under the home's key (sql/028): new redaction rules change
the first, never the second, so a forgotten turn holding a secret the old rules missed does not
come back after an upgrade (or a heal). Capture (capture/store.py)
asks here before storing anything: a tombstoned task is skipped whole, new turns of it included;
a tombstoned turn is left out of its task. The sensor path and a full backfill both go through
that one store, so neither brings anything back. A tombstone holds no forgotten text.

A turn tombstone is global: the very same prompt and answer in another task (a bare "continue" /
"Done." pair) is not captured either.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import psycopg

from memory_pipeline.forget.audit import audit_key

_SOURCE_KEY_PREFIX = "key:"


@lru_cache(maxsize=4)
def tombstone_key(home: Path) -> bytes:
    """The home's secret that keys turns' source keys (the forget audit's key)."""
    return audit_key(home)


def source_turn_key(key: bytes, source_text: bytes) -> str:
    """A turn's source key: an HMAC of its text before redaction, never a bare hash."""
    return _SOURCE_KEY_PREFIX + hmac.new(key, source_text, hashlib.sha256).hexdigest()


def task_forgotten(conn: psycopg.Connection, source: str, native_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM forgotten_tasks WHERE source = %s AND native_id = %s", [source, native_id]
    ).fetchone()
    return row is not None


def forgotten_turns(conn: psycopg.Connection, hashes: Iterable[str]) -> set[str]:
    """Which of these turn hashes were forgotten."""
    wanted = sorted(set(hashes))
    if not wanted:
        return set()
    rows = conn.execute(
        "SELECT content_sha256 FROM forgotten_turns WHERE content_sha256 = ANY(%s)", [wanted]
    ).fetchall()
    return {r[0] for r in rows}


def bury(
    conn: psycopg.Connection,
    audit_id: str,
    tasks: Iterable[tuple[str, str]],
    turn_hashes: Iterable[str],
) -> tuple[int, int]:
    """Write tombstones for forgotten tasks and turns (inside the forget's transaction)."""
    task_rows = sorted(set(tasks))
    hash_rows = sorted(set(turn_hashes))
    with conn.cursor() as cur:
        if task_rows:
            cur.executemany(
                "INSERT INTO forgotten_tasks (source, native_id, audit_id) VALUES (%s, %s, %s)"
                " ON CONFLICT (source, native_id) DO NOTHING",
                [[s, n, audit_id] for s, n in task_rows],
            )
        if hash_rows:
            cur.executemany(
                "INSERT INTO forgotten_turns (content_sha256, audit_id) VALUES (%s, %s)"
                " ON CONFLICT (content_sha256) DO NOTHING",
                [[h, audit_id] for h in hash_rows],
            )
    return len(task_rows), len(hash_rows)
