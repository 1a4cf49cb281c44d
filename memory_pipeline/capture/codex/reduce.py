"""Events -> turns: the turn reducer of one rollout (notes §1.9).

`Reducer` folds the event stream into turns, tracks forks (notes §1.3) and remembers the thread's
own `session_meta`, model and `thread_name_updated` events. `reduce_file` drives it over a file
and isolates every line: whatever one record does wrong becomes a `bad_record` issue with its line
number and the exception's type, and the rest of the file is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memory_pipeline.capture.codex.fields import (
    exception_detail,
    integer,
    ms,
    parse_time,
    uuid7_ms,
    uuid_from_name,
)
from memory_pipeline.capture.codex.normalise import Event, Normaliser
from memory_pipeline.capture.codex.records import ThreadStart, iter_records, meta_id
from memory_pipeline.capture.codex.text import clean_outcome
from memory_pipeline.capture.jsonl import SKIPPED_LINE_REASONS, JsonlRead
from memory_pipeline.capture.models import ParsedTurn, ParseIssue
from memory_pipeline.tuning import CODEX_COPY_BURST_GAP_SECONDS

TurnStatus = Literal["open", "completed", "aborted", "failed", "superseded", "incomplete"]


@dataclass
class Msg:
    text: str
    line: int
    ts: datetime | None
    msg_id: str | None = None
    phase: str | None = None


@dataclass
class Turn:
    turn_id: str
    explicit: bool  # opened by task_started (else an implicit turn of an older rollout)
    inherited: bool  # part of a fork's copy of its parent (notes §1.3)
    started_at: datetime | None
    status: TurnStatus = "open"
    completed_at: datetime | None = None
    prompts: list[Msg] = field(default_factory=list)  # user_message events / legacy items
    item_prompts: list[Msg] = field(default_factory=list)  # item_completed UserMessage
    agent: list[Msg] = field(default_factory=list)  # agent_message events + AgentMessage items
    assistant: list[Msg] = field(default_factory=list)  # role:assistant response_items
    last_agent_message: str | None = None
    trailing_activity: bool = False  # agent work seen after the last non-commentary answer

    def prompt(self) -> str:
        msgs = self.prompts or self.item_prompts
        return "\n\n".join(m.text for m in msgs if m.text).strip()

    def prompt_ids(self) -> list[str]:
        return [m.msg_id for m in (self.prompts or self.item_prompts) if m.msg_id]

    def has_content(self) -> bool:
        return bool(self.prompts or self.item_prompts or self.agent or self.assistant)

    def outcome(self) -> tuple[str, Msg | None]:
        """The final visible answer (notes §1.9), never commentary, reasoning or tool output.

        1. task_complete.last_agent_message; 2. the last agent message with phase final_answer;
        3. the last agent message without a phase that is not a known commentary text (0.104
        wrote the phase only on the response_item); 4. the last role:assistant response_item
        that is not commentary.
        """
        if self.last_agent_message:
            text = clean_outcome(self.last_agent_message)
            if text:
                return text, self._message_with_text(text)
        commentary = {
            clean_outcome(m.text) for m in (*self.agent, *self.assistant) if m.phase == "commentary"
        }
        for msg in reversed(self.agent):
            if msg.phase == "final_answer" and clean_outcome(msg.text):
                return clean_outcome(msg.text), msg
        for msg in reversed(self.agent):
            text = clean_outcome(msg.text)
            if msg.phase is None and text and text not in commentary:
                return text, msg
        for msg in reversed(self.assistant):
            text = clean_outcome(msg.text)
            if msg.phase != "commentary" and text and text not in commentary:
                return text, msg
        return "", None

    def _message_with_text(self, text: str) -> Msg | None:
        for msg in reversed([*self.agent, *self.assistant]):
            if clean_outcome(msg.text) == text:
                return msg
        return None


class Reducer:
    """Folds the event stream of one rollout into turns, identity and provenance."""

    def __init__(self, path: Path) -> None:
        self.start = ThreadStart(uuid_from_name(path))
        self.own_meta: dict[str, Any] | None = None
        self.creation_ms: int | None = uuid7_ms(self.thread_id)
        self.turns: list[Turn] = []  # closed turns in native order (what rollback truncates)
        self.current: Turn | None = None
        self.unfinished_turn = False
        self.model: str | None = None
        self.cwds: list[str] = []  # every cwd of the thread's own turn_context records, in order
        self.name_event: tuple[str | None, datetime | None] | None = None
        self.user_events = 0
        self.enveloped_user_items = 0
        self.lines_seen = 0
        self.saw_codex_record = False
        self.rollout_format = "unknown"
        # fork bookkeeping (notes §1.3)
        self._in_copy = False
        self._copy_last_ts: datetime | None = None
        self._history_start_ordinal: int | None = None
        # A line the reader could not read since the last user message (its line number): in an
        # older rollout it may have been the prompt of the agent text after it.
        self._gap: int | None = None
        self.gap_issues: list[ParseIssue] = []
        self.path = path

    # --- driving --------------------------------------------------------------------------------

    @property
    def thread_id(self) -> str | None:
        return self.start.thread_id

    @property
    def started_at(self) -> datetime | None:
        return self.start.started_at

    def observe_line(self, obj: dict[str, Any]) -> None:
        """Per raw line, before its events: thread id and start time (the rule of task_days)."""
        self.lines_seen += 1
        had_id = self.start.thread_id is not None
        self.start.observe(obj)
        if not had_id and self.start.thread_id is not None:
            self.creation_ms = uuid7_ms(self.start.thread_id)

    def feed(self, ev: Event) -> None:
        if ev.kind == "meta":
            self._on_meta(ev)
            return
        inherited = self._inherited(ev)
        handler = getattr(self, f"_on_{ev.kind}")
        handler(ev, inherited)

    def gap(self, line: int) -> None:
        """A line between the last record and the next one was skipped (damaged)."""
        if self._gap is None:
            self._gap = line

    def finish(self) -> None:
        turn = self.current
        self.current = None
        if turn is None:
            return
        if not turn.explicit and self._gap is not None:
            # An older rollout's last turn with an unreadable line after its last record (a
            # writer mid-line, or damage): the answer may go on there. It waits.
            turn.status = "incomplete"
            if not turn.inherited and turn.prompt():
                self.unfinished_turn = True
        elif turn.explicit:
            # task_started without a terminal event at EOF: the session may still be live.
            turn.status = "incomplete"
        elif self._implicit_complete_at_eof(turn):
            turn.status = "completed"
        else:
            turn.status = "incomplete"
        if turn.status == "incomplete" and not turn.inherited and (turn.explicit or turn.prompt()):
            self.unfinished_turn = True
        self._close(turn)

    def complete_turns(self) -> list[ParsedTurn]:
        """Complete own turns, 0-based ordinals in native order.

        A completed turn needs a prompt. Its outcome may be "" (task_complete with
        last_agent_message null and no agent text, e.g. a tool-only turn): it is still a finished
        exchange the user started, so it is kept. Turns without any prompt (e.g. a manual
        /compact) are not Agent Turns and are left out. Aborted, failed, superseded and unfinished
        turns never take an ordinal, so they cannot shift the ordinals of later turns.
        """
        out: list[ParsedTurn] = []
        for turn in self.turns:
            if turn.inherited or turn.status != "completed":
                continue
            prompt = turn.prompt()
            if not prompt:
                continue
            outcome, outcome_msg = turn.outcome()
            ids = turn.prompt_ids()
            if outcome_msg is not None and outcome_msg.msg_id:
                ids.append(outcome_msg.msg_id)
            completed_at = turn.completed_at
            if completed_at is None and outcome_msg is not None:
                completed_at = outcome_msg.ts
            out.append(
                ParsedTurn(
                    ordinal=len(out),
                    native_turn_id=turn.turn_id,
                    prompt=prompt,
                    outcome=outcome,
                    started_at=turn.started_at,
                    completed_at=completed_at,
                    native_message_ids=ids,
                )
            )
        return out

    # --- metas and forks ------------------------------------------------------------------------

    def _on_meta(self, ev: Event) -> None:
        meta = ev.payload
        own_id = meta_id(meta)  # observe_line already adopted it if the file name had none
        own = own_id == self.thread_id or (own_id is None and self.own_meta is None)
        if not own:
            # A fork copies the parent's rollout, including the parent's session_meta: that meta
            # is not ours, and what follows it is the parent's history (notes §1.3).
            self._in_copy = True
            self._copy_last_ts = ev.ts
            return
        self._in_copy = False  # our own meta again (resume): any copied region is over
        if self.own_meta is None:
            # The first own session_meta decides ownership and context (notes §1.4).
            self.own_meta = meta
            created = parse_time(meta.get("timestamp"))
            if created is not None:
                self.creation_ms = ms(created)
            self._history_start_ordinal = integer(meta.get("subagent_history_start_ordinal"))

    def _inherited(self, ev: Event) -> bool:
        """Does this event belong to the parent's history copied into a fork?

        * A subagent rollout marks its inherited prefix with subagent_history_start_ordinal
          (JUL): lines with a smaller `ordinal` are the parent's (notes §1.9).
        * After a foreign session_meta we are in the copied region. It ends at the first turn
          whose own start time (its UUIDv7 turn_id, else task_started.started_at) is not older
          than this thread's creation: the parent's turns all predate the fork. Turns without a
          time of their own (older rollouts) end it when the copy burst ends: copied lines are
          written back to back, so a gap > CODEX_COPY_BURST_GAP_SECONDS between lines means new
          activity.
        """
        if (
            self._history_start_ordinal is not None
            and ev.ordinal is not None
            and ev.ordinal < self._history_start_ordinal
        ):
            return True
        if not self._in_copy:
            return False
        if ev.kind == "turn_started" and ev.time_ms is not None and self.creation_ms is not None:
            if ev.time_ms >= self.creation_ms:
                self._in_copy = False
                return False
            self._copy_last_ts = ev.ts or self._copy_last_ts
            return True
        if ev.ts is not None and self._copy_last_ts is not None:
            gap = (ev.ts - self._copy_last_ts).total_seconds()
            if gap > CODEX_COPY_BURST_GAP_SECONDS:
                self._in_copy = False
                return False
        if ev.ts is not None:
            self._copy_last_ts = ev.ts
        return True

    # --- turn events ----------------------------------------------------------------------------

    def _on_turn_started(self, ev: Event, inherited: bool) -> None:
        self._finish_current()
        self.current = Turn(
            turn_id=ev.turn_id or self._implicit_id(ev),
            explicit=True,
            inherited=inherited,
            started_at=ev.ts or ev.payload.get("started_at"),
        )

    def _on_user(self, ev: Event, inherited: bool) -> None:
        msg = Msg(ev.text, ev.line, ev.ts, ev.msg_id)
        gap, self._gap = self._gap, None
        turn = self.current
        if (
            gap is not None
            and turn is not None
            and not turn.explicit
            and ev.origin != "item"
            and turn.prompt()
            and not turn.outcome()[0]
            and not turn.inherited
        ):
            # prompt, damaged line, prompt: the damaged line may have been the answer.
            self._issue(
                turn.prompts[0].line if turn.prompts else ev.line,
                "turn_damaged",
                f"a prompt whose answer may be the damaged line {gap}; not stored",
            )
        if ev.origin == "item":
            target = self._turn_for(ev.turn_id)
            if target is not None and target.explicit:
                target.item_prompts.append(msg)
                return
        turn = self.current
        if turn is None or not turn.explicit:
            # Older rollouts have no task_started: every user_message opens an implicit turn
            # (notes §1.9, handle_user_message); the previous implicit turn ends here.
            self._finish_current()
            turn = Turn(
                turn_id=self._implicit_id(ev),
                explicit=False,
                inherited=inherited,
                started_at=ev.ts,
            )
            self.current = turn
        (turn.item_prompts if ev.origin == "item" else turn.prompts).append(msg)

    def _on_agent(self, ev: Event, inherited: bool) -> None:
        turn = self._turn_for(ev.turn_id) if ev.origin == "item" else self.current
        if turn is not None and turn is self.current:
            turn = self._split_at_gap(turn, ev)
        if turn is None:
            return  # agent text outside any turn has no prompt to belong to
        turn.agent.append(Msg(ev.text, ev.line, ev.ts, ev.msg_id, ev.phase))
        if turn is self.current:
            turn.trailing_activity = ev.phase == "commentary"

    def _on_assistant(self, ev: Event, inherited: bool) -> None:
        turn = self.current
        if turn is not None:
            turn = self._split_at_gap(turn, ev)
        if turn is None:
            return
        turn.assistant.append(Msg(ev.text, ev.line, ev.ts, ev.msg_id, ev.phase))
        if ev.text.strip():
            turn.trailing_activity = ev.phase == "commentary"

    def _on_activity(self, ev: Event, inherited: bool) -> None:
        if self.current is not None:
            self.current.trailing_activity = True

    def _on_turn_complete(self, ev: Event, inherited: bool) -> None:
        turn = self._turn_for(ev.turn_id, fallback_current=True)
        if turn is None:
            return
        # The normaliser checked the payload: last_agent_message str|None, error bool,
        # completed_at datetime|None.
        turn.last_agent_message = ev.payload["last_agent_message"]
        if turn.status != "aborted":  # like Codex, a late completion does not revive an abort
            # JUL: task_complete.error means the turn failed (notes §1.6): no final answer.
            turn.status = "failed" if ev.payload["error"] else "completed"
        turn.completed_at = ev.ts or ev.payload["completed_at"]
        if turn is self.current:
            self.current = None
            self._close(turn)

    def _on_turn_aborted(self, ev: Event, inherited: bool) -> None:
        # Interrupted/replaced turns are not complete turns: skipped, not captured (notes §1.9).
        turn = self._turn_for(ev.turn_id, fallback_current=True)
        if turn is None:
            return
        turn.status = "aborted"
        if turn is self.current:
            self.current = None
            self._close(turn)

    def _on_rollback(self, ev: Event, inherited: bool) -> None:
        # thread_rolled_back{num_turns}: the last N turns leave the history (notes §1.6, §1.9;
        # Codex's handle_thread_rollback truncates its finished-turn list, aborted ones included).
        self._finish_current()
        n = ev.payload["num_turns"]
        if n:
            del self.turns[-n:]

    def _on_name(self, ev: Event, inherited: bool) -> None:
        thread = ev.payload.get("thread_id")
        if inherited or (isinstance(thread, str) and thread.lower() != self.thread_id):
            return
        name = ev.payload.get("thread_name")
        name = name.strip() if isinstance(name, str) else None
        self.name_event = (name or None, ev.ts)  # latest wins; a null name clears it

    def _on_context(self, ev: Event, inherited: bool) -> None:
        model = ev.payload.get("model")
        if not inherited and isinstance(model, str) and model:
            self.model = model
        cwd = ev.payload.get("cwd")
        if not inherited and isinstance(cwd, str) and cwd and cwd not in self.cwds:
            self.cwds.append(cwd)  # a turn that moved to another directory (exclusion rules)

    # --- helpers --------------------------------------------------------------------------------

    def _split_at_gap(self, turn: Turn, ev: Event) -> Turn | None:
        """Answer, damaged line, answer in an older rollout's implicit turn: the damaged line may
        have been the next prompt, so the turn ends before the gap and the agent text after it
        (until the next user message) belongs to no turn, recorded, never glued to this one."""
        if self._gap is None or turn.explicit or not ev.text.strip():
            return turn
        if turn.outcome()[0]:
            self._finish_current()
        if self.current is None and not turn.inherited:
            self._issue(
                ev.line,
                "outcome_without_prompt",
                f"agent text after the damaged line {self._gap} (its prompt may be there)",
            )
        return self.current

    def _issue(self, line: int, reason: str, detail: str) -> None:
        self.gap_issues.append(
            ParseIssue(path=str(self.path), line=line, reason=reason, detail=detail)
        )

    def _implicit_id(self, ev: Event) -> str:
        # Codex's synthetic id for implicit turns is `rollout-<index>` (notes §1.9); we use the
        # 1-based line number of the turn's first record, which is stable under appends.
        return f"rollout-{ev.line}"

    def _turn_for(self, turn_id: str | None, fallback_current: bool = True) -> Turn | None:
        if turn_id is not None:
            if self.current is not None and self.current.turn_id == turn_id:
                return self.current
            for turn in reversed(self.turns):
                if turn.turn_id == turn_id:
                    return turn
        return self.current if fallback_current else None

    def _finish_current(self) -> None:
        """Close the open turn because something new started."""
        turn = self.current
        self.current = None
        if turn is None:
            return
        if turn.explicit:
            # A new task_started without a terminal event for this one (crash, then resume).
            turn.status = "superseded"
        else:
            # An implicit turn ends at the next user message: complete iff it has an answer.
            turn.status = "completed" if turn.outcome()[0] else "incomplete"
        self._close(turn)

    def _close(self, turn: Turn) -> None:
        # Like Codex's finish_current_turn: empty implicit turns are dropped.
        if turn.explicit or turn.has_content():
            self.turns.append(turn)

    @staticmethod
    def _implicit_complete_at_eof(turn: Turn) -> bool:
        """The LAST implicit turn of an older rollout (no task_complete exists in that format).

        It counts as complete only if it has a non-commentary answer and the agent did nothing
        after that answer (no tool call, reasoning or commentary after it). A file that ends in
        agent work is mid-turn and waits for a later run.
        """
        return bool(turn.outcome()[0]) and not turn.trailing_activity


def reduce_file(path: Path, prompts_from_items: bool) -> tuple[Reducer, list[ParseIssue]]:
    """One pass over a rollout. No record can stop it: see the module docstring."""
    read = JsonlRead(path)
    norm = Normaliser(read, prompts_from_items)
    reducer = Reducer(path)
    seen = 0  # read.issues looked at for skipped lines
    for line, obj in iter_records(path, read):
        seen = _note_gaps(reducer, read.issues, seen)
        try:
            # observe_line first, as task_days does: both agree on the start whatever follows.
            reducer.observe_line(obj)
            for ev in norm.events(line, obj):
                reducer.feed(ev)
        except Exception as exc:  # one record must never cost the file (issue 10)
            read.issue("bad_record", exception_detail(exc), line)
    _note_gaps(reducer, read.issues, seen)
    reducer.finish()
    reducer.user_events = norm.user_events
    reducer.enveloped_user_items = norm.enveloped_user_items
    reducer.saw_codex_record = norm.saw_codex_record
    if norm.enveloped and norm.bare_items:
        reducer.rollout_format = "mixed"
    elif norm.enveloped:
        reducer.rollout_format = "rollout_items"  # {timestamp,type,payload}, since Sep 2025
    elif norm.bare_items:
        reducer.rollout_format = "bare_items"  # ≤ Sep 2025 first line + bare ResponseItems
    return reducer, [*read.issues, *norm.unknown_issues(), *reducer.gap_issues]


_GAPS = SKIPPED_LINE_REASONS | {"bad_record", "unreadable_rest"}


def _note_gaps(reducer: Reducer, issues: list[ParseIssue], seen: int) -> int:
    """Tell the reducer about lines skipped since `seen` issues; the new count."""
    for issue in issues[seen:]:
        if issue.line is not None and issue.reason in _GAPS:
            reducer.gap(issue.line)
    return len(issues)
