"""Build the spread-over-sessions set from its authoring source (run from the repository root).

    .venv/bin/python evaluation/spread_sessions/build.py

`source/<conv>.txt` holds one conversation as written: a header line per session
(`== s01 | 2026-01-10T09:15:00-08:00 | Title`), then one message per line (`Speaker: text`, or
`user:` / `assistant:` for a developer with a coding assistant). A message that holds part of a
question's answer carries the question's label in brackets, `[@label]`, or `[@label:old]` for a
statement that a later one supersedes (knowledge updates). `source/<conv>.questions` holds one
question per line: `label | kind | question | the writer's short answer`.

Writes `conversations/<conv>.jsonl` (the chat import format) and `gold.jsonl`; message ids and
timestamps (gaps of 40 s to 4 min, fixed by a hash) follow from the text, so re-running it on an
unchanged source writes the same bytes. Fails when a label is unknown or unused, or when a
question's evidence lies in fewer than three sessions.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABEL = re.compile(r"\s*\[@([a-z0-9_]+)(:old)?\]")
MIN_SESSIONS = 3


Evidence = dict[str, list[tuple[str, str, bool]]]  # label -> (session, message id, older)


def build_conversation(conv: str, text: str) -> tuple[list[dict], Evidence]:
    rows: list[dict] = []
    evidence: Evidence = {}
    session = start = title = None
    n = 0
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("=="):
            sid, stamp, title = (p.strip() for p in line[2:].split("|", 2))
            session, start, n = f"{conv}-{sid}", datetime.fromisoformat(stamp), 0
            continue
        if session is None or start is None:
            sys.exit(f"{conv}:{line_no}: a message before the first session header")
        speaker, _, body = line.partition(":")
        labels = LABEL.findall(body)
        body = LABEL.sub("", body).strip()
        if not body:
            sys.exit(f"{conv}:{line_no}: empty message")
        n += 1
        msg_id = f"{session}-m{n:03d}"
        if n > 1:
            gap = 40 + int(hashlib.sha256(msg_id.encode()).hexdigest(), 16) % 200
            start = start + timedelta(seconds=gap)
        row: dict = {"task_id": session}
        if n == 1:
            row["title"] = title
        if speaker in ("user", "assistant"):
            row["role"] = speaker
        else:
            row |= {"role": "human", "speaker": speaker}
        row |= {"text": body, "timestamp": start.isoformat(), "message_id": msg_id}
        rows.append(row)
        for label, old in labels:
            evidence.setdefault(label, []).append((session, msg_id, bool(old)))
    return rows, evidence


def ref(session: str, message: str) -> dict[str, str]:
    return {"source": "chat_import", "native_task_id": session, "native_message_id": message}


def main() -> None:
    gold: list[dict] = []
    (HERE / "conversations").mkdir(exist_ok=True)
    for src in sorted((HERE / "source").glob("*.txt")):
        conv = src.stem
        rows, evidence = build_conversation(conv, src.read_text(encoding="utf-8"))
        out = HERE / "conversations" / f"{conv}.jsonl"
        out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        questions = src.with_suffix(".questions").read_text(encoding="utf-8").splitlines()
        used = set()
        for q_no, line in enumerate((q for q in questions if q.strip()), start=1):
            label, kind, query, answer = (p.strip() for p in line.split("|", 3))
            items = evidence.get(label)
            if not items:
                sys.exit(f"{conv}: question {label!r} has no evidence")
            if len({s for s, _, _ in items}) < MIN_SESSIONS:
                sys.exit(f"{conv}: {label!r} has evidence in fewer than {MIN_SESSIONS} sessions")
            used.add(label)
            entry = {
                "id": f"{conv}-q{q_no:02d}",
                "query": query,
                "relevant": [ref(s, m) for s, m, _ in items],
                "kind": kind,
                "answer": answer,
            }
            older = [ref(s, m) for s, m, old in items if old]
            if kind == "knowledge_update":
                if not older or all(old for _, _, old in items):
                    sys.exit(f"{conv}: update {label!r} needs current and older statements")
                entry["older"] = older
            elif older:
                sys.exit(f"{conv}: {label!r} marks older statements but is not a knowledge update")
            gold.append(entry)
        unused = set(evidence) - used
        if unused:
            sys.exit(f"{conv}: labels without a question: {sorted(unused)}")
    lines = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in gold)
    (HERE / "gold.jsonl").write_text(lines, "utf-8")
    print(f"{len(gold)} questions")


if __name__ == "__main__":
    main()
