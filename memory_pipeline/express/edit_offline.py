"""The deterministic editor: rank by kind and depth, and write a headline from memory titles.

It is the fallback whenever the Ollama editor is not configured or fails, so its output must read
well on its own: whole titles in plain sentences, never raw JSON, never a sentence cut mid-word
(a headline over EXPRESS_HEADLINE_MAX_CHARS keeps its first sentence, or is cut at a word and
marked with "…").
"""

from __future__ import annotations

import re

from memory_pipeline import tuning
from memory_pipeline.express.models import Candidate, EditedItem
from memory_pipeline.models.inbox import INBOX_KIND_LABELS

EDITOR = "offline"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_KIND_WORDS = {
    "decision": ("decision", "decisions"),
    "insight": ("insight", "insights"),
    "synthesis": ("synthesis", "syntheses"),
    "question": ("question", "questions"),
}


def clean(text: object) -> str:
    """One line of text: whitespace collapsed, no trailing punctuation clutter."""
    return " ".join(str(text or "").split())


_PAIRS = (("(", ")"), ("[", "]"), ("“", "”"))


def _balanced(text: str) -> bool:
    """No bracket or quotation left open: a cut there would read as a broken sentence."""
    return text.count('"') % 2 == 0 and all(text.count(a) == text.count(b) for a, b in _PAIRS)


def fit(text: object, limit: int = tuning.EXPRESS_HEADLINE_MAX_CHARS) -> str:
    """`text` on one line within `limit` characters: whole if it fits, else its leading whole
    sentences (never inside an open quotation or bracket), else cut at the last word that fits,
    marked with an ellipsis, with any quotation or bracket the cut leaves open closed."""
    line = clean(text)
    if len(line) <= limit:
        return line
    sentences = _SENTENCE_END.split(line)
    for n in range(len(sentences) - 1, 0, -1):
        head = " ".join(sentences[:n])
        if len(head) <= limit and _balanced(head):
            return head
    # Cut at a word, leaving room to close what the cut leaves open: ("We'll use Redis …")
    words = line[: limit - 5].split(" ")[:-1] or [line[: limit - 5]]
    cut = " ".join(words).rstrip(",;:-–— ")
    return cut + "…" + _closers(cut)


def _closers(text: str) -> str:
    """The closing marks of every quotation and bracket `text` leaves open, innermost first."""
    stack: list[str] = []
    closing = dict(_PAIRS)
    for ch in text:
        if ch == '"':
            if stack and stack[-1] == '"':
                stack.pop()
            else:
                stack.append('"')
        elif ch in closing:
            stack.append(closing[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
    return "".join(reversed(stack))[:4]


def _pair(first: object, connector: str, second: object) -> str:
    """“first” connector “second”, each title cut to its share so both quotes stay closed."""
    share = (tuning.EXPRESS_HEADLINE_MAX_CHARS - len(connector) - 6) // 2
    return f"“{fit(first, share)}” {connector} “{fit(second, share)}”"


def headline(candidate: Candidate) -> str:
    f = candidate.facts
    match candidate.kind:
        case "synthesis":
            projects = f.get("projects") or []
            named = candidate.cross_project and projects
            across = f" across {', '.join(map(str, projects))}" if named else ""
            lead = "New cross-project insight" if candidate.cross_project else "New insight"
            text = f"{lead}{across}: {clean(f.get('title'))}"
            if len(text) > tuning.EXPRESS_HEADLINE_MAX_CHARS:
                text = f"{lead}: {clean(f.get('title'))}"
            return fit(text)
        case "contradiction":
            return _pair(f.get("first"), "contradicts", f.get("second"))
        case "superseded":
            return _pair(f.get("first"), "was superseded by", f.get("second"))
        case "resurfaced":
            days = int(f.get("days") or 0)  # type: ignore[call-overload]
            return fit(f"Worth another look (unread for {days} days): {clean(f.get('title'))}")
        case "question":
            question = fit(f.get("question"))
            return fit(f"Open question: {question}")
        case "source":
            label = INBOX_KIND_LABELS.get(str(f.get("kind")), "source")
            return fit(f"New {label} in your inbox: {clean(f.get('title'))}")
        case "digest":
            counts: dict[str, int] = f.get("counts") or {}  # type: ignore[assignment]
            parts = [f"{n} {_KIND_WORDS.get(t, (t, t + 's'))[n != 1]}" for t, n in counts.items()]
            projects = int(f.get("projects") or 0)  # type: ignore[call-overload]
            where = f" across {projects} project{'s' if projects != 1 else ''}" if projects else ""
            return fit(f"Your week: {', '.join(parts[:4])}{where}")
    return fit(candidate.kind)


def detail(candidate: Candidate) -> str:
    """A second line: the note on an edge, or which task an unanswered prompt was in."""
    f = candidate.facts
    if candidate.kind in ("contradiction", "superseded") and f.get("note"):
        return fit(f["note"], 300)
    if candidate.kind == "question" and f.get("task"):
        return fit(f"Asked in “{clean(f['task'])}” and not answered yet.", 300)
    if candidate.kind == "source" and f.get("related"):
        return fit(f"Bears on “{clean(f['related'])}” ({clean(f.get('where'))}).", 300)
    if candidate.kind == "synthesis" and f.get("content"):
        return fit(f["content"], 300)
    return ""


def edit(candidates: list[Candidate]) -> list[EditedItem]:
    """Headline every candidate and order them: kind score, depth and cross-project bonus."""
    items = [EditedItem(c, headline(c), detail(c), round(c.base_score, 4)) for c in candidates]
    return sorted(items, key=lambda i: -i.score)
