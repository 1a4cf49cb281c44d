"""The Task Semantic Pass contract shared by both backends (Ollama and offline rules).

A backend receives the prior tail segment as read-only context plus the new complete turns of one
task revision, and returns topic segments with their distilled memories and any correction
episodes. `validate_result` is the single gate every backend's output passes before storage.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, Field


class TurnInput(BaseModel):
    ordinal: int
    prompt: str
    outcome: str
    started_at: datetime | None = None
    # Who spoke (as stored on the turn), so the offline rules embed the turn exactly as its
    # passage renders it and the passage step reuses that vector (embedding/reuse.py). Left out
    # of dumps: the pass input's stored hash and the model prompt do not change.
    prompt_speaker: str | None = Field(default=None, exclude=True)
    outcome_speaker: str | None = Field(default=None, exclude=True)


class PassInput(BaseModel):
    task_title: str | None = None
    source: str
    # Turns of the prior tail segment (already processed): context only, never re-distilled.
    tail_context: list[TurnInput] = Field(default_factory=list)
    new_turns: list[TurnInput]
    # People talking to each other, no AI side (a chat import read by the speaker rule): the
    # other side is not an agent, so nothing it said is corrected work, and the rules read only
    # what was said as a decision or a finding (offline_rules/distill.py). Left out of dumps.
    between_people: bool = Field(default=False, exclude=True)


class DistilledMemory(BaseModel):
    type: Literal["decision", "insight"]
    title: str = Field(min_length=1, max_length=200)
    # What was decided or learned and why, as a sentence that stands on its own.
    content: str = Field(min_length=1, max_length=4000)
    supporting_ordinals: list[int] = Field(min_length=1)
    # Questions this memory answers; indexed with the title at full-text weight A.
    questions: list[str] = Field(default_factory=list, max_length=5)


class CorrectionEpisode(BaseModel):
    """The user specifically corrected a prior visible agent outcome."""

    correcting_ordinal: int  # the turn whose prompt is the user's correction
    corrected_ordinal: int  # the earlier turn whose outcome was corrected
    title: str = Field(min_length=1, max_length=200)
    agent_did: str = Field(min_length=1, max_length=2000)
    user_expected: str = Field(min_length=1, max_length=2000)


class Segment(BaseModel):
    first_ordinal: int
    last_ordinal: int
    # Only the first segment may set this: it extends the prior tail segment instead of
    # starting a new one (its first_ordinal is then the tail's first ordinal).
    continues_tail: bool = False
    title: str = Field(min_length=1, max_length=200)
    # Set only when the turns clearly establish the subject; `project_evidence` must quote the
    # turn text that does. Native cwd or repository never count.
    project: str | None = None
    project_evidence: str | None = None
    memories: list[DistilledMemory] = Field(default_factory=list)


class PassResult(BaseModel):
    segments: list[Segment]
    corrections: list[CorrectionEpisode] = Field(default_factory=list)


class InvalidPassOutput(ValueError):
    """A backend returned something that violates the contract; the whole pass fails."""


class SemanticBackend(Protocol):
    name: str  # "ollama:<model>" or "offline-rules"

    def run(self, pass_input: PassInput) -> PassResult: ...


def validate_result(pass_input: PassInput, result: PassResult) -> PassResult:
    """Check structural rules no schema can express. Raises InvalidPassOutput."""
    new = [t.ordinal for t in pass_input.new_turns]
    if not new:
        raise InvalidPassOutput("pass has no new turns")
    tail = [t.ordinal for t in pass_input.tail_context]
    if not result.segments:
        raise InvalidPassOutput("no segments returned")
    expected_start = new[0]
    for i, seg in enumerate(result.segments):
        if seg.continues_tail:
            if i != 0 or not tail:
                raise InvalidPassOutput("only the first segment can continue the tail")
            if seg.first_ordinal != tail[0]:
                raise InvalidPassOutput("a tail continuation must start at the tail's first turn")
        elif seg.first_ordinal != expected_start:
            raise InvalidPassOutput(
                f"segment {i} starts at {seg.first_ordinal}, expected {expected_start}"
            )
        if seg.last_ordinal < max(seg.first_ordinal, expected_start):
            raise InvalidPassOutput(f"segment {i} ends before it starts")
        expected_start = seg.last_ordinal + 1
        for mem in seg.memories:
            bad = [
                o for o in mem.supporting_ordinals if not seg.first_ordinal <= o <= seg.last_ordinal
            ]
            if bad:
                raise InvalidPassOutput(
                    f"memory {mem.title!r} cites turns {bad} outside its segment"
                )
            if not any(o >= new[0] for o in mem.supporting_ordinals):
                raise InvalidPassOutput(
                    f"memory {mem.title!r} rests only on already processed turns"
                )
        if seg.project and not seg.project_evidence:
            raise InvalidPassOutput(f"segment {i} names project {seg.project!r} without evidence")
    if expected_start != new[-1] + 1:
        raise InvalidPassOutput(f"segments end at {expected_start - 1}, expected {new[-1]}")
    known = set(tail) | set(new)
    for c in result.corrections:
        if c.correcting_ordinal not in new or c.corrected_ordinal not in known:
            raise InvalidPassOutput("correction cites unknown turns")
        if c.corrected_ordinal >= c.correcting_ordinal:
            raise InvalidPassOutput("a correction must follow the outcome it corrects")
    return result
