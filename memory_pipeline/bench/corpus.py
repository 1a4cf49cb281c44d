"""The benchmark corpus: a fresh database, and a seeded, realistic corpus bulk-loaded into it.

Why generated: the benchmarks need 100K memories with everything behind them (tasks, turns,
segments, provenance, passages, vectors), and running the real pipeline over that much text
would take hours. The generator writes the SAME rows the pipeline writes (semantic/store.py,
embedding/passages.py, embedding/store.py), with COPY, then refreshes the BM25 statistics with
the pipeline's own function, so search sees what it would see after `memory-pipeline run`.

- Text: real sentences of technical and conversational English (the demo conversations and the
  long-conversation evaluation set, both written for this project), recombined per turn, with
  project names, tickets, error codes and file names mixed in so rare words exist too.
- Shape: ~40 projects over two years; tasks of 2-8 turns from three sources; segments of 1-3
  turns (one memory each, one passage per turn); decisions, insights and correction episodes
  derived from segments with their provenance; a few superseded and archived memories.
- Vectors: every pool sentence is embedded once by the real offline MiniLM (cached on disk);
  a passage's vector is the normalised sum of its sentences' vectors, a memory's the normalised
  sum of its passages'. They live in the serving space.
- Speed: full-text and vector indexes are dropped before the COPY and rebuilt after it (building
  HNSW once is many times faster than inserting through it).

Deterministic: the same scale and seed give the same rows (ids included).
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import random
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from memory_pipeline import tuning
from memory_pipeline.db.connection import READER_ROLE, connect, parse_database_url
from memory_pipeline.db.embedded import EmbeddedServer
from memory_pipeline.db.migrate import migrate
from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline.embedding.keyword_index import refresh_keyword_index
from memory_pipeline.embedding.passages import embed_text, turn_text
from memory_pipeline.embedding.store import embedding_text, text_sha256
from memory_pipeline.semantic import classify
from memory_pipeline.settings import REPO_ROOT, Settings
from serving import keyword_index

Progress = Callable[[str], None]
SPACE = tuning.LOCAL_EMBEDDING_SPACE
DIMS = 384
CORPUS_END = datetime(2026, 11, 1, tzinfo=UTC)  # fixed, so a seed always gives the same dates
CORPUS_DAYS = 730
SOURCES = (("codex", 0.45), ("claude_code", 0.4), ("chat_import", 0.15))
_PREFIXES = ("atlas", "borealis", "cinder", "delta", "ember", "fjord", "granite", "harbor")
_SUFFIXES = ("api", "billing", "sync", "ops", "web")
PROJECTS = tuple(f"{p}-{s}" for p in _PREFIXES for s in _SUFFIXES)  # 40 projects
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_TEXT_SOURCES = (
    REPO_ROOT / "memory_pipeline" / "demo" / "conversations",
    REPO_ROOT / "evaluation" / "long_conversations" / "conversations",
)


def _noop(_: str) -> None:
    pass


@dataclass
class CorpusInfo:
    """What was loaded: counts, the vocabulary queries are built from, and the load time."""

    memories: int
    passages: int
    tasks: int
    turns: int
    projects: tuple[str, ...]
    sentences: list[str]  # the pool the text was drawn from
    rare_terms: list[str]  # identifiers that occur in only a few memories
    first_day: date
    last_day: date
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)


# -- the database -----------------------------------------------------------------------------


@contextmanager
def bench_database(progress: Progress = _noop) -> Iterator[str]:
    """A fresh, migrated database; yields its owner URL and removes it afterwards.

    With DATABASE_URL set, a throwaway database `<db>_bench_<random>` on that server (the role
    needs CREATEDB, as for backup verification); otherwise an embedded server of its own in a
    temporary directory, never the user's MEMORY_HOME.
    """
    settings = Settings.from_env()
    if settings.database_url:
        params = parse_database_url(settings.database_url)
        name = f"{params['dbname']}_bench_{uuid.uuid4().hex[:8]}"
        admin = psycopg.connect(settings.database_url, autocommit=True)
        try:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            url = make_conninfo(settings.database_url, dbname=name)
            progress(f"benchmark database {name} on DATABASE_URL's server")
            migrate(url)
            yield url
        finally:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            admin.close()
        return
    tmp = Path(tempfile.mkdtemp(prefix="mp-bench-"))
    server = EmbeddedServer(tmp / "pgdata")
    try:
        progress(f"starting a temporary embedded PostgreSQL in {tmp}")
        server.start()
        with psycopg.connect(server.uri("postgres"), autocommit=True) as admin:
            admin.execute("CREATE DATABASE memory")
        url = server.uri("memory")
        migrate(url)
        yield url
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def reader_url(app_url: str) -> str:
    """The read-only serving role on the benchmark database (trusted on the embedded server;
    on DATABASE_URL's server MEMORY_READER_URL wins, pointed at the benchmark database)."""
    settings = Settings.from_env()
    dbname = conninfo_to_dict(app_url)["dbname"]
    if settings.database_url:
        if settings.reader_url:
            return make_conninfo(settings.reader_url, dbname=dbname)
        return app_url  # no reader password known: measure as the owner
    params = {k: v for k, v in conninfo_to_dict(app_url).items() if k != "password"}
    params["user"] = READER_ROLE
    return make_conninfo(**params)  # type: ignore[arg-type]


# -- the text ---------------------------------------------------------------------------------


def sentence_pool() -> list[str]:
    """Every distinct sentence of 5-40 words in the demo conversations and the long
    conversations, sorted (so the pool never depends on file order)."""
    texts: list[str] = []
    for root in _TEXT_SOURCES:
        for path in sorted(root.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    texts.append(node.value)
        for path in sorted(root.glob("*.jsonl")):
            for line in path.read_text().splitlines():
                if line.strip():
                    texts.append(str(json.loads(line).get("text", "")))
    found: set[str] = set()
    for text in texts:
        if "{" in text or "```" in text or "$ " in text:
            continue  # code and shell output read nothing like prose
        for m in _SENTENCE.finditer(text):
            s = " ".join(m.group(0).split())
            if 5 <= len(s.split()) <= 40 and sum(c.isalpha() for c in s) > len(s) * 0.6:
                found.add(s)
    return sorted(found)


def pool_vectors(sentences: list[str], cache_dir: Path, progress: Progress = _noop) -> np.ndarray:
    """The pool's MiniLM vectors, computed once and cached by the pool's content."""
    digest = hashlib.sha256(json.dumps([SPACE, sentences]).encode()).hexdigest()[:16]
    path = cache_dir / f"pool-{digest}.npy"
    if path.exists():
        return np.load(path)
    from memory_pipeline.embedding.minilm import get_minilm

    progress(f"embedding {len(sentences):,} pool sentences with the offline MiniLM (cached)")
    vectors = get_minilm().embed(sentences).astype(np.float32)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


# -- generation -------------------------------------------------------------------------------


@dataclass
class _Rows:
    tasks: list[tuple] = field(default_factory=list)
    turns: list[tuple] = field(default_factory=list)
    memories: list[tuple] = field(default_factory=list)
    segments: list[tuple] = field(default_factory=list)
    provenance: list[tuple] = field(default_factory=list)
    cursors: list[tuple] = field(default_factory=list)
    passages: list[tuple] = field(default_factory=list)
    passage_vectors: list[tuple[uuid.UUID, np.ndarray, str]] = field(default_factory=list)
    # (passage, piece number, vector, sha): each message of a whole-turn passage (sql/024)
    piece_vectors: list[tuple[uuid.UUID, int, np.ndarray, str]] = field(default_factory=list)
    memory_vectors: list[tuple[uuid.UUID, np.ndarray, str]] = field(default_factory=list)


@dataclass
class _Turn:
    id: uuid.UUID
    ordinal: int
    prompt_speaker: str | None
    prompt: str
    outcome_speaker: str | None
    outcome: str
    at: datetime
    sentences: list[int]
    prompt_sentences: int  # the first this many of `sentences` are the prompt's

    @property
    def text(self) -> str:
        return turn_text(self.prompt_speaker, self.prompt, self.outcome_speaker, self.outcome)

    def pieces(self) -> list[list[int]]:
        """The sentences of each of its messages (turn_messages: none without an answer)."""
        split = self.prompt_sentences
        return [self.sentences[:split], self.sentences[split:]][: 2 if self.outcome else 1]


class _Generator:
    def __init__(self, scale: int, seed: int, pool: list[str], vectors: np.ndarray) -> None:
        self.scale = scale
        self.rng = random.Random(seed)
        self.pool = pool
        self.vectors = vectors
        self.rows = _Rows()
        self.rare: list[str] = []
        self.memories = 0

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def sentences(self, lo: int, hi: int) -> list[int]:
        return [self.rng.randrange(len(self.pool)) for _ in range(self.rng.randint(lo, hi))]

    def prose(self, idx: list[int], project: str) -> str:
        parts = [self.pool[i] for i in idx]
        roll = self.rng.random()
        if roll < 0.12:
            parts.insert(0, f"In {project}:")
        elif roll < 0.2:
            term = self.rare_term()
            parts.append(
                self.rng.choice(("See {}.", "It failed with {}.", "Tracked as {}.")).format(term)
            )
        return " ".join(parts)

    def rare_term(self) -> str:
        kind = self.rng.randrange(3)
        n = self.rng.randrange(1000, 100000)
        term = (f"E{n}", f"TICKET-{n}", f"module_{n}.py")[kind]
        if len(self.rare) < 2000:
            self.rare.append(term)
        return term

    def vector(self, idx: list[int]) -> np.ndarray:
        v = self.vectors[idx].sum(axis=0)
        return v / (np.linalg.norm(v) or 1.0)

    def generate(self) -> None:
        while self.memories < self.scale:
            self.task()

    def task(self) -> None:
        rng = self.rng
        source = rng.choices([s for s, _ in SOURCES], [w for _, w in SOURCES])[0]
        project = rng.choice(PROJECTS)
        started = CORPUS_END - timedelta(seconds=rng.randrange(CORPUS_DAYS * 86400))
        task_id = self.uuid()
        title_idx = rng.randrange(len(self.pool))
        title = _trim(self.pool[title_idx], 70)
        people = source == "chat_import" and rng.random() < 0.4
        speakers = (rng.choice(("Mara", "Jonas", "Ines")), "Kofi") if people else (None, None)
        turns: list[_Turn] = []
        at = started
        for ordinal in range(rng.randint(2, 8)):
            p_idx, o_idx = self.sentences(1, 2), self.sentences(1, 4)
            turns.append(
                _Turn(
                    self.uuid(),
                    ordinal,
                    speakers[0],
                    self.prose(p_idx, project),
                    speakers[1],
                    self.prose(o_idx, project),
                    at,
                    p_idx + o_idx,
                    len(p_idx),
                )
            )
            at += timedelta(seconds=rng.randrange(60, 1800))
        day = started.date()
        native_id = str(self.uuid()) if source != "chat_import" else f"chat-{task_id.hex[:12]}"
        self.rows.tasks.append(
            (
                task_id,
                source,
                native_id,
                title,
                "bench",
                started,
                day,
                Jsonb({"cwd": f"/home/dev/{project}"}),
                f"/bench/{source}/{native_id}.jsonl",
                "bench_generated",
                len(turns),
                turns[-1].at,
            )
        )
        for t in turns:
            self.rows.turns.append(
                (
                    t.id,
                    task_id,
                    t.ordinal,
                    f"turn-{t.id.hex[:8]}",
                    t.prompt,
                    t.outcome,
                    t.prompt_speaker,
                    t.outcome_speaker,
                    t.at,
                    t.at + timedelta(seconds=20),
                    [f"msg-{t.id.hex[:8]}-p", f"msg-{t.id.hex[:8]}-o"],
                    text_sha256(t.prompt + "\x00" + t.outcome),
                )
            )
        self.rows.cursors.append((task_id, turns[-1].ordinal))
        i = 0
        while i < len(turns) and self.memories < self.scale:
            n = rng.randint(1, 3)
            self.segment(task_id, source, title, day, project, turns[i : i + n])
            i += n

    def segment(
        self,
        task_id: uuid.UUID,
        source: str,
        task_title: str,
        day: date,
        project: str,
        turns: list[_Turn],
    ) -> None:
        rng = self.rng
        seg_project = project if rng.random() < 0.85 else None
        seg_title = _trim(turns[0].prompt, 80)
        content = "\n\n".join(
            f"{t.prompt_speaker or 'User'}: {t.prompt}\n{t.outcome_speaker or 'Agent'}: {t.outcome}"
            for t in turns
        )[: tuning.SEGMENT_CONTENT_MAX_CHARS]
        segment_id = self.uuid()
        memory_id = self.memory(
            "segment",
            seg_title,
            content,
            source,
            task_title,
            seg_title,
            seg_project,
            day,
            turns[-1].at,
            {"task_title": task_title},
            [],
        )
        self.rows.segments.append(
            (segment_id, task_id, turns[0].ordinal, turns[-1].ordinal, seg_title, memory_id)
        )
        for t in turns:
            self.rows.provenance.append((memory_id, t.id, segment_id, task_id, "segment"))
        self.passages(memory_id, "segment", seg_title, content, [], [(t.text, t) for t in turns])
        for kind, p in (("decision", 0.45), ("insight", 0.35), ("correction_episode", 0.15)):
            if self.memories >= self.scale or rng.random() >= p:
                continue
            if kind == "correction_episode" and len(turns) < 2:
                continue
            self.derived(
                kind, task_id, segment_id, source, task_title, seg_title, seg_project, day, turns
            )

    def derived(
        self,
        kind: str,
        task_id: uuid.UUID,
        segment_id: uuid.UUID,
        source: str,
        task_title: str,
        seg_title: str,
        project: str | None,
        day: date,
        turns: list[_Turn],
    ) -> None:
        rng = self.rng
        idx = self.sentences(1, 3)
        if kind == "correction_episode":
            corrected, correcting = turns[0], turns[1]
            title = _trim("Correction: " + self.pool[idx[0]], 80)
            content = f"Agent did: {self.pool[idx[0]]}\nUser expected instead: " + " ".join(
                self.pool[i] for i in idx[1:] or idx
            )
            links = [(corrected, "corrected"), (correcting, "correcting")]
            metadata: dict[str, object] = {"attributed_to": "user", "steering_rule": False}
            tags = ["correction"]
        else:
            support = rng.choice(turns)
            title = _trim(self.pool[idx[0]], 80)
            content = self.prose(idx, project or rng.choice(PROJECTS))
            links = [(support, "supports")]
            metadata = {}
            if rng.random() < 0.3:
                word = rng.choice([w for w in title.split() if len(w) > 3] or ["this"])
                metadata["questions"] = [f"What did we settle about {word.strip('.,;:')}?"]
            tags = []
        memory_id = self.memory(
            kind,
            title,
            content,
            source,
            task_title,
            seg_title,
            project,
            day,
            max(t.at for t, _ in links),
            metadata,
            tags,
        )
        for t, role in links:
            self.rows.provenance.append((memory_id, t.id, segment_id, task_id, role))
        questions = " ".join(metadata.get("questions", []))  # type: ignore[arg-type]
        turn_ids = sorted((t for t, _ in links), key=lambda t: (t.ordinal, str(t.id)))
        self.passages(
            memory_id,
            kind,
            title,
            content,
            list(metadata.get("questions", [])),  # type: ignore[call-overload]
            [(content, None)],
            heading=title,
            questions=questions,
            vector_idx=idx,
            turn_ids=[t.id for t in turn_ids],
        )

    def memory(
        self,
        kind: str,
        title: str,
        content: str,
        source: str,
        task_title: str,
        seg_title: str,
        project: str | None,
        day: date,
        happened: datetime,
        metadata: dict[str, object],
        tags: list[str],
    ) -> uuid.UUID:
        rng = self.rng
        memory_id = self.uuid()
        status = "active"
        roll = rng.random()
        if roll < 0.02:
            status = "superseded"
        elif roll < 0.03:
            status = "archived"
        accessed = rng.random() < 0.2
        text = content if kind == "segment" else f"{title}. {content}"
        self.rows.memories.append(
            (
                memory_id,
                kind,
                title,
                content,
                tags,
                source,
                Jsonb(metadata),
                status,
                classify.mem_class(kind, text),
                project,
                classify.encoding_context(source, task_title, seg_title, project),
                classify.depth_score(kind, text),
                day,
                happened,
                happened,
                rng.randrange(1, 20) if accessed else 0,
                happened + timedelta(days=rng.randrange(1, 60)) if accessed else None,
            )
        )
        self.memories += 1
        return memory_id

    def passages(
        self,
        memory_id: uuid.UUID,
        kind: str,
        title: str,
        content: str,
        question_list: list[str],
        units: list[tuple[str, _Turn | None]],
        *,
        heading: str = "",
        questions: str = "",
        vector_idx: list[int] | None = None,
        turn_ids: list[uuid.UUID] | None = None,
    ) -> None:
        """One passage per turn of a segment, one per other memory (PASSAGE_MAX_TURNS = 1),
        with the source hash the pipeline computes, so its next run leaves them as they are."""
        all_turns = turn_ids if turn_ids is not None else [t.id for _, t in units if t]
        key = [
            tuning.PASSAGE_SPLITTER_VERSION,
            tuning.PASSAGE_MAX_TOKENS,
            tuning.PASSAGE_MAX_TURNS,
            kind,
            title,
            content,
            question_list,
            [str(t) for t in all_turns],
        ]
        source_sha = hashlib.sha256(json.dumps(key).encode()).hexdigest()
        total = np.zeros(DIMS, dtype=np.float32)
        for ordinal, (text, turn) in enumerate(units):
            pid = self.uuid()
            p_turns = [turn.id] if turn else list(all_turns)
            whole = kind == "segment" and turn is not None and text == turn.text
            self.rows.passages.append(
                (pid, memory_id, ordinal, heading, questions, text, p_turns, whole, source_sha)
            )
            vec = self.vector(turn.sentences if turn else vector_idx or [0])
            total += vec
            self.rows.passage_vectors.append((pid, vec, text_sha256(embed_text(heading, text))))
            if whole and len(pieces := turn.pieces()) > 1:  # type: ignore[union-attr]
                sha = text_sha256(turn.text)  # type: ignore[union-attr]  # as store.py hashes it
                for n, sentences in enumerate(pieces):
                    self.rows.piece_vectors.append((pid, n, self.vector(sentences), sha))
        mem_vec = total / (np.linalg.norm(total) or 1.0)
        self.rows.memory_vectors.append(
            (memory_id, mem_vec, text_sha256(embedding_text(title, content)))
        )


def _trim(text: str, n: int) -> str:
    text = text.strip().rstrip(".")
    return text if len(text) <= n else text[: n - 1].rsplit(" ", 1)[0] + "…"


# -- loading ----------------------------------------------------------------------------------

_COPIES = (
    (
        "captured_tasks",
        "id, source, native_id, title, title_source, started_at, partition_day, native_context,"
        " source_path, ownership_reason, turn_count, last_turn_appended_at",
        "tasks",
    ),
    (
        "agent_turns",
        "id, task_id, ordinal, native_turn_id, prompt, outcome, prompt_speaker, outcome_speaker,"
        " started_at, completed_at, native_message_ids, content_sha256",
        "turns",
    ),
    (
        "memories",
        "id, type, title, content, tags, source_type, metadata, status, mem_class, project,"
        " encoding_context, depth_score, partition_day, created_at, updated_at, access_count,"
        " last_accessed_at",
        "memories",
    ),
    ("topic_segments", "id, task_id, first_ordinal, last_ordinal, title, memory_id", "segments"),
    ("memory_provenance", "memory_id, turn_id, segment_id, task_id, role", "provenance"),
    ("semantic_cursors", "task_id, last_ordinal", "cursors"),
)
_LOADED_TABLES = (
    "passage_postings",
    "captured_tasks",
    "agent_turns",
    "memories",
    "topic_segments",
    "memory_provenance",
    "memory_passages",
    "memory_embeddings",
    "passage_embeddings",
)


_KEYWORD_HOME: list[Path] = []


def keyword_home() -> Path:
    """The keyword index's home for this process's benchmark corpora: a temporary directory
    (never MEMORY_HOME), removed at exit; serving in this process reads it."""
    if not _KEYWORD_HOME:
        home = Path(tempfile.mkdtemp(prefix="mp-bench-keyword-"))
        atexit.register(shutil.rmtree, home, True)
        keyword_index.use_home(home)
        _KEYWORD_HOME.append(home)
    return _KEYWORD_HOME[0]


def load_corpus(app_url: str, scale: int, seed: int = 0, progress: Progress = _noop) -> CorpusInfo:
    """Generate `scale` memories (and everything behind them) and bulk-load them into an empty,
    migrated database; then rebuild indexes and refresh BM25 statistics as the pipeline does."""
    started = time.monotonic()
    timings: dict[str, float] = {}
    all_sentences = sentence_pool()
    # A small corpus draws on fewer sentences (spread over the whole pool), so a tiny run
    # embeds little; at 100K every sentence is used.
    n = min(len(all_sentences), max(40, scale // 16))
    step = len(all_sentences) / n
    pool = [all_sentences[int(i * step)] for i in range(n)]
    cache = Settings.from_env().memory_home / "bench-cache"
    t = time.monotonic()
    vectors = pool_vectors(pool, cache, progress)
    timings["pool embedding"] = time.monotonic() - t

    t = time.monotonic()
    progress(f"generating {scale:,} memories from {len(pool):,} sentences (seed {seed})")
    gen = _Generator(scale, seed, pool, vectors)
    gen.generate()
    rows = gen.rows
    timings["generation"] = time.monotonic() - t

    with connect(app_url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        conn.execute("SET maintenance_work_mem = '1GB'")
        t = time.monotonic()
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " AND tablename = ANY(%s) AND (indexdef ~ 'USING (gin|hnsw)'"
            "  OR indexname = 'passage_postings_impact_idx')",
            [list(_LOADED_TABLES)],
        ).fetchall()
        for name, _ in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        with conn.transaction():
            for table, columns, attr in _COPIES:
                data = getattr(rows, attr)
                progress(f"COPY {len(data):,} rows into {table}")
                _copy(conn, table, columns, data)
            progress(f"COPY {len(rows.passages):,} rows into memory_passages")
            # Postings (sql/021) are built once, by the statistics refresh below, instead of
            # by the insert trigger with a mean length of 1 and then again.
            conn.execute("ALTER TABLE memory_passages DISABLE TRIGGER passage_postings_insert")
            _copy_passages(conn, rows.passages)
            conn.execute("ALTER TABLE memory_passages ENABLE TRIGGER passage_postings_insert")
            progress(
                f"COPY {len(rows.memory_vectors):,} memory and "
                f"{len(rows.passage_vectors):,} passage vectors"
            )
            _copy_vectors(conn, "memory_embeddings", "memory_id", rows.memory_vectors)
            _copy_vectors(conn, "passage_embeddings", "passage_id", rows.passage_vectors)
            _copy_vectors(conn, "passage_piece_embeddings", "passage_id, piece", rows.piece_vectors)
            conn.execute(
                "UPDATE embedding_spaces SET serving = (name = %s),"
                " completed_at = CASE WHEN name = %s THEN now() END",
                [SPACE, SPACE],
            )
        timings["copy"] = time.monotonic() - t
        t = time.monotonic()
        progress("refreshing BM25 statistics (refresh_bm25_statistics)")
        refresh_bm25_statistics(conn)
        timings["statistics"] = time.monotonic() - t
        t = time.monotonic()
        for name, definition in indexes:
            progress(f"building index {name}")
            conn.execute(definition)
        timings["indexes"] = time.monotonic() - t
        conn.execute("ANALYZE")
        t = time.monotonic()
        progress("building the keyword index (refresh_keyword_index)")
        refresh_keyword_index(conn, keyword_home())
        timings["keyword index"] = time.monotonic() - t
    days = [r[6] for r in rows.tasks]
    info = CorpusInfo(
        memories=len(rows.memories),
        passages=len(rows.passages),
        tasks=len(rows.tasks),
        turns=len(rows.turns),
        projects=PROJECTS,
        sentences=pool,
        rare_terms=gen.rare,
        first_day=min(days),
        last_day=max(days),
        seconds=time.monotonic() - started,
        timings=timings,
    )
    progress(
        f"loaded {info.memories:,} memories, {info.passages:,} passages, {info.tasks:,} tasks,"
        f" {info.turns:,} turns in {info.seconds:,.0f} s ("
        + ", ".join(f"{k} {v:,.0f} s" for k, v in timings.items())
        + ")"
    )
    return info


def _copy(conn: psycopg.Connection, table: str, columns: str, data: list[tuple]) -> None:
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in data:
            copy.write_row(row)


def _copy_passages(conn: psycopg.Connection, data: list[tuple]) -> None:
    """Through a staging table, so the full-text entry is computed by the same SQL expression
    the pipeline uses (embedding/passages.py `_write`)."""
    conn.execute(
        "CREATE TEMP TABLE bench_passages (id uuid, memory_id uuid, ordinal int, heading text,"
        " questions text, text text, turn_ids uuid[], whole_turns boolean, source_sha256 text)"
        " ON COMMIT DROP"
    )
    _copy(
        conn,
        "bench_passages",
        "id, memory_id, ordinal, heading, questions, text, turn_ids, whole_turns, source_sha256",
        data,
    )
    conn.execute(
        "INSERT INTO memory_passages (id, memory_id, ordinal, heading, text, turn_ids,"
        " whole_turns, search_vector, source_sha256, cut_for)"
        " SELECT id, memory_id, ordinal, heading, text, turn_ids, whole_turns,"
        " setweight(to_tsvector('english', heading), 'A')"
        " || setweight(to_tsvector('english', questions), 'A')"
        " || setweight(to_tsvector('english', text), 'B'), source_sha256, %s"
        " FROM bench_passages",
        [SPACE],
    )


def _copy_vectors(conn: psycopg.Connection, table: str, key: str, data: Sequence[tuple]) -> None:
    """Binary COPY of (key..., vector, sha) rows: formatting 100K x 384 floats as text would
    dominate the load. `key` names the key columns (a uuid, then an integer if two)."""
    types = ["uuid", "integer"][: key.count(",") + 1]
    with (
        conn.cursor() as cur,
        cur.copy(
            f"COPY {table} ({key}, space, embedding, content_sha256) FROM STDIN (FORMAT BINARY)"
        ) as copy,
    ):
        copy.set_types([*types, "text", "vector", "text"])
        for *ident, vec, sha in data:
            copy.write_row((*ident, SPACE, vec, sha))
