"""The keyword index: passages' PostgreSQL lexemes in a tantivy index on disk (issue 12).

Scoring every passage that holds a common word is what keeps BM25 in PostgreSQL slow; tantivy
ranks by block-max WAND and reads a fraction of those postings. PostgreSQL stays the store of
record: the index is derived from memory_passages, lives under
`MEMORY_HOME/keyword-index/<database identity>/<build>`, and is rebuilt from it whenever in
doubt. Serving (serving/keyword_index.py) uses it only when PostgreSQL confirms it is current.

Same words as PostgreSQL: each passage's document is its `search_vector` lexemes, each
repeated by its term frequency as sql/021 counts it (a weight-A position counts
BM25_TITLE_TF, others 1, a lexeme without positions 1), so stemming, stop words and the title
weight are PostgreSQL's. Changes reach the index through sql/022's `passage_index_pending` and
`passage_index_removals`, applied here under an advisory lock (tantivy allows one writer).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import tantivy

from memory_pipeline import tuning
from memory_pipeline.settings import Settings

# Bumped whenever the document layout changes: an index of another version is rebuilt.
SCHEMA_VERSION = 4
# Document length. PostgreSQL's BM25 counts a passage's distinct lexemes (length(search_vector));
# tantivy counts the tokens of the field, which holds each lexeme tf times. Each document is
# padded with FILLER (a token no lexeme can be: PostgreSQL's parser never keeps control
# characters) to LENGTH_SCALE x its distinct lexemes, so tantivy's dl / avgdl is PostgreSQL's
# (a document whose repetitions alone exceed that keeps its own length; tantivy quantises
# lengths above 40 to within about 7%, the one remaining difference).
LENGTH_SCALE = 2
# tantivy's BM25 has these built in; serving uses the index only while tuning's BM25_K1
# and BM25_B equal them.
TANTIVY_BM25 = (1.2, 0.75)
FILLER = "\x01"
BODY = "body"
SEQ = "seq"
# A passage's id and its memory's id, each a uuid as two u64 fast fields (high, low), so serving
# reads them from the index and asks PostgreSQL only which memories pass the filter.
ID_FIELDS = ("passage_hi", "passage_lo", "memory_hi", "memory_lo")
# The memory's attributes a search filter narrows by (serving/models.py SearchFilters), as raw
# terms ('' for none) and its creation time in microseconds since the epoch; sql/022 renumbers
# a memory's passages when one of them changes.
TERM_FIELDS = ("type", "mem_class", "project", "source_type")
TAGS = "tags"
CREATED = "created_us"
_LOW = (1 << 64) - 1
_SPACE = re.compile(r"[ \t\n\r\f]")
GENERATION_FILE = "generation"
VERSION_FILE = "layout-version"
LOCK_KEY = int.from_bytes(hashlib.sha256(b"memory-pipeline:keyword-index").digest()[:8], "big") >> 1

# A passage's lexemes repeated by term frequency, as passage_postings_of (sql/021) counts it.
_DOCUMENTS = (
    "SELECT p.seq, p.id, p.memory_id, m.type, coalesce(m.mem_class, ''),"
    " coalesce(m.project, ''), coalesce(m.source_type, ''), m.tags,"
    " (extract(epoch FROM m.created_at) * 1000000)::bigint,"
    " coalesce((SELECT array_agg(u.lexeme ORDER BY u.lexeme) FROM unnest(p.search_vector) AS u"
    " CROSS JOIN LATERAL generate_series(1, (SELECT"
    "  coalesce(sum(CASE w WHEN 'A' THEN %s ELSE 1 END), 1)::int FROM unnest(u.weights) AS w))"
    " ), '{}'), length(p.search_vector)"
    " FROM memory_passages p JOIN memories m ON m.id = p.memory_id"
)


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field(SEQ, indexed=True, fast=True)
    for name in ID_FIELDS:
        builder.add_unsigned_field(name, fast=True)
    for name in (*TERM_FIELDS, TAGS):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    builder.add_integer_field(CREATED, indexed=True, fast=True)
    # Lexemes are joined by spaces and split by tantivy's ASCII-whitespace tokenizer (a lexeme
    # never holds ASCII whitespace; one that did would be indexed pre-tokenized instead).
    builder.add_text_field(BODY, tokenizer_name="whitespace", index_option="freq")
    return builder.build()


def title_tf() -> int:
    """BM25_TITLE_TF as the whole number of repetitions tantivy needs."""
    tf = int(tuning.BM25_TITLE_TF)
    if tf != tuning.BM25_TITLE_TF:
        raise ValueError("BM25_TITLE_TF must be a whole number for the keyword index")
    return tf


def split(value: uuid.UUID) -> tuple[int, int]:
    return value.int >> 64, value.int & _LOW


def uuid_text(key: int) -> str:
    """A uuid held as its 128-bit integer, in PostgreSQL's text form (faster than uuid.UUID)."""
    h = f"{key:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def identity_dir(home: Path, token: str, database: str) -> Path:
    return home / "keyword-index" / f"{token}-{database}"


