"""Precision of what the pipeline derives, against a hand-labelled sample.

What is measured: the decisions, insights and correction episodes the semantic pass writes, the
live `contradicts` edges relationship discovery writes, and the memories the dream cycle writes
(every status but `user_rejected`). Each derivation is keyed by its stable content: a hash of
its kind and its text (a memory's title and content; an edge's two memories' titles and
contents), so a label written once matches the same derivation on every later run, in any home,
and a derivation whose text changes is a new, unlabelled one.

The labels (`evaluation/derivations/labels.jsonl`, one line per derivation: key, kind, label
`correct` or `incorrect`, a short reason, and the text that was read) were written by hand from
reading each derivation (and, where needed, the messages it came from). Precision per kind is
correct / labelled among the current derivations that have a label; the derivations without a
label are counted beside it, so a rule change that makes new text shows up as unlabelled rather
than silently as better or worse.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psycopg
from pydantic import BaseModel

from memory_pipeline.settings import REPO_ROOT

DERIVATION_LABELS = REPO_ROOT / "evaluation" / "derivations" / "labels.jsonl"
KINDS = ("decision", "insight", "correction_episode", "contradicts", "dream")
# The targets for the offline backend (issue 34); dream memories have none.
TARGETS = {"decision": 0.8, "insight": 0.8, "correction_episode": 0.9, "contradicts": 0.9}
LABEL_VALUES = ("correct", "incorrect")


@dataclass(frozen=True)
class Derivation:
    kind: str
    text: str
    origin: str  # where it came from, for the reader (task ids), not part of the key

    @property
    def key(self) -> str:
        return derivation_key(self.kind, self.text)


def derivation_key(kind: str, text: str) -> str:
    """Stable key of a derivation: kind and text, whitespace-normalized."""
    normal = " ".join(text.split())
    return hashlib.sha256(f"{kind}\n{normal}".encode()).hexdigest()[:16]


def memory_text(title: str, content: str) -> str:
    return f"{title}\n{content}"


class Label(BaseModel):
    key: str
    kind: str
    label: str
    reason: str
    text: str = ""
    origin: str = ""


class KindPrecision(BaseModel):
    derived: int  # current derivations of the kind
    labelled: int  # of which have a label
    correct: int
    precision: float | None  # correct / labelled; None when none is labelled
    target: float | None

    @property
    def unlabelled(self) -> int:
        return self.derived - self.labelled

    @property
    def meets_target(self) -> bool | None:
        if self.target is None or self.precision is None:
            return None
        return self.precision >= self.target


class PrecisionReport(BaseModel):
    labels: int  # labels in the file
    kinds: dict[str, KindPrecision]

    @property
    def derived(self) -> int:
        return sum(k.derived for k in self.kinds.values())

    @property
    def unlabelled(self) -> int:
        return sum(k.unlabelled for k in self.kinds.values())


_ORIGIN = """
    SELECT string_agg(DISTINCT t.native_id, ' ' ORDER BY t.native_id)
    FROM memory_provenance p JOIN captured_tasks t ON t.id = p.task_id
    WHERE p.memory_id = {col}
