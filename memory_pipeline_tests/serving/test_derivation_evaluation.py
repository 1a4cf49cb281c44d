"""Precision of derived memories and edges against hand labels keyed by their content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_pipeline_tests.support.memories import add_memory
from serving.derivation_evaluation import (
    derivation_key,
    dump_unlabelled,
    edge_text,
    evaluate_derivations,
    load_labels,
    memory_text,
    report_lines,
)


def _label(kind: str, text: str, label: str) -> str:
    key = derivation_key(kind, text)
    return json.dumps({"key": key, "kind": kind, "label": label, "reason": "r", "text": text})


def test_precision_per_kind_counts_labelled_derivations_and_the_unlabelled(
    conn, reader, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    decided = add_memory(conn, "Use Postgres", "We use Postgres for the queue.", type="decision")
    add_memory(conn, "Not yet", "Agent did: hi. User expected instead: Not yet", type="decision")
    add_memory(conn, "Redis", "We keep Redis for caching.", type="decision")  # unlabelled
    add_memory(conn, "Nope", "Rejected by the user", type="decision", status="user_rejected")
    add_memory(conn, "Cause", "The fan was loud because of dust.", type="insight")
    add_memory(conn, "Fixed", "Agent did: x. User expected instead: y", type="correction_episode")
    add_memory(conn, "Lab night", "User: hi\nAgent: hello", type="segment")  # not a derivation
    add_memory(conn, "Changed since: queue", "The queue moved.", type="synthesis",
               source_type="dream_cycle")  # fmt: skip
    old = add_memory(conn, "Use Redis", "We use Redis for the queue.", type="decision")
    conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type)"
        " VALUES (%s, %s, 'contradicts')",
        [decided, old],
    )
    pg = memory_text("Use Postgres", "We use Postgres for the queue.")
    redis = memory_text("Use Redis", "We use Redis for the queue.")
    # Whitespace does not change the key: the same text, labelled once.
    small_talk = memory_text("Not yet", "Agent did: hi.  User expected instead: Not yet")
    lines = [
        _label("decision", pg, "correct"),
        _label("decision", small_talk, "incorrect"),
        _label("decision", redis, "correct"),
        _label("insight", memory_text("Cause", "The fan was loud because of dust."), "correct"),
        _label("correction_episode", memory_text("Fixed", "Agent did: x. User expected instead: y"),
               "incorrect"),
        _label("contradicts", edge_text("Use Postgres", "We use Postgres for the queue.",
                                        "Use Redis", "We use Redis for the queue."), "correct"),
        _label("dream", memory_text("Something else", "Not in this home"), "correct"),
    ]  # fmt: skip
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(lines) + "\n")
    report = evaluate_derivations(reader, labels)
    k = report.kinds
    assert report.labels == 7
    assert (k["decision"].derived, k["decision"].labelled, k["decision"].correct) == (4, 3, 2)
    assert k["decision"].precision == 0.6667 and k["decision"].meets_target is False
    assert (k["insight"].precision, k["insight"].meets_target) == (1.0, True)
    assert (k["correction_episode"].precision, k["correction_episode"].target) == (0.0, 0.9)
    assert (k["contradicts"].derived, k["contradicts"].precision) == (1, 1.0)
    assert (k["dream"].derived, k["dream"].labelled, k["dream"].precision) == (1, 0, None)
    assert (report.derived, report.unlabelled) == (8, 2)
    lines = report_lines(report, labels)
    assert lines[0].startswith("derivation precision against 7 hand labels")
    assert any(line.split()[:6] == ["decision", "4", "3", "2", "0.667", "0.80"] for line in lines)
    assert "below target" in next(line for line in lines if line.startswith("decision"))
    assert lines[-1] == "2 of 8 current derivations have no label"
    # What is left to label, once per key, with the text to read.
    todo = dump_unlabelled(reader, labels)
    assert sorted(row["kind"] for row in todo) == ["decision", "dream"]
    assert {row["text"] for row in todo} >= {"Redis\nWe keep Redis for caching."}


def test_a_broken_label_file_says_which_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    good = _label("insight", "a\nb", "correct")
    labels.write_text(good + "\n" + good + "\n")
    with pytest.raises(ValueError, match=r"labels.jsonl:2: key .* labelled twice"):
        load_labels(labels)
    labels.write_text(_label("insight", "a\nb", "maybe") + "\n")
    with pytest.raises(ValueError, match=r"labels.jsonl:1: label 'maybe'"):
        load_labels(labels)
