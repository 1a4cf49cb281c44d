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

    @property
    def ordinal(self) -> int:
        return self.turn.ordinal
