"""One entity run over a window of days: find what the window's memories and turns name, resolve
it to nodes (identifiers first, aliases second), and write the mentions.

Resolution, strongest first (seed 003):
1. a Found with identifiers (a repository URL, an e-mail, a path, a speaker's name...) is the
   node holding any of them; a new node otherwise. Two nodes found to share an identifier are
   merged into the older one (its mentions, aliases and identifiers move).
2. a name found by its phrasing, or proposed by a model (`named`, ollama) is the one node with
   that alias; when two nodes hold the alias the mention is not made and the ambiguity is kept
   (`entity_ambiguities`); with no such node a new one is made, keyed `<type>:<name>`.
3. the alias scan: every known alias in the text is a mention of its node when only one node
   holds it, an ambiguity otherwise. A person's, place's or organisation's alias only matches
   a capitalised span (a name, not the word "will" for Will).

Idempotent: the window's mentions are recomputed from its text and diffed against the stored
ones, so a second run writes no row. A model backend's accepted mentions are kept per memory
text (`entity_scans`): a re-run asks the model nothing for text it already read. Nodes left with
no mention anywhere (after a forget, or a text whose name went) are removed. The extraction
reads text only, never vectors, so a switch of the serving space changes none of it.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from uuid import UUID

import psycopg
from pydantic import BaseModel

from memory_pipeline import tuning
from memory_pipeline.entities import extract
from memory_pipeline.entities.extract import Found, normal
from memory_pipeline.entities.models import Backend, Item, Proposal

# Names must match capitalised; paths, repositories and hosts match as written.
NAME_TYPES = ("person", "place", "organisation")
# Aliases of these types are scanned in text; packages and tools are only found by their
# identifiers (their names are ordinary words: "requests", "make").
SCANNED_TYPES = ("person", "place", "organisation", "project", "repository", "file", "host")


class EntityReport(BaseModel):
    backend: str
    memories: int = 0
    turns: int = 0
    nodes_added: int = 0
    nodes_merged: int = 0
    nodes_removed: int = 0
    mentions_added: int = 0
    mentions_removed: int = 0
    turn_mentions_added: int = 0
    turn_mentions_removed: int = 0
    ambiguities: int = 0  # stored for the window after the run
    proposals: dict[str, int] = {}  # model backend: staged precheck outcomes
    failures: list[str] = []
    live: dict[str, int] = {}  # nodes of each type in the whole corpus after the run

    def metadata(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "memories_read": self.memories,
            "turns_read": self.turns,
            "nodes_added": self.nodes_added,
            "nodes_merged": self.nodes_merged,
            "nodes_removed": self.nodes_removed,
            "mentions_added": self.mentions_added,
            "mentions_removed": self.mentions_removed,
            "turn_mentions_added": self.turn_mentions_added,
            "turn_mentions_removed": self.turn_mentions_removed,
            "ambiguous_aliases_kept": self.ambiguities,
            **{f"proposals_{k}": v for k, v in sorted(self.proposals.items())},
            "model_failures": len(self.failures),
            **{f"live_{t}": n for t, n in sorted(self.live.items())},
        }


@dataclass
class _Mention:
    extractor: str
    confidence: float
    surface: str


@dataclass
class _Wanted:
    mentions: dict[UUID, _Mention] = field(default_factory=dict)
    ambiguous: dict[str, list[UUID]] = field(default_factory=dict)

    def add(self, entity: UUID, found: Found | _Mention) -> None:
        conf = found.confidence
        have = self.mentions.get(entity)
        if have is None or conf > have.confidence:
            self.mentions[entity] = _Mention(found.extractor, conf, found.surface[:200])


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def extract_window(
    conn: psycopg.Connection,
    start: date,
    end: date,
    backend: Backend | None = None,
    progress: Callable[[str], None] | None = None,
) -> EntityReport:
    say = progress or (lambda _msg: None)
    report = EntityReport(backend=backend.name if backend else "offline")
    memories = _window_memories(conn, start, end)
    turns = _window_turns(conn, start, end)
    report.memories, report.turns = len(memories), len(turns)
    say(f"entities: {len(memories)} memories and {len(turns)} turns to read")
    with conn.transaction():
        registry = _Registry(conn, report)
        wanted_m: dict[UUID, _Wanted] = {m.id: _Wanted() for m in memories}
        wanted_t: dict[UUID, _Wanted] = {t.id: _Wanted() for t in turns}
        names: list[tuple[_Wanted, Found]] = []
        for items, wanted in ((memories, wanted_m), (turns, wanted_t)):
            for item in items:
                w = wanted[item.id]
                for found in _deterministic(item):
                    w.add(registry.resolve(found), found)
                names.extend((w, f) for f in extract.named(item.text))
        kept_model = _model_pass(conn, memories, backend, report, names, wanted_m)
        for w, found in names:
            ids = registry.by_name(found)
            if len(ids) == 1:
                w.add(ids[0], found)
            elif ids:
                w.ambiguous[normal(found.name)] = ids
        aliases = registry.aliases()
        for items, wanted in ((memories, wanted_m), (turns, wanted_t)):
            for item in items:
                _scan(item.text, aliases, wanted[item.id])
        _write_memory_mentions(conn, wanted_m, kept_model, report)
        _write_turn_mentions(conn, wanted_t, report)
        report.nodes_removed = prune_orphans(conn)
        report.ambiguities = conn.execute(
            "SELECT count(*) FROM entity_ambiguities WHERE memory_id = ANY(%s)",
            [list(wanted_m)],
        ).fetchone()[0]  # type: ignore[index]
    report.live = live_counts(conn)
    say(
        f"entities: {report.mentions_added} mentions added, {report.mentions_removed} removed, "
        f"{report.nodes_added} nodes added, {report.ambiguities} ambiguous aliases kept"
    )
    return report


def _deterministic(item: Item) -> list[Found]:
    out = extract.identifiers(item.text)
    out.extend(extract.software(item.text))
    for speaker in item.speakers:
        if (found := extract.speaker_person(speaker)) is not None:
            out.append(found)
    if item.project:
        key = normal(item.project)
        out.append(
            Found(
                "project",
                item.project,
                item.project,
                "project",
                (f"project:{key}",),
                (item.project,),
            )
        )
    return out


def _scan(text: str, aliases: dict[str, list[tuple[UUID, str]]], wanted: _Wanted) -> None:
    for alias, surface in extract.alias_spans(text, aliases):
        nodes = aliases[alias]
        if any(cat in NAME_TYPES for _, cat in nodes) and not surface[:1].isupper():
            nodes = [(i, c) for i, c in nodes if c not in NAME_TYPES]
        ids = sorted({i for i, _ in nodes})
        if len(ids) == 1:
            wanted.add(ids[0], _Mention("alias", tuning.ENTITY_CONFIDENCE["alias"], surface))
        elif ids and not any(i in wanted.mentions for i in ids):
            wanted.ambiguous.setdefault(alias, ids)


def _model_pass(
    conn: psycopg.Connection,
    memories: Sequence[Item],
    backend: Backend | None,
    report: EntityReport,
    names: list[tuple[_Wanted, Found]],
    wanted: dict[UUID, _Wanted],
) -> set[UUID]:
    """Ask the model about memories whose text it has not read; its proposals go through the
    staged precheck (models.precheck) and the accepted ones resolve like names. Returns the
    memories whose earlier accepted model mentions stay as they are."""
    if backend is None:
        return set()
    scanned = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT memory_id, content_sha256 FROM entity_scans WHERE backend = %s"
            " AND memory_id = ANY(%s)",
            [backend.name, [m.id for m in memories]],
        )
    }
    todo = [m for m in memories if scanned.get(m.id) != text_sha(m.text)]
    kept = {m.id for m in memories} - {m.id for m in todo}
    if not todo:
        return kept
    result = backend.propose(todo)
    report.failures = result.failures
    outcomes: Counter[str] = Counter()
    by_id = {m.id: m for m in todo}
    for proposal in result.proposals:
        item = by_id.get(proposal.memory_id)
        verdict = precheck(proposal, item)
        outcomes[verdict] += 1
        if verdict == "accepted" and item is not None:
            names.append(
                (
                    wanted[item.id],
                    Found(
                        proposal.type,
                        proposal.name,
                        proposal.name,
                        "ollama",
                        (),
                        (proposal.name,),
                        score=proposal.confidence,
                    ),
                )
            )
    report.proposals = dict(outcomes)
    done = [m for m in todo if m.id not in result.failed]
    conn.execute(
        "DELETE FROM memory_entities WHERE extractor = %s AND memory_id = ANY(%s)",
        ["ollama", [m.id for m in done]],
    )
    for m in done:
        conn.execute(
            "INSERT INTO entity_scans (memory_id, backend, content_sha256) VALUES (%s, %s, %s)"
            " ON CONFLICT (memory_id, backend) DO UPDATE SET content_sha256 ="
            " excluded.content_sha256, scanned_at = now()",
            [m.id, backend.name, text_sha(m.text)],
        )
    return kept | {m.id for m in todo if m.id in result.failed}


def precheck(proposal: Proposal, item: Item | None) -> str:
    """The staged precheck of a model's proposal: what a model says becomes a mention only when
    it names a type of the closed set, is sure enough, is written in the memory it came from
    (no invented names), and is a name rather than a role or a pronoun."""
    if item is None:
        return "rejected_unknown_memory"
    if proposal.type not in tuning.ENTITY_TYPES:
        return "rejected_type"
    if proposal.confidence < tuning.ENTITY_OLLAMA_MIN_CONFIDENCE:
        return "rejected_unsure"
    key = normal(proposal.name)
    if len(key) < tuning.ENTITY_ALIAS_MIN_CHARS or key in tuning.ENTITY_ROLE_SPEAKERS:
        return "rejected_not_a_name"
    if key in extract.NOT_NAMES:
        return "rejected_not_a_name"
    if key not in normal(item.text):
        return "rejected_not_in_text"
    return "accepted"


class _Registry:
    """Nodes, identifiers and aliases as this run sees them (read once, kept up to date)."""

    def __init__(self, conn: psycopg.Connection, report: EntityReport) -> None:
        self.conn = conn
        self.report = report
        self.ids: dict[str, UUID] = dict(
            conn.execute("SELECT identifier, entity_id FROM entity_identifiers").fetchall()
        )
        self.alias: dict[str, dict[UUID, str]] = defaultdict(dict)
        for alias, entity, category in conn.execute(
            "SELECT a.alias, a.entity_id, e.category FROM entity_aliases a"
            " JOIN entities e ON e.id = a.entity_id"
        ):
            self.alias[alias][entity] = category
        self.created: dict[UUID, object] = dict(
            conn.execute("SELECT id, (created_at, id::text) FROM entities").fetchall()
        )

    def resolve(self, found: Found) -> UUID:
        holders = sorted({self.ids[i] for i in found.identifiers if i in self.ids}, key=str)
        if not holders:
            entity = self._create(found)
        else:
            entity = min(holders, key=lambda h: self.created[h])  # type: ignore[arg-type,return-value]
            for other in holders:
                if other != entity:
                    self._merge(other, entity)
        for ident in found.identifiers:
            if ident not in self.ids:
                self.conn.execute(
                    "INSERT INTO entity_identifiers (identifier, entity_id) VALUES (%s, %s)",
                    [ident, entity],
                )
                self.ids[ident] = entity
        if "@" not in found.name and found.category == "person":
            # a person first known by an address or handle takes the name once one is given
            self.conn.execute(
                "UPDATE entities SET name = %s, updated_at = now() WHERE id = %s"
                " AND name LIKE '%%@%%'",
                [found.name[:200], entity],
            )
        self._aliases(entity, found)
        return entity

    def by_name(self, found: Found) -> list[UUID]:
        """The nodes of this type holding the name as an alias; a new node when none does."""
        key = normal(found.name)
        known = self.alias.get(key, {})
        holders = sorted((e for e, cat in known.items() if cat == found.category), key=str)
        if holders:
            return holders
        if any(cat not in NAME_TYPES for cat in known.values()):
            return []  # "moved to Postgres": a name already known as a package, tool, project...
        return [self.resolve(_keyed(found))]

    def aliases(self) -> dict[str, list[tuple[UUID, str]]]:
        return {
            a: [(e, c) for e, c in nodes.items() if c in SCANNED_TYPES]
            for a, nodes in self.alias.items()
            if any(c in SCANNED_TYPES for c in nodes.values())
        }

    def _create(self, found: Found) -> UUID:
        row = self.conn.execute(
            "INSERT INTO entities (category, name, source_type) VALUES (%s, %s, %s)"
            " RETURNING id, (created_at, id::text)",
            [found.category, found.name[:200], found.extractor],
        ).fetchone()
        assert row is not None
        self.created[row[0]] = row[1]
        self.report.nodes_added += 1
        return row[0]

    def _aliases(self, entity: UUID, found: Found) -> None:
        category = self.conn.execute(
            "SELECT category FROM entities WHERE id = %s", [entity]
        ).fetchone()[0]  # type: ignore[index]
        for alias in {normal(a) for a in found.aliases}:
            if len(alias) < tuning.ENTITY_ALIAS_MIN_CHARS or entity in self.alias.get(alias, {}):
                continue
            self.conn.execute(
                "INSERT INTO entity_aliases (alias, entity_id) VALUES (%s, %s)"
                " ON CONFLICT DO NOTHING",
                [alias, entity],
            )
            self.alias[alias][entity] = category

    def _merge(self, gone: UUID, into: UUID) -> None:
        """Two nodes share an identifier: they are one thing. Everything moves to `into`."""
        c = self.conn
        c.execute("UPDATE entity_identifiers SET entity_id = %s WHERE entity_id = %s", [into, gone])
        for table, key in (("memory_entities", "memory_id"), ("turn_entities", "turn_id")):
            c.execute(
                f"INSERT INTO {table} SELECT * FROM ("
                f" SELECT {key}, %s::uuid AS entity_id,"
                + (" relation," if table == "memory_entities" else "")
                + f" extractor, confidence, surface FROM {table} WHERE entity_id = %s) s"
                " ON CONFLICT DO NOTHING",
                [into, gone],
            )
        c.execute(
            "INSERT INTO entity_aliases SELECT alias, %s FROM entity_aliases WHERE entity_id = %s"
            " ON CONFLICT DO NOTHING",
            [into, gone],
        )
        c.execute("DELETE FROM entities WHERE id = %s", [gone])
        self.ids = {i: (into if e == gone else e) for i, e in self.ids.items()}
        for nodes in self.alias.values():
            if gone in nodes:
                nodes.setdefault(into, nodes.pop(gone))
        self.report.nodes_merged += 1


def _keyed(found: Found) -> Found:
    """A name with no identifier becomes a node keyed by its type and name."""
    return Found(
        found.category,
        found.name,
        found.surface,
        found.extractor,
        (f"{found.category}:{normal(found.name)}",),
        (found.name,),
        score=found.score,
    )


def _window_memories(conn: psycopg.Connection, start: date, end: date) -> list[Item]:
    rows = conn.execute(
        """
        SELECT m.id, m.title || E'\\n' || m.content, m.project,
               coalesce(array_agg(DISTINCT s.sp) FILTER (WHERE s.sp IS NOT NULL), '{}')
        FROM memories m
        LEFT JOIN LATERAL (
            SELECT unnest(ARRAY[t.prompt_speaker, t.outcome_speaker]) AS sp
            FROM memory_provenance p JOIN agent_turns t ON t.id = p.turn_id
            WHERE p.memory_id = m.id AND p.role = 'segment'
        ) s ON true
        WHERE m.partition_day >= %s AND m.partition_day < %s
        GROUP BY m.id ORDER BY m.created_at, m.id
        """,
        [start, end],
    ).fetchall()
    return [Item(r[0], r[1], tuple(sorted(r[3])), r[2]) for r in rows]


def _window_turns(conn: psycopg.Connection, start: date, end: date) -> list[Item]:
    rows = conn.execute(
        "SELECT t.id, t.prompt || E'\\n' || t.outcome, t.prompt_speaker, t.outcome_speaker"
        " FROM agent_turns t JOIN captured_tasks k ON k.id = t.task_id"
        " WHERE k.partition_day >= %s AND k.partition_day < %s ORDER BY k.started_at, t.ordinal",
        [start, end],
    ).fetchall()
    return [Item(r[0], r[1], tuple(s for s in (r[2], r[3]) if s)) for r in rows]


def _write_memory_mentions(
    conn: psycopg.Connection,
    wanted: dict[UUID, _Wanted],
    kept_model: set[UUID],
    report: EntityReport,
) -> None:
    ids = list(wanted)
    have: dict[tuple[UUID, UUID], tuple[str, float, str | None]] = {
        (r[0], r[1]): (r[2], r[3], r[4])
        for r in conn.execute(
            "SELECT memory_id, entity_id, extractor, confidence, surface FROM memory_entities"
            " WHERE relation = 'mentions' AND memory_id = ANY(%s)",
            [ids],
        )
    }
    want = {
        (m, e): (x.extractor, x.confidence, x.surface)
        for m, w in wanted.items()
        for e, x in w.mentions.items()
    }
    for key, value in have.items():
        # the model's accepted mention of text it already read (it is not asked again)
        kept = key[0] in kept_model and value[0] == "ollama"
        if kept and (key not in want or want[key][1] <= value[1]):
            want[key] = value
    gone = [k for k in have if k not in want]
    if gone:
        conn.execute(
            "DELETE FROM memory_entities WHERE relation = 'mentions' AND (memory_id, entity_id)"
            " IN (SELECT * FROM unnest(%s::uuid[], %s::uuid[]))",
            [[k[0] for k in gone], [k[1] for k in gone]],
        )
    for (m, e), (x, c, s) in want.items():
        if have.get((m, e)) == (x, c, s):
            continue
        conn.execute(
            "INSERT INTO memory_entities (memory_id, entity_id, relation, extractor, confidence,"
            " surface) VALUES (%s, %s, 'mentions', %s, %s, %s) ON CONFLICT (memory_id,"
            " entity_id, relation) DO UPDATE SET extractor = excluded.extractor,"
            " confidence = excluded.confidence, surface = excluded.surface",
            [m, e, x, c, s],
        )
        if (m, e) not in have:
            report.mentions_added += 1
    report.mentions_removed = len(gone)
    amb_have = {
        (r[0], r[1]): list(r[2])
        for r in conn.execute(
            "SELECT memory_id, alias, candidates FROM entity_ambiguities WHERE memory_id = ANY(%s)",
            [ids],
        )
    }
    amb_want = {
        (m, a): sorted(c, key=str) for m, w in wanted.items() for a, c in w.ambiguous.items()
    }
    for key in amb_have.keys() - amb_want.keys():
        conn.execute(
            "DELETE FROM entity_ambiguities WHERE memory_id = %s AND alias = %s", list(key)
        )
    for (m, a), cands in amb_want.items():
        if sorted(amb_have.get((m, a), []), key=str) != cands:
            conn.execute(
                "INSERT INTO entity_ambiguities (memory_id, alias, candidates) VALUES (%s, %s, %s)"
                " ON CONFLICT (memory_id, alias) DO UPDATE SET candidates = excluded.candidates",
                [m, a, cands],
            )


def _write_turn_mentions(
    conn: psycopg.Connection, wanted: dict[UUID, _Wanted], report: EntityReport
) -> None:
    have = {
        (r[0], r[1]): (r[2], r[3], r[4])
        for r in conn.execute(
            "SELECT turn_id, entity_id, extractor, confidence, surface FROM turn_entities"
            " WHERE turn_id = ANY(%s)",
            [list(wanted)],
        )
    }
    want = {
        (t, e): (x.extractor, x.confidence, x.surface)
        for t, w in wanted.items()
        for e, x in w.mentions.items()
    }
    gone = [k for k in have if k not in want]
    if gone:
        conn.execute(
            "DELETE FROM turn_entities WHERE (turn_id, entity_id)"
            " IN (SELECT * FROM unnest(%s::uuid[], %s::uuid[]))",
            [[k[0] for k in gone], [k[1] for k in gone]],
        )
    for (t, e), (x, c, s) in want.items():
        if have.get((t, e)) == (x, c, s):
            continue
        conn.execute(
            "INSERT INTO turn_entities (turn_id, entity_id, extractor, confidence, surface)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (turn_id, entity_id) DO UPDATE SET"
            " extractor = excluded.extractor, confidence = excluded.confidence,"
            " surface = excluded.surface",
            [t, e, x, c, s],
        )
        if (t, e) not in have:
            report.turn_mentions_added += 1
    report.turn_mentions_removed = len(gone)


def prune_orphans(conn: psycopg.Connection) -> int:
    """Remove nodes no memory and no turn mentions any more (their identifiers and aliases go
    with them). Called by every run and by a forget."""
    return conn.execute(
        "DELETE FROM entities e WHERE NOT EXISTS (SELECT 1 FROM memory_entities m"
        " WHERE m.entity_id = e.id) AND NOT EXISTS (SELECT 1 FROM turn_entities t"
        " WHERE t.entity_id = e.id)"
    ).rowcount


def live_counts(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT category, count(*) FROM entities GROUP BY 1").fetchall())
