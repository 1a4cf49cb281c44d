"""Recall and false positives of redaction on a labelled set (`memory-pipeline eval --secrets`).

A set is a folder (or one file) of JSON Lines rows:

- a secret: `{"kind", "text", "secret", "source"?}`; caught when `secret` appears nowhere in
  `redact(text)`;
- a near-miss: `{"kind", "text", "source"?}` (no `secret`); kept when `redact(text) == text`.

The project's own set is evaluation/secrets/ (see its README); a held-out set in the same format
can be passed instead.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.capture.redact import RULES_VERSION, redact
from memory_pipeline.settings import REPO_ROOT

DEFAULT_SET = REPO_ROOT / "evaluation" / "secrets"
RECALL_TARGET = 0.98
FALSE_POSITIVE_TARGET = 0.01


class SetError(ValueError):
    """The set cannot be read (missing, not JSON Lines, a row without text)."""


@dataclass
class SecretEval:
    secrets: int = 0
    caught: int = 0
    near_misses: int = 0
    changed: int = 0
    kinds: set[str] = field(default_factory=set)
    missed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # kind -> ids
    false_positives: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    @property
    def recall(self) -> float:
        return self.caught / self.secrets if self.secrets else 1.0

    @property
    def false_positive_rate(self) -> float:
        return self.changed / self.near_misses if self.near_misses else 0.0

    @property
    def meets_targets(self) -> bool:
        return self.recall >= RECALL_TARGET and self.false_positive_rate <= FALSE_POSITIVE_TARGET


def load_rows(path: Path) -> list[dict]:
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise SetError(f"no JSON Lines set at {path}")
    rows = []
    for file in files:
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SetError(f"{file}:{n}: not JSON ({exc.msg})") from exc
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise SetError(f"{file}:{n}: a row needs a string `text`")
            row.setdefault("id", f"{file.name}:{n}")
            row.setdefault("kind", "unknown")
            rows.append(row)
    return rows


def evaluate(rows: list[dict]) -> SecretEval:
    result = SecretEval()
    for row in rows:
        out, _ = redact(row["text"])
        secret = row.get("secret")
        if secret:
            result.secrets += 1
            result.kinds.add(row["kind"])
            if secret in out:
                result.missed[row["kind"]].append(row["id"])
            else:
                result.caught += 1
        else:
            result.near_misses += 1
            if out != row["text"]:
                result.changed += 1
                result.false_positives[row["kind"]].append(row["id"])
    return result


def report(result: SecretEval, path: Path) -> str:
    lines = [f"Redaction on {path} (rules {RULES_VERSION})"]
    if result.missed:
        lines.append("missed secrets, by kind:")
        lines += [f"  {k}: {len(v)} ({', '.join(v)})" for k, v in sorted(result.missed.items())]
    if result.false_positives:
        lines.append("near-misses changed, by kind:")
        lines += [
            f"  {k}: {len(v)} ({', '.join(v)})" for k, v in sorted(result.false_positives.items())
        ]
    ok = "meets" if result.meets_targets else "MISSES"
    lines += [
        f"secrets      {result.caught}/{result.secrets} caught, {len(result.kinds)} kinds",
        f"recall       {result.recall:.4f}   (target >= {RECALL_TARGET})",
        f"near-misses  {result.changed}/{result.near_misses} changed",
        f"FP rate      {result.false_positive_rate:.4f}   (target <= {FALSE_POSITIVE_TARGET})",
        f"{ok} the targets",
    ]
    return "\n".join(lines)