@dataclass(frozen=True)
class KeywordIndexReport:
    added: int
    removed: int
    rebuilt: bool
    documents: int
    seconds: float
    reason: str  # why it rebuilt, or "incremental" / "unchanged"


def refresh_keyword_index(
    conn: psycopg.Connection, home: Path, progress: Callable[[str], None] | None = None
) -> KeywordIndexReport:
    """Bring the index in step with memory_passages; idempotent (nothing new: nothing written).

    A missing, unreadable or other-layout index is rebuilt whole into a new directory, which
    becomes current only when PostgreSQL records it; otherwise pending changes are applied
    (each added number deleted first, so a change applied twice after a crash is applied once).
    If the index's document count then differs from PostgreSQL's (a TRUNCATE, a restored
    backup, a lost commit), it is rebuilt whole. An exception rolls the tantivy writer back and
    leaves the previous index current."""
    return _refresh(conn, home, progress, force_rebuild=False)


def rebuild_keyword_index(
    conn: psycopg.Connection, home: Path, progress: Callable[[str], None] | None = None
) -> KeywordIndexReport:
    """A full rebuild: what `forget` runs, so forgotten passages' lexemes leave the disk
    (tantivy keeps deleted documents in its segments until they are merged)."""
    return _refresh(conn, home, progress, force_rebuild=True)


def refresh_for_asset(conn: psycopg.Connection, log: logging.Logger) -> dict[str, object]:
    """The refresh as a pipeline step runs it after writing passages, as Dagster metadata.

    The index is derived: a failure (a full disk, say) is logged and reported in the metadata
    rather than failing the step whose rows are already committed; search uses PostgreSQL
    until a later refresh succeeds."""
    try:
        report = refresh_keyword_index(conn, Settings.from_env().memory_home, log.info)
    except Exception as exc:
        log.warning("keyword index not refreshed (search uses PostgreSQL meanwhile): %s", exc)
        return {"keyword_index_reason": f"failed: {type(exc).__name__}: {exc}"[:300]}
    return {
        "keyword_index_added": report.added,
        "keyword_index_removed": report.removed,
        "keyword_index_rebuilt": report.rebuilt,
        "keyword_index_documents": report.documents,
        "keyword_index_seconds": report.seconds,
        "keyword_index_reason": report.reason,
    }


def _refresh(
    conn: psycopg.Connection,
    home: Path,
    progress: Callable[[str], None] | None,
    *,
    force_rebuild: bool,
) -> KeywordIndexReport:
    say = progress or (lambda _m: None)
    started = time.monotonic()
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise RuntimeError("refresh_keyword_index needs a connection outside a transaction")
    conn.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
    try:
        with conn.transaction():
            # One snapshot for everything read, so the pending rows deleted at the end are
            # exactly the ones applied; later changes stay pending.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            token, database, build, generation = conn.execute(
                "SELECT token::text, current_database(), build, generation"
                " FROM search_index_identity"
            ).fetchone()  # type: ignore[misc]
            root = identity_dir(home, token, database)
            index = None if force_rebuild else _open(root, build, generation)
            reason = "forced" if force_rebuild else ("" if index else "missing or stale")
            added = removed = 0
            if index is not None:
                added, removed = _apply_pending(conn, index, root / build, generation + 1)
                index.reload()
                documents = index.searcher().num_docs
                expected = _count(conn)
                if documents != expected:
                    reason = f"count mismatch ({documents} indexed, {expected} passages)"
                    index = None
                elif added or removed:
                    _record(conn, build, generation + 1)
            if index is None:
                say(f"keyword index: full rebuild ({reason})")
                build = uuid.uuid4().hex
                documents = _build(conn, root / build, generation + 1)
                _record(conn, build, generation + 1)
                conn.execute("DELETE FROM passage_index_removals")
        if index is None:
            _remove_other_builds(root, build)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
    report = KeywordIndexReport(
        added=added,
        removed=removed,
        rebuilt=index is None,
        documents=documents,
        seconds=round(time.monotonic() - started, 3),
        reason=reason or ("incremental" if added or removed else "unchanged"),
    )
    say(
        f"keyword index: {report.reason}; {report.added} added, {report.removed} removed,"
        f" {report.documents} documents in {report.seconds} s"
    )
    return report


