"""The paraphrase split of the long-conversation set (`gold_paraphrase.jsonl`) stays usable:
every question names one message that exists, none that the main gold set already asks about,
and each comes from the sessions and positions its README says it was drawn from. Files only."""

from __future__ import annotations

import json
import re

from memory_pipeline.settings import REPO_ROOT
from serving.evaluation import load_gold

DATA_DIR = REPO_ROOT / "evaluation" / "long_conversations"
SESSIONS = {"s03", "s06", "s09", "s12", "s15", "s18"}
POSITIONS = {"m009", "m010", "m011"}


def test_each_paraphrase_question_names_one_existing_unasked_message() -> None:
    messages = {
        json.loads(line)["message_id"]
        for path in (DATA_DIR / "conversations").glob("*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line
    }
    asked = {r.native_message_id for q in load_gold(DATA_DIR / "gold.jsonl") for r in q.relevant}
    split = load_gold(DATA_DIR / "gold_paraphrase.jsonl")
    assert len(split) == 30 and len({q.id for q in split}) == 30
    per_conversation: dict[str, int] = {}
    for q in split:
        (item,) = q.relevant
        msg = item.native_message_id
        assert q.kind == "paraphrase_single_message"
        assert msg in messages and msg not in asked, q.id
        conv, session, position = re.fullmatch(r"(\w+)-(s\d+)-(m\d+)", msg or "").groups()  # type: ignore[union-attr]
        assert item.native_task_id == f"{conv}-{session}"
        assert session in SESSIONS and position in POSITIONS, q.id
        per_conversation[conv] = per_conversation.get(conv, 0) + 1
    assert set(per_conversation.values()) == {6}
