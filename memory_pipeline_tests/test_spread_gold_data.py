"""The spread-over-sessions set (`evaluation/spread_sessions/`) stays what its README says.

Its point is questions whose answer needs evidence from at least three sessions; these checks
read files only (no database): the conversations parse with the chat import parser users rely
on, there are at least 120 questions, each names existing messages in at least three distinct
sessions, knowledge updates name their older statements, and the files are what `build.py`
writes from the source (so the marked evidence and the gold set cannot drift apart).
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline_tests.test_long_conversation_data import (
    DataSet,
    _rows,
    conversation_problems,
)
from serving.evaluation import load_gold

SET = REPO_ROOT / "evaluation" / "spread_sessions"
SPREAD = DataSet("spread_sessions", 100, (12, 12), 120, 25, 0)
KINDS = {"list", "which", "habit", "count", "every_time", "knowledge_update"}
MIN_SESSIONS = 3
CONVERSATIONS = sorted(p.stem for p in (SET / "conversations").glob("*.jsonl"))


def _gold() -> list[dict]:
    return _rows(SET / "gold.jsonl")


def _where() -> dict[str, str]:
    """message id -> its session, over every conversation of the set."""
    return {
        row["message_id"]: row["task_id"]
        for conv in CONVERSATIONS
        for row in _rows(SET / "conversations" / f"{conv}.jsonl")
    }


def spread_problems(gold: list[dict], where: dict[str, str]) -> list[str]:
    problems = [
        f"duplicate question id {q}" for q, n in Counter(g["id"] for g in gold).items() if n > 1
    ]
    for item in gold:
        qid = item["id"]
        if item.get("kind") not in KINDS:
            problems.append(f"{qid}: kind {item.get('kind')!r}")
        for ev in item["relevant"] + item.get("older", []):
            mid = ev.get("native_message_id")
            if ev.get("source") != "chat_import" or where.get(mid) != ev.get("native_task_id"):
                problems.append(f"{qid}: evidence {mid!r} is not a message of its session")
        sessions = {ev["native_task_id"] for ev in item["relevant"]}
        if len(sessions) < MIN_SESSIONS:
            problems.append(f"{qid}: evidence in {len(sessions)} sessions")
        older = item.get("older", [])
        if item.get("kind") == "knowledge_update":
            if not older or any(ev not in item["relevant"] for ev in older):
                problems.append(f"{qid}: older statements must be some of its evidence")
            if len(older) >= len(item["relevant"]):
                problems.append(f"{qid}: no current statement")
        elif older:
            problems.append(f"{qid}: older statements on a {item.get('kind')} question")
    return problems


def test_the_set_has_enough_questions_spread_over_enough_sessions() -> None:
    gold = _gold()
    assert len(load_gold(SET / "gold.jsonl")) == len(gold) >= 120
    assert spread_problems(gold, _where()) == []
    per_conv = Counter(item["id"].rsplit("-q", 1)[0] for item in gold)
    assert set(per_conv) == set(CONVERSATIONS) and min(per_conv.values()) >= 25
    kinds = Counter(item["kind"] for item in gold)
    assert kinds["knowledge_update"] >= 20 and set(kinds) == KINDS


def test_the_checks_catch_evidence_in_too_few_sessions_and_a_missing_message() -> None:
    where = {"x-s01-m001": "x-s01", "x-s02-m001": "x-s02", "x-s03-m001": "x-s03"}

    def ev(mid: str) -> dict[str, str]:
        return {"source": "chat_import", "native_task_id": mid[:5], "native_message_id": mid}

    two = [ev("x-s01-m001"), ev("x-s02-m001")]
    bad = [
        {"id": "x-q01", "kind": "list", "relevant": two},
        {"id": "x-q02", "kind": "count", "relevant": [*two, ev("x-s03-m009")]},
        {"id": "x-q03", "kind": "knowledge_update", "relevant": [*two, ev("x-s03-m001")]},
    ]
    assert spread_problems(bad, where) == [
        "x-q01: evidence in 2 sessions",
        "x-q02: evidence 'x-s03-m009' is not a message of its session",
        "x-q03: older statements must be some of its evidence",
    ]


@pytest.mark.parametrize("conv", CONVERSATIONS)
def test_conversation_is_well_formed_and_imports(conv: str) -> None:
    path = SET / "conversations" / f"{conv}.jsonl"
    rows = _rows(path)
    assert conversation_problems(conv, rows, SPREAD) == []
    result = ChatImportConnector(SET / "conversations").parse(path)
    assert result.issues == []
    assert [t.native_id for t in result.tasks] == list(dict.fromkeys(r["task_id"] for r in rows))


def test_the_files_are_what_build_writes_from_the_source(tmp_path: Path) -> None:
    """build.py is deterministic: run on a copy of the source, it writes the committed bytes."""
    spec = importlib.util.spec_from_file_location("spread_build", SET / "build.py")
    assert spec and spec.loader
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    (tmp_path / "source").symlink_to(SET / "source")
    build.HERE = tmp_path
    build.main()
    assert (tmp_path / "gold.jsonl").read_bytes() == (SET / "gold.jsonl").read_bytes()
    for conv in CONVERSATIONS:
        name = f"conversations/{conv}.jsonl"
        assert (tmp_path / name).read_bytes() == (SET / name).read_bytes(), conv
    assert (
        json.loads((SET / "gold.jsonl").read_text().splitlines()[0])["id"]
        == f"{CONVERSATIONS[0]}-q01"
    )
