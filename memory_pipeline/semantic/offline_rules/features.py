"""What the rules know of one turn: its content words, tf-idf vector and cues."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_pipeline.semantic.models import (
    TurnInput,
)


@dataclass
class RuleTurn:
    turn: TurnInput
    is_tail: bool
    prompt_terms: list[str]
    vec: dict[str, float] = field(default_factory=dict)  # normalized tf-idf
    shift_cue: bool = False
    continuation_cue: bool = False
    correction_cue: bool = False
    # The prompt without scaffolding (scaffolding.subject_text): what titles and topics read.
    subject: str = ""
    # A new request or problem report that refers to nothing said (segment.py, purpose rule).
    new_request: bool = False
    # ... of which a problem report ("any idea why", "X is broken").
    problem_report: bool = False
    # A question that refers to nothing said.
    new_question: bool = False
    # The prompt refers back (a follow-up, a paste, "this change", "still no").
    follow_up: bool = False
    # ... by its words ("this change", "still no"), and by pasting output.
    refers_back: bool = False
    pasted: bool = False
    # This turn opens a segment by the purpose rule or the maximum span (never merged away).
    opens_purpose: bool = False

    @property
    def ordinal(self) -> int:
        return self.turn.ordinal
