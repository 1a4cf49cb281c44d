"""Memory class, depth score and encoding context for every stored memory: pure, documented rules.

Memory types: `segment` (a topic segment, always stored), `decision`, `insight` (distilled) and
`correction` (a user correction episode). `topic_segment` and `correction_episode` are accepted as
aliases.

- `mem_class`: *episodic* (what happened in one session), *semantic* (a durable fact or choice),
  *procedural* (how to do something).
- `depth_score`: 0..1, how much a memory carries beyond its words - the reason behind it, the
  concrete details that make it actionable, and whether it is long enough to stand alone.
- `encoding_context`: a short string naming where and under which topic a memory was formed; the
  search side matches it against the query's own context (encoding specificity).
"""

from __future__ import annotations

import re

from memory_pipeline import tuning
from memory_pipeline.models.sources import SOURCES
from memory_pipeline.semantic.text import normalize_ws, trim_words

MemClass = str  # "semantic" | "episodic" | "procedural"

_ALIASES = {"topic_segment": "segment", "correction_episode": "correction"}
_TYPES = ("segment", "decision", "insight", "correction")

# Imperative verbs that open a step of a procedure.
_IMPERATIVE = (
    r"run|install|use|add|set|call|create|open|restart|delete|remove|execute|configure|pass|"
    r"export|build|deploy|start|stop|enable|disable|upgrade|pin|clone|copy|move|rename|edit|"
    r"update|invoke|launch|mount|source|activate|apply|migrate|rebuild|reinstall|clear|kill"
)
# The text opens with an imperative verb ("Run `make dev` before ..."); `use` is left out because
# "Use X instead of Y because Z" is how a choice is phrased, not a procedure.
_OPENING_IMPERATIVE = re.compile(
    rf"^\W*(?:always |first,? |then |just )?(?:{_IMPERATIVE.replace('use|', '')})\b",
    re.IGNORECASE,
)
# ...unless it is phrased as a choice between alternatives.
_CHOICE = re.compile(r"\binstead of\b|\brather than\b|\bover\b|\bbecause\b", re.IGNORECASE)
_PROCEDURE_PATTERNS = [
    re.compile(p, re.IGNORECASE | re.MULTILINE)
    for p in (
        # "to do X, run/use/set ..." - a recipe.
        rf"\bto [a-z]+(?: [\w`.-]+){{0,6}},\s*(?:you (?:need to|must|should|can) )?"
        rf"(?:{_IMPERATIVE})\b",
        # A command in backticks.
        r"`\s*(?:\$ )?(?:pip|uv|npm|npx|pnpm|yarn|git|make|docker|kubectl|cargo|go|python3?|"
        r"pytest|ruff|brew|apt(?:-get)?|curl|psql|ollama|dagster|bash|sh|export|cd)\b[^`]*`",
        # Numbered or sequenced steps.
        r"^\s*(?:\d+[.)]|step \d+)\s+\w",
        r"\bfirst\b[^.]{0,80}\bthen\b",
    )
]

