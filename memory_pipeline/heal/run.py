"""The heal: the current redaction rules over everything already stored.

1. Every column surfaces.TABLES names, table by table, in batches of HEAL_BATCH_ROWS (each its
   own transaction, rows locked while rewritten): only values the rules change are written.
   A turn's hash and redaction count follow its text (sql/026 lets the heal, and only it,
   update a stored turn); a changed passage gets its full-text vector recomputed and is marked
   to be cut again.
2. What is derived from that text: the memories' and passages' vectors and the messages' ones
   (their `content_sha256` no longer matches, so the embedding step recomputes them: run here
   for the days that changed), passages cut again from the healed text, the BM25 statistics
   (they hold lexemes) and the keyword index, rebuilt whole (tantivy keeps a deleted
   document's terms until its segments merge).
3. Dagster's records (memory_pipeline/dagster_records.py), then the files under MEMORY_HOME
   that quote memories (heal/files.py).
4. ANALYZE of what changed (pg_stats keeps most-common values), VACUUM of the dead row
   versions; the rules' version is recorded (sql/026), and the backups made before the
   rewrite are named, since they still hold the old text.

Running it twice changes nothing the second time: the rules are idempotent and only changed
values are written. A heal that stops part-way keeps what it rewrote; the next one finds the
rest, and recomputes the derived data it did not get to (`derived_pending`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_pipeline import tuning
from memory_pipeline.backup.layout import backup_names, created_from_id
from memory_pipeline.capture.redact import RULES_VERSION, Redactions, redact
from memory_pipeline.dagster_records import dagster_psycopg_url, rewrite_dagster_records
from memory_pipeline.db.connection import DatabaseUrls, connect
from memory_pipeline.errors import UserError
from memory_pipeline.heal import state
from memory_pipeline.heal.files import rewrite_files
from memory_pipeline.heal.surfaces import TABLES, Table
from memory_pipeline.heal.tables import Column, TableResult, rewrite_table
from memory_pipeline.settings import Settings

LOCK_KEY = int.from_bytes(hashlib.sha256(b"memory-pipeline:heal").digest()[:8], "big") >> 1
# Tables whose text feeds search: a change there means vectors, passages, statistics and the
# keyword index are recomputed.
FEEDS_SEARCH = frozenset(["agent_turns", "memories", "memory_passages"])
DAGSTER_SURFACE = "dagster records"
FILES_SURFACE = "files under MEMORY_HOME"
PURGE_COMMAND = "memory-pipeline forget --purge-backups"


class Redactor:
    """The redaction rules as a `rewrite`, counting what they replaced."""

    def __init__(self) -> None:
        self.found = Redactions()

    def __call__(self, text: str) -> str:
        new, found = redact(text)
        if new != text:
            self.found.add(found)
            return new
        return text


@dataclass
class SurfaceReport:
    surface: str
    scanned: int = 0
    rewritten: int = 0
    redactions: Redactions = field(default_factory=Redactions)

    def line(self, dry_run: bool) -> str:
        verb = "would be rewritten" if dry_run else "rewritten"
        unit = "files" if self.surface == FILES_SURFACE else "rows"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.redactions.by_kind.items()))
        return f"{self.surface}: {self.rewritten} of {self.scanned} {unit} {verb}" + (
            f"; redactions: {kinds}" if kinds else ""
        )


@dataclass
class HealReport:
    dry_run: bool
    rules_version: str = RULES_VERSION
    surfaces: dict[str, SurfaceReport] = field(default_factory=dict)
    derived: list[str] = field(default_factory=list)  # what was recomputed, one line each
    derived_failed: str | None = None
    old_backups: list[str] = field(default_factory=list)
    copy_command: bool = False
    seconds: float = 0.0

    @property
    def rewritten(self) -> int:
        return sum(s.rewritten for s in self.surfaces.values())

    def surface(self, name: str) -> SurfaceReport:
        return self.surfaces.setdefault(name, SurfaceReport(name))


def heal(
    settings: Settings,
    urls: DatabaseUrls,
    *,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> HealReport:
    """Heal the whole store (see the module docstring); `dry_run` counts and writes nothing."""
    say = progress or (lambda _m: None)
    started = time.monotonic()
    report = HealReport(dry_run=dry_run)
    with connect(urls.app, autocommit=True) as conn:
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY]).fetchone()[0]:  # type: ignore[index]
            raise UserError("another heal is running on this database; wait for it to finish")
        try:
            changed = _heal_tables(conn, report, dry_run, say)
            if not dry_run and state.read_state(conn).derived_pending:
                _recompute_derived(conn, settings, report, changed, say)
            _heal_dagster(urls, report, dry_run, say)
            files = Redactor()
            found = rewrite_files(settings, files, dry_run=dry_run)
            surface = report.surface(FILES_SURFACE)
            surface.scanned, surface.rewritten = found.scanned, len(found.rewritten)
            surface.redactions = files.found
            if not dry_run:
                _vacuum(conn, [t for t, n in changed.items() if n])
                state.record(conn, "heal")
            report.old_backups = old_backups(conn, settings)
            report.copy_command = bool(settings.backup_copy_command)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
    report.seconds = round(time.monotonic() - started, 2)
    return report


def old_backups(conn: psycopg.Connection, settings: Settings) -> list[str]:
    """Backups made before the last heal that rewrote something: they hold the old text."""
    rewritten_at = state.read_state(conn).last_rewrite_at
    if rewritten_at is None or not settings.backup_dir.is_dir():
        return []
    return [n for n in backup_names(settings.backup_dir) if created_from_id(n) < rewritten_at]


# --- 1. the tables --------------------------------------------------------------------------
@dataclass
class _Changed:
    """Ids whose text changed, to find the days whose vectors are recomputed."""

    memories: set[UUID] = field(default_factory=set)
    passages: set[UUID] = field(default_factory=set)
    turns: set[UUID] = field(default_factory=set)
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows rewritten

    def items(self) -> Any:
        return self.rows.items()


def _heal_tables(
    conn: psycopg.Connection, report: HealReport, dry_run: bool, say: Callable[[str], None]
) -> _Changed:
    changed = _Changed()
    for table in TABLES:
        redactor = Redactor()
        result = _heal_table(conn, table, redactor, dry_run, say)
        surface = report.surface(table.surface)
        surface.scanned += result.scanned
        surface.rewritten += result.rewritten
        surface.redactions.add(redactor.found)
        changed.rows[table.name] = result.rewritten
        keys = {k[0] for k in result.changed_keys}
        if table.name == "memories":
            changed.memories |= keys
        elif table.name == "memory_passages":
            changed.passages |= keys
        elif table.name == "agent_turns":
            changed.turns |= keys
    return changed


def _heal_table(
    conn: psycopg.Connection,
    table: Table,
    redactor: Redactor,
    dry_run: bool,
    say: Callable[[str], None],
) -> TableResult:
    columns = [
        *(Column(c, "text") for c in table.text),
        *(Column(c, "json") for c in table.json),
        *(Column(c, "array") for c in table.arrays),
    ]
    total = int(
        conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table.name))
        ).fetchone()[0]  # type: ignore[index]
    )
    batch = tuning.HEAL_BATCH_ROWS
    feeds = table.name in FEEDS_SEARCH

    def after(c: psycopg.Connection, keys: list[tuple[Any, ...]]) -> None:
        if table.name == "memory_passages":
            _passages_changed(c, [k[0] for k in keys])
        state.mark_rewritten(c, derived=feeds)

    return rewrite_table(
        conn,
        table.name,
        columns,
        redactor,
        batch=batch,
        dry_run=dry_run,
        setup="SET LOCAL memory_pipeline.heal = 'on'" if table.name == "agent_turns" else None,
        extra=_turn_extra if table.name == "agent_turns" else None,
        after_batch=after,
        progress=(lambda n: say(f"  {table.name}: {n}/{total} rows")) if total > batch else None,
    )


def _turn_extra(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A turn's hash is of its stored text (capture/store.py clean_turn): capture keeps telling
    the healed turn from a new one, and its redaction count grows by what was found now."""
    prompt, outcome = new["prompt"], new["outcome"]
    found = redact(old["prompt"])[1].total + redact(old["outcome"])[1].total
    return {
        "content_sha256": hashlib.sha256(f"{prompt}\x1f{outcome}".encode()).hexdigest(),
        "redactions": sql.SQL("redactions + {}").format(sql.Literal(found)),
    }