def _count(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memory_passages").fetchone()[0])  # type: ignore[index]


def _open(root: Path, build: str | None, generation: int) -> tantivy.Index | None:
    """The current build, or None when it is missing, unreadable, of another layout, or not at
    the generation PostgreSQL recorded (a database restored over the one it was built from, or
    a refresh that died between tantivy's commit and PostgreSQL's): rebuilt then."""
    if not build:
        return None
    path = root / build
    try:
        if (path / VERSION_FILE).read_text().strip() != str(SCHEMA_VERSION):
            return None
        if int((path / GENERATION_FILE).read_text()) != generation:
            return None
        if not tantivy.Index.exists(str(path)):
            return None
        return tantivy.Index(schema(), path=str(path), reuse=True)
    except (OSError, ValueError):
        return None


def _documents(conn: psycopg.Connection, where: str, params: list[object]) -> Iterable[tuple]:
    with conn.cursor(name=f"keyword_docs_{uuid.uuid4().hex[:8]}") as cur:
        cur.itersize = tuning.KEYWORD_INDEX_FETCH_ROWS
        cur.execute(_DOCUMENTS + where, [title_tf(), *params])
        yield from cur


def _document(
    seq: int,
    passage: uuid.UUID,
    memory: uuid.UUID,
    kind: str,
    mem_class: str,
    project: str,
    source_type: str,
    tags: list[str] | None,
    created_us: int,
    lexemes: list[str],
    distinct: int,
) -> tantivy.Document:
    doc = tantivy.Document()
    doc.add_unsigned(SEQ, seq)
    for name, value in zip(ID_FIELDS, (*split(passage), *split(memory)), strict=True):
        doc.add_unsigned(name, value)
    for name, term in zip(TERM_FIELDS, (kind, mem_class, project, source_type), strict=True):
        doc.add_text(name, term)
    for tag in tags or ():
        doc.add_text(TAGS, tag)
    doc.add_integer(CREATED, created_us)
    tokens = [lex for lex in lexemes if lex != FILLER]
    tokens += [FILLER] * (LENGTH_SCALE * distinct - len(tokens))
    if any(_SPACE.search(lex) for lex in lexemes):
        pre = [tantivy.Token(t, i, 0, 0) for i, t in enumerate(tokens)]
        doc.add_pre_tokenized_text(BODY, tantivy.PreTokenizedString(" ", pre))
    else:
        doc.add_text(BODY, " ".join(tokens))
    return doc


def _write(
    conn: psycopg.Connection,
    index: tantivy.Index,
    where: str,
    params: list[object],
    doomed: tantivy.Query | None = None,
) -> int:
    """One tantivy commit: the documents `doomed` matches deleted, the passages `where` selects
    added; any error rolls the writer back, so nothing of it becomes visible."""
    writer = index.writer(tuning.KEYWORD_INDEX_WRITER_HEAP_BYTES, 1)
    count = 0
    try:
        if doomed is not None:
            writer.delete_documents_by_query(doomed)
        for row in _documents(conn, where, params):
            writer.add_document(_document(*row))
            count += 1
        writer.commit()
        writer.wait_merging_threads()
    except BaseException:
        writer.rollback()
        raise
    return count


def _apply_pending(
    conn: psycopg.Connection, index: tantivy.Index, path: Path, generation: int
) -> tuple[int, int]:
    removals = [r[0] for r in conn.execute("SELECT seq FROM passage_index_removals")]
    pending = [r[0] for r in conn.execute("SELECT seq FROM passage_index_pending")]
    if not removals and not pending:
        return 0, 0
    # By query: delete_documents_by_term with a Python int builds an i64 term and silently
    # deletes nothing from this u64 field (tantivy-py 0.27).
    doomed = tantivy.Query.term_set_query(index.schema, SEQ, [*removals, *pending])
    added = _write(conn, index, " WHERE p.seq = ANY(%s)", [pending], doomed)
    _write_generation(path, generation)
    conn.execute("DELETE FROM passage_index_removals WHERE seq = ANY(%s)", [removals])
    conn.execute("DELETE FROM passage_index_pending WHERE seq = ANY(%s)", [pending])
    return added, len(removals)


def _build(conn: psycopg.Connection, path: Path, generation: int) -> int:
    """A whole new index in `path` (nothing else reads it until PostgreSQL records it)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    try:
        count = _write(conn, tantivy.Index(schema(), path=str(path)), "", [])
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    (path / VERSION_FILE).write_text(str(SCHEMA_VERSION))
    _write_generation(path, generation)
    conn.execute("DELETE FROM passage_index_pending")  # all of it is in this snapshot's build
    return count


def _write_generation(path: Path, generation: int) -> None:
    tmp = path / f"{GENERATION_FILE}.tmp"
    tmp.write_text(str(generation))
    os.replace(tmp, path / GENERATION_FILE)


def _record(conn: psycopg.Connection, build: str, generation: int) -> None:
    conn.execute(
        "UPDATE search_index_identity SET build = %s, generation = %s, updated_at = now()",
        [build, generation],
    )


def _remove_other_builds(root: Path, keep: str) -> None:
    """Older builds go once the new one is recorded (a process still reading one keeps its
    open files until it lets go of them)."""
    for child in root.iterdir():
        if child.name != keep and child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
