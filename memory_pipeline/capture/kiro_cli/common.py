"""Leaf helpers shared by the Kiro CLI and Kiro IDE connectors.

* `read_document`: a JSON document read whole (a SQLite row value, a session sidecar, an IDE
  session file), size-capped and checked for a torn read (the file changed while it was read).
* `TurnBuilder`: prompts and visible answers in native order -> complete `ParsedTurn`s.

Field helpers (`string`, `parse_time`, `bounded`, ...) are the Codex connector's, which every
connector's trust boundary uses the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.capture.codex.fields import exception_detail
from memory_pipeline.capture.files import read_json_document
from memory_pipeline.capture.models import ParsedTurn, ParseIssue
from memory_pipeline.capture.protocol import issue as issue
from memory_pipeline.tuning import KIRO_DOCUMENT_MAX_BYTES


def loads(raw: bytes | str) -> tuple[Any, str | None]:
    """json.loads that never raises: (value, None) or (None, why)."""
    try:
        return json.loads(raw), None
    except RecursionError:
        return None, "too_deep"
    except (ValueError, TypeError) as exc:  # JSONDecodeError, UnicodeDecodeError
        return None, exception_detail(exc)


def read_document(path: Path) -> tuple[Any, list[ParseIssue]]:
    """The JSON document in `path`, read whole, or None and the issue why.

    The file is stat'ed before and after the read: a file rewritten meanwhile (Kiro rewrites
    these documents in place) gives one `changed_while_reading` issue and no value, never half a
    document; the next look reads it again.
    """
    value, problem = read_json_document(path, KIRO_DOCUMENT_MAX_BYTES)
    return value, ([] if problem is None else [problem])


@dataclass
class OpenTurn:
    prompt: str
    native_turn_id: str | None = None
    started_at: datetime | None = None
    answer: str | None = None  # the latest visible answer text seen so far
    completed_at: datetime | None = None
    message_ids: list[str] = field(default_factory=list)
    done: bool = False  # the source marks the turn finished (not just "a later prompt came")


class TurnBuilder:
    """Prompts and answers in native order -> complete turns.

    A turn is complete when it has a visible answer and either the source marks it finished
    (`finish`) or a later prompt follows it. A prompt that a later prompt follows without any
    answer is dropped (nothing was answered: an interrupted or cancelled request). The last
    turn, when it has no finish mark (or no answer yet), is the unfinished turn that waits.
    """

    def __init__(self) -> None:
        self.turns: list[ParsedTurn] = []
        self.open: OpenTurn | None = None
        self.dropped = 0  # prompts superseded without an answer

    def prompt(
        self,
        text: str,
        native_turn_id: str | None = None,
        at: datetime | None = None,
        message_id: str | None = None,
    ) -> None:
        self._close()
        self.open = OpenTurn(prompt=text, native_turn_id=native_turn_id, started_at=at)
        if message_id:
            self.open.message_ids.append(message_id)

    def answer(self, text: str, at: datetime | None = None, message_id: str | None = None) -> None:
        """A visible answer text of the open turn (the last one given is the final answer)."""
        if self.open is None:
            return
        if text.strip():
            self.open.answer = text
            if at is not None:
                self.open.completed_at = at
        if message_id:
            self.open.message_ids.append(message_id)

    def finish(self, at: datetime | None = None) -> None:
        if self.open is not None:
            self.open.done = True
            if at is not None:
                self.open.completed_at = at

    def drop(self) -> None:
        """Forget the open turn: what it holds cannot be trusted to be its own."""
        if self.open is not None:
            self.dropped += 1
        self.open = None

    def _close(self) -> None:
        turn, self.open = self.open, None
        if turn is None:
            return
        if turn.answer is None:
            self.dropped += 1
            return
        self._emit(turn)

    def _emit(self, turn: OpenTurn) -> None:
        self.turns.append(
            ParsedTurn(
                ordinal=len(self.turns),
                native_turn_id=turn.native_turn_id,
                prompt=turn.prompt,
                outcome=turn.answer or "",
                started_at=turn.started_at,
                completed_at=turn.completed_at,
                native_message_ids=list(dict.fromkeys(turn.message_ids)),
            )
        )

    def result(self) -> tuple[list[ParsedTurn], bool]:
        """(complete turns, whether an unfinished last turn waits)."""
        turn = self.open
        if turn is not None and turn.done and turn.answer is not None:
            self.open = None
            self._emit(turn)
            return self.turns, False
        return self.turns, turn is not None
