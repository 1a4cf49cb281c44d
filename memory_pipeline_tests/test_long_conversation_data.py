"""The evaluation conversation sets (`evaluation/long_conversations/`,
`evaluation/oblique_conversations/`) stay usable.

The set is only worth something if every conversation imports with the chat import parser that
users rely on, and if every gold question points at messages that exist, in particular the
`unanswered_last_message` questions, whose evidence is a session's last message that nobody
answered. These checks read files only (no database), so they run in well under a second.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.settings import REPO_ROOT
from serving.evaluation import load_gold


@dataclass(frozen=True)
class DataSet:
    """A conversation set under `evaluation/` and the minimums its README promises."""

    name: str
    min_messages: int
    sessions: tuple[int, int]  # per conversation, inclusive
    min_questions: int
    min_questions_per_conversation: int
    min_unanswered_items: int
    min_conversations: int = 5

    @property
    def conversations_dir(self) -> Path:
        return REPO_ROOT / "evaluation" / self.name / "conversations"

    @property
    def gold(self) -> Path:
        return REPO_ROOT / "evaluation" / self.name / "gold.jsonl"

    @property
    def conversations(self) -> list[str]:
        return sorted(p.stem for p in self.conversations_dir.glob("*.jsonl"))


SETS = [
    DataSet("long_conversations", 300, (12, 25), 150, 30, 10),
    DataSet("oblique_conversations", 440, (26, 40), 210, 42, 25),
]
CONVERSATIONS = [(ds, conv) for ds in SETS for conv in ds.conversations]
KINDS = {"single_hop", "multi_hop", "temporal", "knowledge_update", "unanswered_last_message"}
ROLES = {"user", "assistant", "human"}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _sessions(rows: list[dict]) -> dict[str, list[dict]]:
    sessions: dict[str, list[dict]] = {}
    for row in rows:
        sessions.setdefault(row["task_id"], []).append(row)
    return sessions


def _is_prompt_side(session: list[dict], row: dict) -> bool:
    """The import format's turn rule: assistant messages answer; between people, everyone but
    the session's first speaker answers."""
    if any(r.get("role") == "assistant" for r in session):
        return row.get("role") != "assistant"
    first = session[0].get("speaker") or session[0].get("role")
    return (row.get("speaker") or row.get("role")) == first


def _unanswered_tail(session: list[dict]) -> list[str]:
    """Ids of the trailing prompt-side messages that no answer follows."""
    tail: list[str] = []
    for row in reversed(session):
        if not _is_prompt_side(session, row):
            break
        tail.append(row["message_id"])
    return tail


def conversation_problems(conv: str, rows: list[dict], ds: DataSet = SETS[0]) -> list[str]:
    """Everything wrong with one conversation file, as readable lines (empty when it is fine)."""
    problems: list[str] = []
    ids = Counter(row.get("message_id") for row in rows)
    problems += [f"duplicate message_id {mid}" for mid, n in ids.items() if n > 1]
    for row in rows:
        mid = row.get("message_id", "?")
        if not re.fullmatch(rf"{conv}-s\d\d", str(row.get("task_id"))):
            problems.append(f"{mid}: task_id {row.get('task_id')!r} is not {conv}-sNN")
        elif not str(mid).startswith(f"{row['task_id']}-m"):
            problems.append(f"{mid}: message_id does not start with its task_id")
        if row.get("role") not in ROLES or (row["role"] == "human" and not row.get("speaker")):
            problems.append(f"{mid}: role {row.get('role')!r} (humans need a speaker)")
        if not str(row.get("text", "")).strip():
            problems.append(f"{mid}: empty text")
        try:
            if datetime.fromisoformat(row["timestamp"]).utcoffset() is None:
                problems.append(f"{mid}: timestamp without an offset")
        except (KeyError, TypeError, ValueError):
            problems.append(f"{mid}: timestamp {row.get('timestamp')!r} is not ISO 8601")
    if problems:
        return problems
    sessions = _sessions(rows)
    if len(rows) < ds.min_messages:
        problems.append(f"{len(rows)} messages, fewer than {ds.min_messages}")
    low, high = ds.sessions
    if not low <= len(sessions) <= high:
        problems.append(f"{len(sessions)} sessions, not {low}-{high}")
    previous_end: datetime | None = None
    for task_id, session in sessions.items():
        times = [datetime.fromisoformat(r["timestamp"]) for r in session]
        if times != sorted(times):
            problems.append(f"{task_id}: timestamps go backwards")
        if previous_end is not None and times[0] <= previous_end:
            problems.append(f"{task_id}: starts before the previous session ended")
        previous_end = times[-1]
        if not session[0].get("title"):
            problems.append(f"{task_id}: no title on the first message")
    return problems


def gold_problems(gold: list[dict], rows_by_conv: dict[str, list[dict]]) -> list[str]:
    """Everything wrong with the gold set against the conversations it points into."""
    problems: list[str] = []
    sessions = {
        task_id: session
        for rows in rows_by_conv.values()
        for task_id, session in _sessions(rows).items()
    }
    where = {row["message_id"]: row["task_id"] for rows in rows_by_conv.values() for row in rows}
    ids = Counter(item["id"] for item in gold)
    problems += [f"duplicate question id {qid}" for qid, n in ids.items() if n > 1]
    for item in gold:
        if item.get("kind") not in KINDS:
            problems.append(f"{item['id']}: kind {item.get('kind')!r}")
        if not item["relevant"]:
            problems.append(f"{item['id']}: no evidence")
        for ev in item["relevant"]:
            mid = ev.get("native_message_id")
            if ev.get("source") != "chat_import" or where.get(mid) != ev.get("native_task_id"):
                problems.append(f"{item['id']}: evidence {mid!r} is not a message of its task")
        if item.get("kind") == "unanswered_last_message" and not any(
            ev["native_message_id"] in _unanswered_tail(sessions[ev["native_task_id"]])
            for ev in item["relevant"]
            if ev.get("native_task_id") in sessions
        ):
            problems.append(f"{item['id']}: no evidence is an unanswered last message")
    return problems


