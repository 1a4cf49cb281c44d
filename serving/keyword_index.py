"""The BM25 channel's candidates from the keyword index (tantivy), read-only.

The pipeline builds the index from PostgreSQL (memory_pipeline/embedding/keyword_index.py).
Serving uses it only when PostgreSQL confirms it is current: the database's identity names the
directory, the generation PostgreSQL recorded must be the one written into it, and no passage
may be waiting to be added or removed (`passage_index_pending`, `passage_index_removals`), so
the index holds exactly the committed passages. Otherwise `open_view` returns None and
the channel runs its PostgreSQL statement: results are never stale, only slower in the seconds
between a passage's commit and the pipeline's next refresh.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import tantivy

from memory_pipeline import tuning
from memory_pipeline.embedding import keyword_index as K
from memory_pipeline.settings import Settings
from serving.models import SearchFilters

_lock = threading.Lock()
_root_override: Path | None = None
_root_cache: tuple[str | None, Path] | None = None
# index directory -> (opened index, generation it was last reloaded for)
_opened: dict[Path, tuple[tantivy.Index, int]] = {}
_SCHEMA = K.schema()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def use_home(home: Path | None) -> None:
    """Read indexes under `home` instead of MEMORY_HOME (the benchmark's own directory)."""
    global _root_override
    _root_override = home


def _home() -> Path:
    global _root_cache
    if _root_override is not None:
        return _root_override
    env = os.environ.get("MEMORY_HOME")
    if _root_cache is None or _root_cache[0] != env:
        _root_cache = (env, Settings.from_env().memory_home)
    return _root_cache[1]


@dataclass(frozen=True)
class View:
    """One query's look at a current index: its lexemes (PostgreSQL's) and a searcher."""

    lexemes: list[str]
    searcher: tantivy.Searcher | None  # None: the query has no lexeme

    @property
    def documents(self) -> int:
        return self.searcher.num_docs if self.searcher else 0

    def top(self, n: int, filters: SearchFilters) -> list[tuple[float, int, int]]:
        """(BM25 score, passage id, memory id) of the n best matches whose memory's type,
        class, project, source, tags and creation time pass the filter, best first; each id a
        uuid's 128-bit integer, which orders as PostgreSQL orders uuids."""
        if self.searcher is None or n <= 0:
            return []
        words = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(_SCHEMA, K.BODY, lex, "freq"))
                for lex in self.lexemes
            ]
        )
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, words)]
            + [(tantivy.Occur.Must, tantivy.Query.boost_query(q, 0.0)) for q in _narrowing(filters)]
        )
        hits = self.searcher.search(query, n, count=False).hits
        addresses = [a for _, a in hits]
        ph, pl, mh, ml = (self.searcher.fast_field_values(f, addresses) for f in K.ID_FIELDS)
        return [
            (float(score), ph[i] << 64 | pl[i], mh[i] << 64 | ml[i])
            for i, (score, _) in enumerate(hits)
        ]


def _narrowing(filters: SearchFilters) -> list[tantivy.Query]:
    """The filter's narrowing conditions as tantivy queries (scoring nothing); PostgreSQL
    applies the whole filter again, with status, privacy and duplicates."""
    out = [
        tantivy.Query.term_set_query(_SCHEMA, name, list(values))
        for name, values in zip(
            K.TERM_FIELDS,
            (filters.types, filters.mem_classes, filters.projects, filters.sources),
            strict=True,
        )
        if values
    ]
    if filters.tags:
        out.append(tantivy.Query.term_set_query(_SCHEMA, K.TAGS, list(filters.tags)))
    if filters.since or filters.until:
        out.append(
            tantivy.Query.range_query(
                _SCHEMA,
                K.CREATED,
                tantivy.FieldType.Integer,
                _micros(filters.since) if filters.since else None,
                _micros(filters.until) if filters.until else None,
                True,
                filters.until is None,  # until is exclusive, as in filter_sql
            )
        )
    return out


def _micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def open_view(conn: psycopg.Connection, query: str) -> View | None:
    """The index for this database if it is current, else None. One round trip gives the
    query's lexemes and everything the check needs."""
    row = conn.execute(
        "SELECT tsvector_to_array(to_tsvector('english', %s)), i.token::text,"
        " current_database(), i.build, i.generation,"
        " EXISTS (SELECT 1 FROM passage_index_pending)"
        " OR EXISTS (SELECT 1 FROM passage_index_removals)"
        " FROM search_index_identity i",
        [query],
    ).fetchone()
    if row is None or (tuning.BM25_K1, tuning.BM25_B) != K.TANTIVY_BM25:
        return None
    lexemes, token, database, build, generation, changed = row
    if changed or not build:
        return None
    path = K.identity_dir(_home(), token, database) / build
    try:
        if int((path / K.GENERATION_FILE).read_text()) != generation:
            return None  # a refresh is under way, or the directory is not this database's
    except (OSError, ValueError):
        return None
    index = _index(path, generation)
    if index is None:
        return None
    return View(list(lexemes), index.searcher() if lexemes else None)


def _index(path: Path, generation: int) -> tantivy.Index | None:
    with _lock:
        cached = _opened.get(path)
        try:
            if cached is None:
                for other in [p for p in _opened if p.parent == path.parent]:
                    del _opened[other]  # a newer build of the same database replaced it
                if (path / K.VERSION_FILE).read_text().strip() != str(K.SCHEMA_VERSION):
                    return None
                index = tantivy.Index.open(str(path))
            else:
                index = cached[0]
                if cached[1] != generation:
                    index.reload()
        except (OSError, ValueError):
            return None
        _opened[path] = (index, generation)
        return index


def pack(hits: list[tuple[float, int, int]]) -> bytes:
    """Each hit's passage and memory id, 32 bytes per hit, for one bytea parameter: sending
    hundreds of uuids as text costs more than the statement that reads them."""
    return b"".join(pid.to_bytes(16, "big") + mid.to_bytes(16, "big") for _, pid, mid in hits)


def rank(hits: list[tuple[float, int, int]]) -> list[tuple[str, str]]:
    """(passage id, memory id) best first from (score, passage id, memory id) hits, as the
    PostgreSQL channel's tail (serving/search/bm25.py RANK_PASSAGES_BY_MEMORY) ranks them: the best
    passage of each of the CANDIDATES_PER_CHANNEL best memories, plus any other passage within
    the PASSAGE_CANDIDATES_PER_CHANNEL best; ties by id."""
    ordered = sorted(hits, key=lambda h: (-h[0], h[1]))
    best: dict[int, float] = {}
    first: set[int] = set()
    for score, pid, mid in ordered:
        if mid not in best:
            best[mid] = score
            first.add(pid)
    top = set(sorted(best, key=lambda m: (-best[m], m))[: tuning.CANDIDATES_PER_CHANNEL])
    return [
        (K.uuid_text(pid), K.uuid_text(mid))
        for prank, (_, pid, mid) in enumerate(ordered, start=1)
        if mid in top and (pid in first or prank <= tuning.PASSAGE_CANDIDATES_PER_CHANNEL)
    ]