"""


def current_derivations(conn: psycopg.Connection) -> list[Derivation]:
    """Every current derivation of the measured kinds (see the module doc)."""
    out: list[Derivation] = []
    rows = conn.execute(
        "SELECT CASE WHEN m.source_type = 'dream_cycle' THEN 'dream' ELSE m.type END,"
        f" m.title, m.content, coalesce(({_ORIGIN.format(col='m.id')}), '')"
        " FROM memories m"
        " WHERE m.status <> 'user_rejected'"
        " AND (m.source_type = 'dream_cycle'"
        "      OR m.type IN ('decision', 'insight', 'correction_episode'))"
        " ORDER BY m.partition_day, m.created_at, m.id"
    ).fetchall()
    out += [
        Derivation(kind, memory_text(title, content), origin)
        for kind, title, content, origin in rows
    ]
    edges = conn.execute(
        "SELECT s.title, s.content, t.title, t.content,"
        f" coalesce(({_ORIGIN.format(col='s.id')}), '') || ' / '"
        f" || coalesce(({_ORIGIN.format(col='t.id')}), '')"
        " FROM memory_relationships r"
        " JOIN memories s ON s.id = r.source_id JOIN memories t ON t.id = r.target_id"
        " WHERE r.relation_type = 'contradicts' AND r.expired_at IS NULL"
        " ORDER BY s.partition_day, s.created_at, s.id, t.id"
    ).fetchall()
    out += [
        Derivation("contradicts", edge_text(st, sc, tt, tc), origin)
        for st, sc, tt, tc, origin in edges
    ]
    return out


def edge_text(source_title: str, source: str, target_title: str, target: str) -> str:
    source_text = memory_text(source_title, source)
    return f"{source_text}\n-- contradicts --\n{memory_text(target_title, target)}"


def load_labels(path: Path = DERIVATION_LABELS) -> dict[str, Label]:
    labels: dict[str, Label] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            label = Label.model_validate_json(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: {exc}") from exc
        if label.label not in LABEL_VALUES or label.kind not in KINDS:
            raise ValueError(f"{path}:{n}: label {label.label!r} of kind {label.kind!r}")
        if label.key in labels:
            raise ValueError(f"{path}:{n}: key {label.key} labelled twice")
        labels[label.key] = label
    return labels


def precision(derivations: Iterable[Derivation], labels: dict[str, Label]) -> PrecisionReport:
    """Precision per kind of the derivations that have a label (each derivation counts once per
    row: a statement derived twice weighs twice)."""
    counts = {kind: [0, 0, 0] for kind in KINDS}  # derived, labelled, correct
    for d in derivations:
        c = counts[d.kind]
        c[0] += 1
        label = labels.get(d.key)
        if label is not None:
            c[1] += 1
            c[2] += label.label == "correct"
    return PrecisionReport(
        labels=len(labels),
        kinds={
            kind: KindPrecision(
                derived=derived,
                labelled=labelled,
                correct=correct,
                precision=round(correct / labelled, 4) if labelled else None,
                target=TARGETS.get(kind),
            )
            for kind, (derived, labelled, correct) in counts.items()
        },
    )


def evaluate_derivations(
    conn: psycopg.Connection, path: Path = DERIVATION_LABELS
) -> PrecisionReport:
    return precision(current_derivations(conn), load_labels(path))


def report_lines(report: PrecisionReport, path: Path = DERIVATION_LABELS) -> list[str]:
    lines = [
        f"derivation precision against {report.labels} hand labels ({_shown(path)}):",
        f"{'kind':<20} {'derived':>8} {'labelled':>9} {'correct':>8} {'precision':>10}"
        f" {'target':>7}",
    ]
    for kind, k in report.kinds.items():
        p = f"{k.precision:.3f}" if k.precision is not None else "-"
        t = f"{k.target:.2f}" if k.target is not None else "-"
        verdict = {True: "", False: "  below target", None: ""}[k.meets_target]
        lines.append(
            f"{kind:<20} {k.derived:>8} {k.labelled:>9} {k.correct:>8} {p:>10} {t:>7}{verdict}"
        )
    lines.append(f"{report.unlabelled} of {report.derived} current derivations have no label")
    return lines


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def dump_unlabelled(conn: psycopg.Connection, path: Path = DERIVATION_LABELS) -> list[dict]:
    """The current derivations without a label, once per key, as lines to label by hand."""
    labels = load_labels(path) if path.is_file() else {}
    seen: set[str] = set()
    out = []
    for d in current_derivations(conn):
        if d.key in labels or d.key in seen:
            continue
        seen.add(d.key)
        out.append({"key": d.key, "kind": d.kind, "text": d.text, "origin": d.origin})
    return out


def to_json_line(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False)