def _passages_changed(conn: psycopg.Connection, ids: list[UUID]) -> None:
    """The full-text vector of the healed text (as embedding/passages.py writes it), and the
    passages marked to be cut again from the healed memory and turns."""
    conn.execute(
        "UPDATE memory_passages p SET source_sha256 = '', search_vector ="
        " setweight(to_tsvector('english', p.heading), 'A')"
        " || setweight(to_tsvector('english', CASE WHEN m.type = 'segment'"
        "   AND cardinality(p.turn_ids) > 0 THEN '' ELSE coalesce((SELECT string_agg(q, ' ')"
        "   FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(m.metadata -> 'questions')"
        "   = 'array' THEN m.metadata -> 'questions' ELSE '[]'::jsonb END) AS q), '') END), 'A')"
        " || setweight(to_tsvector('english', p.text), 'B')"
        " FROM memories m WHERE m.id = p.memory_id AND p.id = ANY(%s)",
        [ids],
    )


# --- 2. derived data ------------------------------------------------------------------------
def _recompute_derived(
    conn: psycopg.Connection,
    settings: Settings,
    report: HealReport,
    changed: _Changed,
    say: Callable[[str], None],
) -> None:
    from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
    from memory_pipeline.embedding.keyword_index import rebuild_keyword_index
    from memory_pipeline.embedding.spaces import embedder_for
    from memory_pipeline.embedding.store import embed_window

    days = _days(conn, changed)
    try:
        embedder = embedder_for(settings.embedding_space, settings.ollama_host)
        vectors = passages = pieces = 0
        for start, end in _ranges(days):
            say(f"  re-embedding healed memories of {start} .. {end - timedelta(days=1)}")
            got = embed_window(conn, embedder, start, end)
            vectors += got.embedded
            passages += got.passages_embedded + got.passages_reused
            pieces += got.pieces_embedded
        report.derived.append(
            f"vectors recomputed in {embedder.space}: {vectors} memories, {passages} passages,"
            f" {pieces} messages"
        )
    except Exception as exc:  # Ollama down, say: the text is healed, the vectors wait
        report.derived_failed = (
            f"vectors not recomputed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]});"
            " the next `memory-pipeline run` or `heal` recomputes them"
        )
    memories, passage_count, lexemes = refresh_bm25_statistics(conn)
    report.derived.append(
        f"BM25 statistics: {passage_count} passages, {lexemes} lexemes ({memories} memories)"
    )
    index = rebuild_keyword_index(conn, settings.memory_home)
    report.derived.append(f"keyword index rebuilt: {index.documents} passages")
    if report.derived_failed is None:
        state.clear_derived(conn)


