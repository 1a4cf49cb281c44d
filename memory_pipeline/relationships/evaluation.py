"""Precision and recall of discovered edges against a gold list of memory pairs.

A gold line names two turns of captured tasks (as the retrieval gold does: source, native task
id, 0-based turn ordinal), the relation that must (`"linked": true`) or must not
(`"linked": false`) hold from the memory citing the first to the memory citing the second. A
memory "cites" a turn when the turn is in its provenance, so the measure does not depend on how
turns were segmented or distilled. `duplicate_of` pairs match in either direction (which copy is
kept depends only on which was stated first).

Per relation type: recall = gold pairs that must be linked and are / such pairs; precision =
live edges of that type (discovered, i.e. with a backend) that match a must-be-linked pair / all
such edges; violations = must-not pairs that are linked. Read-only: serving runs it as the reader.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import psycopg
from pydantic import BaseModel

from memory_pipeline.relationships.models import SYMMETRIC

DEMO_RELATIONSHIPS_GOLD = Path(__file__).resolve().parents[1] / "demo" / "relationships_gold.jsonl"
UNORDERED = SYMMETRIC | {"duplicate_of"}


class TurnRef(BaseModel):
    source: str
    native_task_id: str
    turn_ordinal: int


class GoldPair(BaseModel):
    id: str
    relation: str
    source: TurnRef
    target: TurnRef
    linked: bool = True
    note: str = ""


class EdgeTypeScore(BaseModel):
    relation: str
    backends: list[str]  # who wrote the edges measured
    gold_pairs: int
    found: int
    edges: int
    correct_edges: int
    violations: list[str]  # ids of must-not pairs that are linked
    missed: list[str]  # ids of must-be-linked pairs that are not

    @property
    def recall(self) -> float:
        return self.found / self.gold_pairs if self.gold_pairs else 1.0

    @property
    def precision(self) -> float:
        return self.correct_edges / self.edges if self.edges else 1.0


def load_gold(path: Path) -> list[GoldPair]:
    pairs = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            try:
                pairs.append(GoldPair.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: {exc}") from exc
    return pairs


def _citing(conn: psycopg.Connection, refs: list[TurnRef]) -> dict[tuple[str, str, int], set[str]]:
    """turn ref -> ids of the memories whose provenance holds that turn."""
    keys = list({(r.source, r.native_task_id, r.turn_ordinal) for r in refs})
    rows = conn.execute(
        "SELECT t.source, t.native_id, a.ordinal, p.memory_id::text FROM memory_provenance p"
        " JOIN captured_tasks t ON t.id = p.task_id JOIN agent_turns a ON a.id = p.turn_id"
        " JOIN unnest(%s::text[], %s::text[], %s::int[]) AS k(source, native_id, ordinal)"
        " ON k.source = t.source AND k.native_id = t.native_id AND k.ordinal = a.ordinal",
        [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]],
    ).fetchall()
    out: dict[tuple[str, str, int], set[str]] = defaultdict(set)
    for source, native_id, ordinal, memory_id in rows:
        out[(source, native_id, ordinal)].add(memory_id)
    return out


def _key(ref: TurnRef) -> tuple[str, str, int]:
    return (ref.source, ref.native_task_id, ref.turn_ordinal)


def evaluate(conn: psycopg.Connection, gold: list[GoldPair]) -> list[EdgeTypeScore]:
    citing = _citing(conn, [r for g in gold for r in (g.source, g.target)])
    scores = []
    for relation in sorted({g.relation for g in gold}):
        rows = conn.execute(
            "SELECT source_id::text, target_id::text, backend FROM memory_relationships"
            " WHERE relation_type = %s AND expired_at IS NULL AND backend IS NOT NULL",
            [relation],
        ).fetchall()
        edges = {(r[0], r[1]) for r in rows}
        if relation in UNORDERED:
            edges |= {(t, s) for s, t in edges}

        def linked(g: GoldPair, edges: set[tuple[str, str]] = edges) -> bool:
            return any(
                (s, t) in edges for s in citing[_key(g.source)] for t in citing[_key(g.target)]
            )

        pairs = [g for g in gold if g.relation == relation]
        positive = [g for g in pairs if g.linked]
        good = {
            (s, t) for g in positive for s in citing[_key(g.source)] for t in citing[_key(g.target)]
        }
        if relation in UNORDERED:
            good |= {(t, s) for s, t in good}
        scores.append(
            EdgeTypeScore(
                relation=relation,
                backends=sorted({r[2] for r in rows}),
                gold_pairs=len(positive),
                found=sum(linked(g) for g in positive),
                edges=len(rows),
                correct_edges=sum((r[0], r[1]) in good for r in rows),
                violations=[g.id for g in pairs if not g.linked and linked(g)],
                missed=[g.id for g in positive if not linked(g)],
            )
        )
    return scores


def report_table(scores: list[EdgeTypeScore]) -> str:
    lines = [
        "Relationship discovery against the gold pairs:",
        "| edge type | backend | gold pairs | found | recall | edges | precision"
        " | must-not linked |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.relation} | {', '.join(s.backends) or 'none'} | {s.gold_pairs} | {s.found} |"
            f" {s.recall:.3f} | {s.edges} | {s.precision:.3f} | {len(s.violations)} |"
        )
    missed = [m for s in scores for m in s.missed]
    if missed:
        lines.append(f"missed: {', '.join(missed)}")
    return "\n".join(lines)
