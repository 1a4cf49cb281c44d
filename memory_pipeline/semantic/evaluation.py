"""Evaluation of the Task Semantic Pass on real sessions labelled by hand.

The gold set (`evaluation/real_sessions/gold.jsonl`, one session a line) names a session file
beside it, the format to read it with, the number of complete turns it must yield, and, per
session, written by hand before any rule was tuned on it:

- `segments`: the turn where each topic segment starts (the first is always 0) and one or more
  acceptable titles written from the turns' own words;
- `memories`: per turn, the decisions (a choice with its reason) and insights (something learned:
  a cause, a behaviour, a finding) it contains;
- `scaffolding`: strings of that session that are template text and must never be a title.

Each session is read with the production parser of its source (capture/codex, capture/claude_code;
`cctrace_markdown` and `claude_transcript_markdown` are markdown exports of a Claude Code session,
read by the same turn rules)
and run through the backend as ONE pass (every turn new, no tail). Measures:

- **Boundary F1.** A boundary is the turn a segment starts at (turn 0 excluded). A predicted
  boundary matches a gold one at most `BOUNDARY_TOLERANCE` turns away (each gold boundary matched
  once, nearest first). Micro-averaged over sessions; the exact-turn figure is printed beside it.
- **Titles.** A title is *scaffolding* (`is_scaffolding_title`) when it is a heading of the
  session's prompts, a labelled scaffolding string, a placeholder (`[...]`, `{{...}}`,
  `$ARGUMENTS`, "Turns 3-7"), a slash command, a tag, a checklist line, a file name alone or a bare
  template heading ("User Input", "Context"...). A title is *acceptable* when it is not
  scaffolding and shares a content word with an acceptable gold title of a gold segment it
  overlaps. Target: zero scaffolding titles.
- **Decisions and insights.** A distilled memory matches a gold item of the same type when the
  gold turn is among its supporting turns and at least `MEMORY_MIN_OVERLAP` of the gold
  statement's content words (`semantic.text.content_terms`: stemmed, no stopwords) are in the
  memory's title and content. Each gold item is matched once. Precision = matched memories /
  memories; recall = matched gold items / gold items.

Nothing is stored: the evaluation needs no database.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from memory_pipeline.capture.models import ParsedTurn
from memory_pipeline.errors import UserError
from memory_pipeline.semantic.errors import SemanticPassError
from memory_pipeline.semantic.models import PassInput, PassResult, SemanticBackend, TurnInput
from memory_pipeline.semantic.text import content_terms

REAL_SESSIONS_GOLD = (
    Path(__file__).resolve().parents[2] / "evaluation" / "real_sessions" / "gold.jsonl"
)
BOUNDARY_TOLERANCE = 1  # turns; part of the definition of the measure, not tuning
MEMORY_MIN_OVERLAP = 0.4  # share of a gold statement's content words found in the memory

Format = Literal["codex", "claude_code", "cctrace_markdown", "claude_transcript_markdown"]


class GoldSegment(BaseModel):
    first_turn: int
    titles: list[str] = Field(min_length=1)


class GoldMemory(BaseModel):
    turn: int
    type: Literal["decision", "insight"]
    text: str


class GoldSession(BaseModel):
    id: str
    path: str  # relative to the gold file's folder
    format: Format
    turns: int  # complete turns the parser must yield (guards against parser drift)
    segments: list[GoldSegment] = Field(min_length=1)
    memories: list[GoldMemory] = Field(default_factory=list)
    scaffolding: list[str] = Field(default_factory=list)


def load_gold(path: Path) -> list[GoldSession]:
    if not path.is_file():
        raise UserError(f"semantic gold set {path} not found")
    sessions = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            sessions.append(GoldSession.model_validate_json(line))
        except ValueError as exc:
            raise UserError(f"{path}:{n}: not a gold session ({exc.__class__.__name__})") from exc
    return sessions


# --- reading a session -------------------------------------------------------------------------


def read_turns(session: GoldSession, base: Path) -> list[ParsedTurn]:
    path = base / session.path
    if not path.is_file():
        raise UserError(f"session file {path} not found (gold session {session.id})")
    if session.format == "cctrace_markdown":
        return cctrace_markdown_turns(path.read_text(encoding="utf-8"))
    if session.format == "claude_transcript_markdown":
        return claude_transcript_markdown_turns(path.read_text(encoding="utf-8"))
    if session.format == "codex":
        from memory_pipeline.capture.codex.connector import CodexConnector

        result = CodexConnector(path.parent).parse(path)
    else:
        from memory_pipeline.capture.claude_code.connector import ClaudeCodeConnector

        result = ClaudeCodeConnector(path.parent, settle_after=timedelta(0)).parse(path)
    if not result.tasks:
        raise UserError(f"{path} holds no task (gold session {session.id})")
    return result.tasks[0].turns


_MD_BLOCK = re.compile(r"\n---\n\n\*\*\[[^\]]+\]\*\*\n\n### (👤 User|🤖 Assistant[^\n]*)\n")
_MD_DETAILS = re.compile(r"<details>.*?</details>", re.S)
_MD_TOOL = "🔧 **Tool Use"
_MD_RESULT = "📊 **Tool Result"
_MD_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)


def cctrace_markdown_turns(text: str) -> list[ParsedTurn]:
    """Turns of a cctrace markdown export (`conversation_full.md`), by the Claude Code turn rules
    (capture/claude_code/turns.py): a turn starts at a typed prompt or a slash command (the
    command's expanded template right after it is harness text, like an `isMeta` record); an
    interrupted turn is skipped; the outcome is the assistant text after the turn's last tool use.
    """
    parts = _MD_BLOCK.split(text)
    blocks = [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]
    turns: list[ParsedTurn] = []
    prompt: str | None = None
    texts: list[str] = []
    interrupted = False
    after_command = False

    def close() -> None:
        if prompt is not None and texts and not interrupted:
            turns.append(ParsedTurn(ordinal=len(turns), prompt=prompt, outcome="\n\n".join(texts)))

    for head, body in blocks:
        if head.startswith("👤"):
            if body.startswith(_MD_RESULT):
                continue
            if body.startswith("[Request interrupted by user"):
                interrupted = True
                continue
            if after_command and not texts:
                after_command = False  # the command's expanded template
                continue
            close()
            command = _MD_COMMAND.search(body)
            prompt = command.group(1).strip() if command else body
            after_command = bool(command)
            texts, interrupted = [], False
        else:
            after_command = False
            body = _MD_DETAILS.sub("", body).strip()
            if body.startswith(_MD_TOOL):
                texts = []
            elif body:
                texts.append(body)
    close()
    return turns


_CT_PROMPT = "> [!IMPORTANT]"
_CT_WARNING = "> [!WARNING]"
_CT_COMMAND = re.compile(r"^`(/[^`\s]+)`\\?$")
_CT_TOOL = re.compile(r"^[^\w\s`>#*(\[-]{1,3}\s?\*\*[^*]+\*\*")
_CT_ELIDED = re.compile(r"^(?:\.\.\. \+\d+ lines|\(\[view file\])")
_CT_SUMMARY = "This session is being continued from a previous conversation"


def claude_transcript_markdown_turns(text: str) -> list[ParsedTurn]:
    """Turns of a claude-transcript markdown export (kiliman/claude-transcript: prompts are
    `> [!IMPORTANT]` quotes, tool uses are emoji-led bold lines with their output fenced after
    them), by the Claude Code turn rules as in `cctrace_markdown_turns`: a typed prompt or a slash
    command starts a turn; a turn with no assistant text (a local command such as `/clear`) or
    interrupted (`[Request interrupted by user]`) is skipped; a compaction summary is harness text
    and continues the turn in progress; the outcome is the assistant text after the last tool use.
    """
    turns: list[ParsedTurn] = []
    prompt: str | None = None
    texts: list[str] = []
    interrupted = False
    lines = text.splitlines()
    i = 0

    def close() -> None:
        if prompt is not None and texts and not interrupted:
            turns.append(ParsedTurn(ordinal=len(turns), prompt=prompt, outcome="\n\n".join(texts)))

    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            texts.append("\n".join(paragraph).strip())
            paragraph.clear()

    in_tool = False
    while i < len(lines):
        line = lines[i]
        if line.strip() in (_CT_PROMPT, _CT_WARNING):
            flush()
            quoted = []
            i += 1
            while i < len(lines) and lines[i].startswith(">"):
                quoted.append(lines[i][1:].removeprefix(" "))
                i += 1
            body = "\n".join(quoted).strip()
            if line.strip() == _CT_WARNING:
                if body.startswith("[Request interrupted by user"):
                    interrupted = True
                continue
            if body.startswith(_CT_SUMMARY) or (prompt is None and not body):
                continue
            close()
            command = _CT_COMMAND.match(body.splitlines()[0]) if body else None
            prompt = command.group(1) if command else body
            texts, interrupted, in_tool = [], False, False
            continue
        if prompt is None:
            i += 1
            continue
        if line.startswith("```"):
            flush()
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                i += 1
            i += 1
            continue
        if _CT_TOOL.match(line):
            paragraph.clear()
            texts, in_tool = [], True
        elif not line.strip():
            flush()
            in_tool = False
        elif not in_tool and not _CT_ELIDED.match(line):
            paragraph.append(line)
        i += 1
    flush()
    close()
    return turns


# --- scaffolding titles ------------------------------------------------------------------------

_GENERIC_HEADINGS = frozenset(
    """user input context outline instructions instruction summary overview task tasks goal goals
    notes note checklist status requirements requirement steps step plan background description
    details detail prompt arguments input output example examples template section""".split()  # noqa: SIM905
)
_PLACEHOLDER = re.compile(r"\[[^\]]{1,60}\]|\{\{|\$[A-Z_]{3,}|^turns? \d+(?:\s*[-–]\s*\d+)?$", re.I)
_FILE_ALONE = re.compile(r"^`?[\w.~/-]*\w\.[A-Za-z0-9]{1,5}`?$|^`[^`]+`$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _norm(text: str) -> str:
    return re.sub(r"[^\w\s]", "", text.lower()).strip()


def is_scaffolding_title(title: str, prompts: list[str], labelled: list[str]) -> bool:
    """Whether `title` is template text rather than what happened (module docstring)."""
    t = title.strip()
    norm = _norm(t)
    if not norm:
        return True
    if t.startswith(("/", "<", "- [", "* [", "[")) or _PLACEHOLDER.search(t):
        return True
    if _FILE_ALONE.match(t):
        return True
    words = norm.split()
    if all(w in _GENERIC_HEADINGS for w in words):
        return True
    for prompt in prompts:
        for heading in _HEADING.findall(prompt):
            if _norm(heading) == norm:
                return True
    for text in labelled:
        known = _norm(text)
        if known and (known in norm or (len(words) >= 3 and norm in known)):
            return True
    return False


# --- measures ----------------------------------------------------------------------------------


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: Counts) -> None:
        self.tp, self.fp, self.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        d = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / d if d else None


def match_boundaries(predicted: list[int], gold: list[int], tolerance: int) -> Counts:
    """One-to-one matching, nearest pairs first."""
    pairs = sorted((abs(p - g), p, g) for p in predicted for g in gold if abs(p - g) <= tolerance)
    used_p: set[int] = set()
    used_g: set[int] = set()
    for _, p, g in pairs:
        if p not in used_p and g not in used_g:
            used_p.add(p)
            used_g.add(g)
    return Counts(tp=len(used_p), fp=len(predicted) - len(used_p), fn=len(gold) - len(used_g))


class SessionReport(BaseModel):
    id: str
    turns: int
    gold_boundaries: list[int]
    predicted_boundaries: list[int]
    titles: list[str]
    scaffolding_titles: list[str]
    unacceptable_titles: list[str]
    memories: list[dict[str, object]]  # type, title, turns, matched (gold text or None)
    missed: list[dict[str, object]]  # gold items no memory matched


class SemanticEvalReport(BaseModel):
    backend: str
    sessions: int
    turns: int
    boundary_tolerance: int
    boundary_precision: float | None
    boundary_recall: float | None
    boundary_f1: float | None
    boundary_f1_exact: float | None
    titles: int
    scaffolding_titles: int
    acceptable_titles: int
    memory_scaffolding_titles: int
    by_type: dict[str, dict[str, float | int | None]]
    # Sessions whose pass failed (a model's invalid answer, a timeout): "<id>: <error>". They
    # count as finding nothing, so a failing model is not measured on its successes alone.
    failed_sessions: list[str] = Field(default_factory=list)
    per_session: list[SessionReport]


def _overlap(gold: str, memory_text: str) -> float:
    g = set(content_terms(gold))
    if not g:
        return 0.0
    return len(g & set(content_terms(memory_text))) / len(g)


def evaluate_session(
    session: GoldSession, turns: list[ParsedTurn], result: PassResult
) -> tuple[SessionReport, Counts, Counts, dict[str, Counts], int]:
    """Per-session report, boundary counts (tolerant, exact), memory counts by type, and the
    number of distilled memories whose title is scaffolding."""
    prompts = [t.prompt for t in turns]
    gold_b = [s.first_turn for s in session.segments if s.first_turn > 0]
    pred_b = [s.first_ordinal for s in result.segments if s.first_ordinal > 0]
    tolerant = match_boundaries(pred_b, gold_b, BOUNDARY_TOLERANCE)
    exact = match_boundaries(pred_b, gold_b, 0)

    gold_starts = [s.first_turn for s in session.segments]
    gold_ends = [*[s - 1 for s in gold_starts[1:]], len(turns) - 1]
    titles, scaffolding, unacceptable = [], [], []
    for seg in result.segments:
        titles.append(seg.title)
        if is_scaffolding_title(seg.title, prompts, session.scaffolding):
            scaffolding.append(seg.title)
            continue
        overlapping = [
            g
            for g, start, end in zip(session.segments, gold_starts, gold_ends, strict=True)
            if start <= seg.last_ordinal and seg.first_ordinal <= end
        ]
        words = set(content_terms(seg.title))
        if not any(words & set(content_terms(t)) for g in overlapping for t in g.titles):
            unacceptable.append(seg.title)

    by_type = {"decision": Counts(), "insight": Counts()}
    matched_gold: set[int] = set()
    memories: list[dict[str, object]] = []
    memory_scaffolding = 0
    for seg in result.segments:
        for mem in seg.memories:
            if is_scaffolding_title(mem.title, prompts, session.scaffolding):
                memory_scaffolding += 1
            text = f"{mem.title} {mem.content}"
            best: tuple[float, int] | None = None
            for gi, g in enumerate(session.memories):
                if gi in matched_gold or g.type != mem.type:
                    continue
                if g.turn not in mem.supporting_ordinals:
                    continue
                share = _overlap(g.text, text)
                if share >= MEMORY_MIN_OVERLAP and (best is None or share > best[0]):
                    best = (share, gi)
            counts = by_type[mem.type]
            if best is None:
                counts.fp += 1
            else:
                counts.tp += 1
                matched_gold.add(best[1])
            memories.append(
                {
                    "type": mem.type,
                    "title": mem.title,
                    "turns": mem.supporting_ordinals,
                    "matched": session.memories[best[1]].text if best else None,
                }
            )
    missed = []
    for gi, g in enumerate(session.memories):
        if gi not in matched_gold:
            by_type[g.type].fn += 1
            missed.append(g.model_dump())
    report = SessionReport(
        id=session.id,
        turns=len(turns),
        gold_boundaries=gold_b,
        predicted_boundaries=pred_b,
        titles=titles,
        scaffolding_titles=scaffolding,
        unacceptable_titles=unacceptable,
        memories=memories,
        missed=missed,
    )
    return report, tolerant, exact, by_type, memory_scaffolding


def pass_input(session: GoldSession, turns: list[ParsedTurn]) -> PassInput:
    source = "codex" if session.format == "codex" else "claude_code"
    return PassInput(
        task_title=None,
        source=source,
        new_turns=[
            TurnInput(
                ordinal=t.ordinal, prompt=t.prompt, outcome=t.outcome, started_at=t.started_at
            )
            for t in turns
        ],
    )


def evaluate(
    gold_path: Path,
    backend: SemanticBackend,
    progress: Callable[[str], None] | None = None,
) -> SemanticEvalReport:
    sessions = load_gold(gold_path)
    tolerant, exact = Counts(), Counts()
    by_type = {"decision": Counts(), "insight": Counts()}
    reports: list[SessionReport] = []
    failed: list[str] = []
    memory_scaffolding = 0
    for session in sessions:
        turns = read_turns(session, gold_path.parent)
        if len(turns) != session.turns:
            raise UserError(
                f"gold session {session.id}: the parser read {len(turns)} turns, the labels "
                f"are for {session.turns}; relabel it or fix the parser"
            )
        if progress:
            progress(f"semantic eval: {session.id} ({len(turns)} turns)")
        try:
            result = backend.run(pass_input(session, turns))
        except SemanticPassError as exc:
            failed.append(f"{session.id}: {exc}")
            result = PassResult(segments=[])
        report, t, e, kinds, ms = evaluate_session(session, turns, result)
        tolerant.add(t)
        exact.add(e)
        for kind, counts in kinds.items():
            by_type[kind].add(counts)
        memory_scaffolding += ms
        reports.append(report)
    titles = sum(len(r.titles) for r in reports)
    scaffolding = sum(len(r.scaffolding_titles) for r in reports)
    unacceptable = sum(len(r.unacceptable_titles) for r in reports)
    return SemanticEvalReport(
        backend=backend.name,
        sessions=len(reports),
        turns=sum(r.turns for r in reports),
        boundary_tolerance=BOUNDARY_TOLERANCE,
        boundary_precision=tolerant.precision,
        boundary_recall=tolerant.recall,
        boundary_f1=tolerant.f1,
        boundary_f1_exact=exact.f1,
        titles=titles,
        scaffolding_titles=scaffolding,
        acceptable_titles=titles - scaffolding - unacceptable,
        memory_scaffolding_titles=memory_scaffolding,
        by_type={
            kind: {
                "gold": c.tp + c.fn,
                "distilled": c.tp + c.fp,
                "matched": c.tp,
                "precision": c.precision,
                "recall": c.recall,
            }
            for kind, c in by_type.items()
        },
        failed_sessions=failed,
        per_session=reports,
    )


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "  -  "
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def report_table(report: SemanticEvalReport) -> str:
    lines = [
        f"Semantic pass on real sessions ({report.backend}): {report.sessions} sessions, "
        f"{report.turns} turns",
        f"  segment boundaries (±{report.boundary_tolerance} turn): "
        f"P {_fmt(report.boundary_precision)}  R {_fmt(report.boundary_recall)}  "
        f"F1 {_fmt(report.boundary_f1)}   (exact turn: F1 {_fmt(report.boundary_f1_exact)})",
        f"  titles: {report.acceptable_titles}/{report.titles} acceptable, "
        f"{report.scaffolding_titles} scaffolding"
        f"; distilled memories titled with scaffolding: {report.memory_scaffolding_titles}",
    ]
    for kind, m in report.by_type.items():
        lines.append(
            f"  {kind}s: precision {_fmt(m['precision'])}  recall {_fmt(m['recall'])}  "
            f"({m['matched']} matched of {m['distilled']} distilled, {m['gold']} gold)"
        )
    if report.failed_sessions:
        lines.append(
            f"  the pass failed on {len(report.failed_sessions)} of {report.sessions} sessions "
            f"(counted as finding nothing): {report.failed_sessions[0]}"
        )
    return "\n".join(lines)


def comparison_line(offline: SemanticEvalReport, model: SemanticEvalReport) -> str:
    """What the model adds over the offline rules, in the measures' own terms."""

    def delta(a: float | int | None, b: float | int | None) -> str:
        if a is None or b is None:
            return "  -  "
        return f"{b - a:+.2f}"

    parts = [f"boundary F1 {delta(offline.boundary_f1, model.boundary_f1)}"]
    for kind in ("decision", "insight"):
        o, m = offline.by_type[kind], model.by_type[kind]
        parts.append(
            f"{kind} precision {delta(o['precision'], m['precision'])} "
            f"recall {delta(o['recall'], m['recall'])}"
        )
    return f"What {model.backend} adds over the offline rules: " + ", ".join(parts)