_REASON = re.compile(tuning.REASON_IN_SENTENCE, re.IGNORECASE)
_SPECIFICITY = {
    # Identifiers: snake_case, camelCase, dotted paths, file names with an extension.
    "identifier": re.compile(
        r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b|\b\w+\.(?:py|ts|js|rs|go|sql|toml|"
        r"ya?ml|json|md|sh|cfg|ini|lock)\b|\b\w+(?:\.\w+){2,}\b"
    ),
    # Numbers with meaning: versions, sizes, durations, counts (not a lone ordinal like "1").
    "number": re.compile(
        r"\b\d+(?:\.\d+)+\b|\b\d+\s?(?:ms|s|sec|min|h|kb|mb|gb|%|x|px)\b|\b\d{2,}\b"
    ),
    "code": re.compile(r"`[^`]+`"),
    "error": re.compile(
        r"\b\w*(?:Error|Exception)\b|\btraceback\b|\berror:|\bexit code\b|\bsegfault\b|\bpanic\b"
        r"|\bHTTP [45]\d\d\b|\b[45]\d\d (?:error|status)\b",
        re.IGNORECASE,
    ),
}

_SOURCE_LABELS = {s.name: s.described for s in SOURCES}


def _normalize_type(memory_type: str) -> str:
    t = _ALIASES.get(memory_type, memory_type)
    if t not in _TYPES:
        raise ValueError(f"unknown memory type {memory_type!r}; expected one of {_TYPES}")
    return t


def is_procedural(text: str) -> bool:
    """True when `text` describes how to do something (imperative steps, commands, recipes)."""
    if _OPENING_IMPERATIVE.search(text) and not _CHOICE.search(text):
        return True
    return any(p.search(text) for p in _PROCEDURE_PATTERNS)


def mem_class(memory_type: str, text: str) -> MemClass:
    """The memory's class.

    - segment, correction -> episodic: they record what happened in one session (why: a segment
      is the raw conversation and a correction is attributed to one moment, not a general truth).
    - decision, insight -> procedural when the text is a how-to (why: "run `make migrate` before
      deploying" is retrieved for "how do I ..." queries and ranked as a skill, not a fact).
    - decision, insight otherwise -> semantic (why: a choice or a lesson with its reason outlives
      the session that produced it).
    """
    t = _normalize_type(memory_type)
    if t in ("segment", "correction"):
        return "episodic"
    return "procedural" if is_procedural(text) else "semantic"


def depth_score(memory_type: str, text: str) -> float:
    """A 0..1 depth score, the sum of four documented parts, clamped and rounded to 3 places.

    - base by type (`tuning.DEPTH_BASE`): distilled decisions and insights start highest (why:
      they are already the point of a conversation), corrections next (a user's stated
      expectation), raw segments lowest (mostly context).
    - + `DEPTH_REASON_BONUS` when a reason clause is present ("because", "so that", "to avoid"...)
      (why: a memory that says why can be applied to a new situation; one without cannot).
    - + `DEPTH_SPECIFICITY_STEP` per kind of concrete detail - identifiers, meaningful numbers,
      inline code, error messages - capped at `DEPTH_SPECIFICITY_CAP` (why: specifics make a
      memory verifiable and findable; vague ones are rarely actionable).
    - length band: fewer than `DEPTH_SHORT_WORDS` words -> -`DEPTH_SHORT_PENALTY` (why: too thin
      to stand alone); within `DEPTH_GOOD_WORDS` -> +`DEPTH_GOOD_BONUS` (why: a sentence to a
      paragraph is the most reusable size); longer -> 0 (why: length alone is not depth).
    """
    t = _normalize_type(memory_type)
    text = normalize_ws(text)
    score = tuning.DEPTH_BASE[t]
    if _REASON.search(text):
        score += tuning.DEPTH_REASON_BONUS
    kinds = sum(1 for p in _SPECIFICITY.values() if p.search(text))
    score += min(tuning.DEPTH_SPECIFICITY_CAP, kinds * tuning.DEPTH_SPECIFICITY_STEP)
    words = len(text.split())
    low, high = tuning.DEPTH_GOOD_WORDS
    if words < tuning.DEPTH_SHORT_WORDS:
        score -= tuning.DEPTH_SHORT_PENALTY
    elif low <= words <= high:
        score += tuning.DEPTH_GOOD_BONUS
    return round(min(1.0, max(0.0, score)), 3)


def encoding_context(
    source: str, task_title: str | None, segment_title: str | None, project: str | None
) -> str:
    """Return "<source> · project: <p> · task: <task> · topic: <segment>" (empty parts skipped).

    Why each part: the source says which tool the memory was formed in (queries from the same tool
    match it), the project and task name the work, the topic names the segment. The topic is
    omitted when it repeats the task title, and every part is trimmed to
    `ENCODING_CONTEXT_PART_CHARS` so the string stays a short matching key, not a summary.
    """
    n = tuning.ENCODING_CONTEXT_PART_CHARS
    parts = [_SOURCE_LABELS.get(source, source)]
    if project and project.strip():
        parts.append(f"project: {trim_words(project, n)}")
    task = trim_words(task_title, n) if task_title and task_title.strip() else ""
    topic = trim_words(segment_title, n) if segment_title and segment_title.strip() else ""
    if task:
        parts.append(f"task: {task}")
    if topic and topic.casefold() != task.casefold():
        parts.append(f"topic: {topic}")
    return " · ".join(parts)