def _days(conn: psycopg.Connection, changed: _Changed) -> list[date]:
    """The partition days of the memories whose text changed, rest on a changed turn or hold
    a changed passage; every day when a previous heal left its derived data undone."""
    if not (changed.memories or changed.passages or changed.turns):
        where, params = "true", []
    else:
        where = (
            "m.id = ANY(%s) OR m.id IN (SELECT memory_id FROM memory_passages WHERE id = ANY(%s)"
            " OR source_sha256 = '') OR m.id IN (SELECT memory_id FROM memory_provenance"
            " WHERE turn_id = ANY(%s))"
        )
        params = [list(changed.memories), list(changed.passages), list(changed.turns)]
    rows = conn.execute(
        f"SELECT DISTINCT partition_day FROM memories m WHERE {where} ORDER BY 1", params
    ).fetchall()
    return [r[0] for r in rows]


def _ranges(days: list[date]) -> list[tuple[date, date]]:
    """Consecutive days as [start, end) ranges."""
    out: list[tuple[date, date]] = []
    for day in days:
        if out and out[-1][1] == day:
            out[-1] = (out[-1][0], day + timedelta(days=1))
        else:
            out.append((day, day + timedelta(days=1)))
    return out


# --- 3. Dagster -----------------------------------------------------------------------------
def _heal_dagster(
    urls: DatabaseUrls, report: HealReport, dry_run: bool, say: Callable[[str], None]
) -> None:
    redactor = Redactor()
    try:
        conn = connect(dagster_psycopg_url(urls.dagster), autocommit=True)
    except psycopg.OperationalError as exc:
        raise UserError(
            f"cannot reach Dagster's database to heal its records ({str(exc).splitlines()[0]});"
            " check DAGSTER_PG_URL, then run `memory-pipeline heal` again"
        ) from exc
    with conn:
        found = rewrite_dagster_records(
            conn, redactor, batch=tuning.HEAL_BATCH_ROWS, dry_run=dry_run, progress=say
        )
        if not dry_run:
            _vacuum(conn, [t for t, n in found.rewritten.items() if n])
    surface = report.surface(DAGSTER_SURFACE)
    surface.scanned = sum(found.scanned.values())
    surface.rewritten = found.total_rewritten
    surface.redactions = redactor.found


# --- 4. --------------------------------------------------------------------------------------
def _vacuum(conn: psycopg.Connection, tables: list[str]) -> None:
    """Dead row versions of the rewritten rows go, and pg_stats forgets their values."""
    for table in tables:
        conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