def _rows_by_conv(ds: DataSet) -> dict[str, list[dict]]:
    return {conv: _rows(ds.conversations_dir / f"{conv}.jsonl") for conv in ds.conversations}


@pytest.mark.parametrize("ds", SETS, ids=lambda ds: ds.name)
def test_the_set_has_enough_conversations(ds: DataSet) -> None:
    assert len(ds.conversations) >= ds.min_conversations, ds.conversations


@pytest.mark.parametrize(("ds", "conv"), CONVERSATIONS, ids=lambda x: getattr(x, "name", x))
def test_conversation_is_well_formed(ds: DataSet, conv: str) -> None:
    assert conversation_problems(conv, _rows(ds.conversations_dir / f"{conv}.jsonl"), ds) == []


@pytest.mark.parametrize(("ds", "conv"), CONVERSATIONS, ids=lambda x: getattr(x, "name", x))
def test_conversation_imports_with_the_chat_import_parser(ds: DataSet, conv: str) -> None:
    """Every line parses, one task per session, and every message lands in a turn, except an
    unanswered last prompt while the parser still waits for its answer."""
    path = ds.conversations_dir / f"{conv}.jsonl"
    rows = _rows(path)
    result = ChatImportConnector(ds.conversations_dir).parse(path)
    assert result.issues == []
    sessions = _sessions(rows)
    tasks = {task.native_id: task for task in result.tasks}
    assert list(tasks) == list(sessions)
    for task_id, session in sessions.items():
        task = tasks[task_id]
        assert task.title is not None and task.title.text == session[0]["title"]
        in_turns = [mid for turn in task.turns for mid in turn.native_message_ids]
        waiting = set(_unanswered_tail(session)) if task.unfinished_turn else set()
        assert sorted(in_turns) == sorted(
            r["message_id"] for r in session if r["message_id"] not in waiting
        ), task_id


@pytest.mark.parametrize("ds", SETS, ids=lambda ds: ds.name)
def test_gold_set_loads_and_points_at_existing_messages(ds: DataSet) -> None:
    gold = _rows(ds.gold)
    assert len(load_gold(ds.gold)) == len(gold) >= ds.min_questions
    assert gold_problems(gold, _rows_by_conv(ds)) == []
    per_conv = Counter(item["id"].rsplit("-q", 1)[0] for item in gold)
    few = {conv: n for conv, n in per_conv.items() if n < ds.min_questions_per_conversation}
    assert few == {}
    assert set(per_conv) == set(ds.conversations)


@pytest.mark.parametrize("ds", SETS, ids=lambda ds: ds.name)
def test_enough_questions_ask_about_unanswered_last_messages(ds: DataSet) -> None:
    gold, rows_by_conv = _rows(ds.gold), _rows_by_conv(ds)
    unanswered = [item for item in gold if item["kind"] == "unanswered_last_message"]
    assert len(unanswered) >= ds.min_unanswered_items
    sessions = {t: s for rows in rows_by_conv.values() for t, s in _sessions(rows).items()}
    for item in unanswered:
        last = [
            ev["native_message_id"]
            for ev in item["relevant"]
            if ev["native_message_id"] == sessions[ev["native_task_id"]][-1]["message_id"]
        ]
        assert last, f"{item['id']}: its evidence is not the last message of a session"
        task_id = last[0].rsplit("-m", 1)[0]
        assert _unanswered_tail(sessions[task_id]), f"{item['id']}: that message was answered"


def test_the_checks_catch_a_broken_conversation_and_gold_item() -> None:
    """The validators above are not vacuous: they report what a careless edit would break."""
    session = [
        {"task_id": "x-s01", "title": "t", "role": "user", "text": "where is it?",
         "timestamp": "2026-03-01T10:05:00+01:00", "message_id": "x-s01-m001"},
        {"task_id": "x-s01", "role": "assistant", "text": "in the drawer",
         "timestamp": "2026-03-01T10:00:00+01:00", "message_id": "x-s01-m001"},
    ]  # fmt: skip
    problems = conversation_problems("x", session)
    assert problems == ["duplicate message_id x-s01-m001"]
    session[1]["message_id"] = "x-s01-m002"
    problems = conversation_problems("x", session)
    assert "x-s01: timestamps go backwards" in problems
    assert f"2 messages, fewer than {SETS[0].min_messages}" in problems
    bad_gold = [
        {"id": "x-q01", "query": "?", "kind": "unanswered_last_message", "relevant": [
            {"source": "chat_import", "native_task_id": "x-s01",
             "native_message_id": "x-s01-m002"}]},
        {"id": "x-q02", "query": "?", "kind": "single_hop", "relevant": [
            {"source": "chat_import", "native_task_id": "x-s01",
             "native_message_id": "x-s01-m009"}]},
    ]  # fmt: skip
    assert gold_problems(bad_gold, {"x": session}) == [
        "x-q01: no evidence is an unanswered last message",
        "x-q02: evidence 'x-s01-m009' is not a message of its task",
    ]
