"""What a forget removes, and removing it: the evidence closure, then a cascade over the catalog.

**Closure.** From the selected memories and tasks, repeated until nothing changes:
- a forgotten task takes all its turns;
- a forgotten topic segment memory takes the turns it is made of (its text is theirs);
- a memory goes when all of its evidence went: every turn it rests on (memory_provenance) is
  forgotten and every memory it was `derived_from` is forgotten (a decision distilled from a
  forgotten segment, a dream memory resting only on forgotten memories);
- a dream memory (source_type dream_cycle) goes when ANY memory it was `derived_from` goes: it is
  a synthesis that may quote the forgotten one word for word (the next dream run may derive
  it again from what stays); its candidate draft and passages go with it, and digests.py
  scrubs the digests that quoted it;
- a task whose every stored turn is forgotten is forgotten itself (its title and native context
  went with the turns' meaning; it is tombstoned like a selected one).
A distilled memory (decision, insight) forgotten alone takes nothing upward: the segment it was
distilled from stays until it is forgotten itself.

**Cascade.** The tables that refer to memories, agent_turns and captured_tasks are read from the
catalog (pg_constraint), not listed here, so tables other stages add later are covered as soon as
their migration runs. Every row that refers, directly or through other referring rows, to a
forgotten row is deleted explicitly, children before parents, and counted per table, whatever
the foreign key's ON DELETE says (NO ACTION rows such as dream_cycle_candidates are deleted too:
they are about the forgotten memory). Foreign keys declared ON DELETE SET NULL / SET DEFAULT are
honoured (the row stays, unlinked, counted as `table (unlinked)`); a memory whose `parent_id`
names a forgotten memory loses that link. A row that only existed to be linked through a deleted
row (an item whose join rows to memories all went, e.g. a briefing item, an entity or a dream
run left without candidates) is deleted as well when its link table is ON DELETE CASCADE to it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

ROOTS = ("memories", "agent_turns", "captured_tasks")
# Temp tables holding the closure: root table -> temp table of its forgotten ids.
_SETS = {"memories": "forget_m", "agent_turns": "forget_t", "captured_tasks": "forget_k"}
_DELETE_RULES = frozenset({"a", "r", "c"})  # no action, restrict, cascade: the row goes


@dataclass(frozen=True)
class ForeignKey:
    name: str
    child: str
    parent: str
    child_cols: tuple[str, ...]
    parent_cols: tuple[str, ...]
    on_delete: str  # pg_constraint.confdeltype: a, r, c, n, d
    nullable: bool  # every child column nullable


@dataclass
class Closure:
    memories: int = 0
    turns: int = 0
    tasks: int = 0
    turn_hashes: list[str] = field(default_factory=list)
    task_keys: list[tuple[str, str]] = field(default_factory=list)


def foreign_keys(conn: psycopg.Connection) -> list[ForeignKey]:
    """Every foreign key between tables of the public schema, from the catalog."""
    rows = conn.execute(
        """
        SELECT c.conname, cl.relname, pl.relname, c.confdeltype::text,
               array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
                     JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
                     ORDER BY k.o),
               array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, o)
                     JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n
                     ORDER BY k.o),
               (SELECT bool_and(NOT a.attnotnull) FROM unnest(c.conkey) k(n)
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n)
        FROM pg_constraint c
        JOIN pg_class cl ON cl.oid = c.conrelid
        JOIN pg_class pl ON pl.oid = c.confrelid
        WHERE c.contype = 'f' AND cl.relnamespace = 'public'::regnamespace
          AND pl.relnamespace = 'public'::regnamespace
        ORDER BY cl.relname, c.conname
        """
    ).fetchall()
    return [ForeignKey(r[0], r[1], r[2], tuple(r[4]), tuple(r[5]), r[3], bool(r[6])) for r in rows]


def create_sets(conn: psycopg.Connection) -> None:
    """Temp tables for the closure, dropped at the end of the transaction."""
    for name in _SETS.values():
        conn.execute(
            sql.SQL("CREATE TEMP TABLE {} (id uuid PRIMARY KEY) ON COMMIT DROP").format(
                sql.Identifier(name)
            )
        )


def close(conn: psycopg.Connection) -> Closure:
    """Grow the seeded sets to everything that rests only on forgotten things (see above)."""
    steps = [
        # a forgotten task's turns
        "INSERT INTO forget_t SELECT t.id FROM agent_turns t JOIN forget_k k ON k.id = t.task_id"
        " ON CONFLICT DO NOTHING",
        # a forgotten segment memory's turns
        "INSERT INTO forget_t SELECT p.turn_id FROM memory_provenance p"
        " JOIN forget_m m ON m.id = p.memory_id WHERE p.role = 'segment' ON CONFLICT DO NOTHING",
        # memories whose every piece of evidence is forgotten
        """INSERT INTO forget_m SELECT m.id FROM memories m
           WHERE NOT EXISTS (SELECT 1 FROM forget_m f WHERE f.id = m.id)
             AND (EXISTS (SELECT 1 FROM memory_provenance p WHERE p.memory_id = m.id)
                  OR EXISTS (SELECT 1 FROM memory_relationships r
                             WHERE r.source_id = m.id AND r.relation_type = 'derived_from'))
             AND NOT EXISTS (SELECT 1 FROM memory_provenance p WHERE p.memory_id = m.id
                             AND p.turn_id NOT IN (SELECT id FROM forget_t))
             AND NOT EXISTS (SELECT 1 FROM memory_relationships r
                             WHERE r.source_id = m.id AND r.relation_type = 'derived_from'
                             AND r.target_id NOT IN (SELECT id FROM forget_m))
           ON CONFLICT DO NOTHING""",
        # dream syntheses resting on any forgotten memory (they may quote it)
        """INSERT INTO forget_m SELECT r.source_id FROM memory_relationships r
           JOIN memories m ON m.id = r.source_id
           WHERE r.relation_type = 'derived_from' AND m.source_type = 'dream_cycle'
             AND r.target_id IN (SELECT id FROM forget_m)
           ON CONFLICT DO NOTHING""",
        # tasks left without any turn
        """INSERT INTO forget_k SELECT c.id FROM captured_tasks c
           WHERE EXISTS (SELECT 1 FROM agent_turns t WHERE t.task_id = c.id)
             AND NOT EXISTS (SELECT 1 FROM agent_turns t WHERE t.task_id = c.id
                             AND t.id NOT IN (SELECT id FROM forget_t))
           ON CONFLICT DO NOTHING""",
    ]
    while True:
        grew = 0
        for step in steps:
            grew += conn.execute(step).rowcount
        if not grew:
            break
    closure = Closure()
    closure.memories = _count(conn, "forget_m")
    closure.turns = _count(conn, "forget_t")
    closure.tasks = _count(conn, "forget_k")
    closure.turn_hashes = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT k FROM agent_turns, unnest(ARRAY[content_sha256, source_key]) k"
            " WHERE id IN (SELECT id FROM forget_t) AND k IS NOT NULL"
        )
    ]
    closure.task_keys = [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT source, native_id FROM captured_tasks WHERE id IN (SELECT id FROM forget_k)"
        )
    ]
    return closure


def _count(conn: psycopg.Connection, table: str) -> int:
    query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
    return int(conn.execute(query).fetchone()[0])  # type: ignore[index]


class _Plan:
    """The referring tables and how to find their doomed rows, from the foreign keys."""

    def __init__(self, fks: list[ForeignKey]) -> None:
        self.fks = fks
        self.affected: set[str] = set(ROOTS)
        grew = True
        while grew:  # every table with a deleting foreign key into an affected table
            grew = False
            for fk in fks:
                if (
                    fk.on_delete in _DELETE_RULES
                    and fk.parent in self.affected
                    and fk.child not in self.affected
                ):
                    self.affected.add(fk.child)
                    grew = True
        self._alias = 0

    def doomed(self, table: str, alias: str, visiting: tuple[str, ...] = ()) -> sql.Composable:
        """A condition on `alias` (a row of `table`) that holds when the row must go."""
        if table in _SETS:
            return sql.SQL("{}.id IN (SELECT id FROM {})").format(
                sql.Identifier(alias), sql.Identifier(_SETS[table])
            )
        parts: list[sql.Composable] = []
        for fk in self.fks:
            if (
                fk.child != table
                or fk.parent == table
                or fk.parent not in self.affected
                or fk.on_delete not in _DELETE_RULES
                or fk.parent in visiting
            ):
                continue
            self._alias += 1
            inner = f"p{self._alias}"
            parts.append(
                sql.SQL("({}) IN (SELECT {} FROM {} AS {} WHERE {})").format(
                    sql.SQL(", ").join(sql.Identifier(alias, c) for c in fk.child_cols),
                    sql.SQL(", ").join(sql.Identifier(inner, c) for c in fk.parent_cols),
                    sql.Identifier(fk.parent),
                    sql.Identifier(inner),
                    self.doomed(fk.parent, inner, (*visiting, table)),
                )
            )
        return sql.SQL(" OR ").join(parts) if parts else sql.SQL("false")

    def order(self) -> list[str]:
        """Affected tables, each before every table it refers to (children first)."""
        refers: dict[str, set[str]] = {t: set() for t in self.affected}
        for fk in self.fks:
            if fk.child in self.affected and fk.parent in self.affected and fk.child != fk.parent:
                refers[fk.child].add(fk.parent)
        referred_by: dict[str, set[str]] = {t: set() for t in self.affected}
        for child, parents in refers.items():
            for parent in parents:
                referred_by[parent].add(child)
        out: list[str] = []
        done: set[str] = set()
        while len(out) < len(self.affected):
            ready = (
                sorted(t for t in self.affected if t not in done and referred_by[t] <= done)
                or sorted(t for t in self.affected if t not in done)[:1]
            )  # a cycle: break it
            for t in ready:
                out.append(t)
                done.add(t)
        return out


def delete(conn: psycopg.Connection) -> dict[str, int]:
    """Delete everything the closure holds and every row referring to it; rows per table."""
    fks = foreign_keys(conn)
    plan = _Plan(fks)
    counts: dict[str, int] = {}
    orphans = _orphan_candidates(conn, plan, fks)
    for fk in fks:  # SET NULL / SET DEFAULT links: the row stays, unlinked
        if fk.on_delete in ("n", "d") and fk.parent in plan.affected:
            _unlink(conn, plan, fk, counts, default=fk.on_delete == "d")
    for fk in fks:  # survivors of a table that refer to its own forgotten rows lose the link
        self_link = fk.child == fk.parent and fk.on_delete in _DELETE_RULES
        if self_link and fk.child in plan.affected and fk.nullable:
            _unlink(conn, plan, fk, counts, survivors_only=True)
    for table in plan.order():
        query = sql.SQL("DELETE FROM {} AS d WHERE {}").format(
            sql.Identifier(table), plan.doomed(table, "d")
        )
        n = conn.execute(query).rowcount
        if n:
            counts[table] = counts.get(table, 0) + n
    for (parent, child, column), temp in orphans.items():
        # A row linked by two link tables (an entity: mentions of memories and of turns) is an
        # orphan only when neither links it any more.
        links = [(c, col) for (p, c, col) in orphans if p == parent]
        _delete_orphans(conn, parent, child, column, temp, fks, counts, links)
    return counts


def _unlink(
    conn: psycopg.Connection,
    plan: _Plan,
    fk: ForeignKey,
    counts: dict[str, int],
    *,
    default: bool = False,
    survivors_only: bool = False,
) -> None:
    value = sql.SQL("DEFAULT" if default else "NULL")
    sets = [sql.SQL("{} = {}").format(sql.Identifier(c), value) for c in fk.child_cols]
    query = sql.SQL("UPDATE {} AS u SET {} WHERE ({}) IN (SELECT {} FROM {} AS q WHERE {})").format(
        sql.Identifier(fk.child),
        sql.SQL(", ").join(sets),
        sql.SQL(", ").join(sql.Identifier("u", c) for c in fk.child_cols),
        sql.SQL(", ").join(sql.Identifier("q", c) for c in fk.parent_cols),
        sql.Identifier(fk.parent),
        plan.doomed(fk.parent, "q"),
    )
    if survivors_only:
        query = sql.SQL("{} AND NOT ({})").format(query, plan.doomed(fk.child, "u"))
    n = conn.execute(query).rowcount
    if n:
        key = f"{fk.child} (unlinked)"
        counts[key] = counts.get(key, 0) + n


def _orphan_candidates(
    conn: psycopg.Connection, plan: _Plan, fks: list[ForeignKey]
) -> dict[tuple[str, str, str], str]:
    """Rows that deleted link rows point to through ON DELETE CASCADE links (a briefing item,
    an entity, a dream candidate through what it rests on): remembered before the delete, and
    removed after it if nothing links to them any more."""
    pks = _single_column_pks(conn)
    out: dict[tuple[str, str, str], str] = {}
    for fk in fks:
        if (
            fk.child in plan.affected
            and fk.child not in ROOTS
            and fk.parent not in ROOTS
            and fk.parent != fk.child
            and fk.on_delete == "c"
            and len(fk.child_cols) == 1
            and pks.get(fk.parent) == fk.parent_cols[0]
        ):
            temp = f"forget_orphan_{len(out)}"
            conn.execute(
                sql.SQL(
                    "CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT DISTINCT o.{} AS k"
                    " FROM {} AS o WHERE {}"
                ).format(
                    sql.Identifier(temp),
                    sql.Identifier(fk.child_cols[0]),
                    sql.Identifier(fk.child),
                    plan.doomed(fk.child, "o"),
                )
            )
            out[(fk.parent, fk.child, fk.child_cols[0])] = temp
    return out


def _delete_orphans(
    conn: psycopg.Connection,
    parent: str,
    child: str,
    column: str,
    temp: str,
    fks: list[ForeignKey],
    counts: dict[str, int],
    links: list[tuple[str, str]] | None = None,
) -> None:
    pk = next(f.parent_cols[0] for f in fks if f.parent == parent and f.child == child)
    unlinked = sql.SQL(" AND ").join(
        sql.SQL("NOT EXISTS (SELECT 1 FROM {child} AS c WHERE c.{col} = x.{pk})").format(
            child=sql.Identifier(c), col=sql.Identifier(col), pk=sql.Identifier(pk)
        )
        for c, col in (links or [(child, column)])
    )
    query = sql.SQL(
        "DELETE FROM {parent} AS x WHERE x.{pk} IN (SELECT k FROM {temp}) AND {unlinked}"
    ).format(
        parent=sql.Identifier(parent),
        pk=sql.Identifier(pk),
        temp=sql.Identifier(temp),
        unlinked=unlinked,
    )
    try:
        with conn.transaction():
            n = conn.execute(query).rowcount
    except psycopg.errors.IntegrityConstraintViolation as exc:
        # Something else still needs the row: it stays (it is not the forgotten thing itself).
        log.warning("left %s rows that %s linked: %s", parent, child, exc)
        return
    if n:
        key = f"{parent} (left unlinked by {child})"
        counts[key] = counts.get(key, 0) + n


def _single_column_pks(conn: psycopg.Connection) -> dict[str, str]:
    rows = conn.execute(
        """
        SELECT cl.relname, a.attname::text FROM pg_constraint c
        JOIN pg_class cl ON cl.oid = c.conrelid
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
        WHERE c.contype = 'p' AND cardinality(c.conkey) = 1
          AND cl.relnamespace = 'public'::regnamespace
        """
    ).fetchall()
    return {r[0]: r[1] for r in rows}
