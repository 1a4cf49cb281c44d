"""Turns of a live chain: cycles, outcomes, end markers (§2.5).

* A turn starts at a human prompt record; command (`<command-name>` / `<command-message>`), `!`
  shell input, task notifications, coordinator and `promptSource:"system"` records also start a
  new cycle, so they end the turn before them, and so does a chain break (chain.py). Only human
  prompts and slash commands that the agent answered become turns. The outcome is the text of the
  assistant blocks after the turn's last `tool_use` (thinking, tool calls, tool results,
  attachments, system records, `isMeta` and API-error/`<synthetic>` messages excluded; an
  assistant block of the wrong shape ends the text before it, like a tool call).
* Completion. A turn with an outcome is complete when a later cycle starts, or when an end marker
  follows the outcome (`system` `turn_duration`/`stop_hook_summary`, or `stop_reason:"end_turn"`
  on the outcome message). For the LAST turn of a file with no such marker (older builds leave
  `stop_reason` null), the turn is complete once the file has been quiet for `settle_after`
  (by mtime). A file that ends after a `tool_use`/`tool_result` has no outcome yet:
  `unfinished_turn=True`. Interrupted turns (`[Request interrupted by user…`) and turns whose
  last assistant message is an API error are skipped; they never get an ordinal, so ordinals of
  later turns do not move.
* Identity. `native_turn_id` is the prompt record's `uuid` (always present; `promptId` only
  exists in late 2.1.x). `native_message_ids` = prompt uuid + the outcome's `message.id`s.
* Resumed history (§2.2, §3). A record is inherited from another session when its `sessionId`
  differs from the file's session or its snake-case `session_id` differs from its `sessionId`
  (the ancestor marker). Inherited prompts end the turn before them but never become turns here
  (they belong to the ancestor's file). Only in-file evidence is used: reading the ancestor file
  would make this file's turns change when the ancestor is deleted by the 30-day cleanup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_pipeline.capture.claude_code.chain import Chain
from memory_pipeline.capture.claude_code.records import (
    END_SUBTYPES,
    TEXT,
    TURN_KINDS,
    Loaded,
    Rec,
)
from memory_pipeline.capture.models import ParsedTurn


@dataclass
class Cycle:
    """One user-initiated cycle of the chain: a starter record and what followed it."""

    starter: Rec
    kind: str  # "human", "command", "bash", "agent_input", "inherited", "break"
    records: list[Rec] = field(default_factory=list)
    interrupted: bool = False


@dataclass
class TurnBuild:
    turns: list[ParsedTurn]
    unfinished: bool
    first_prompt: Rec | None  # first own human prompt record (ownership evidence)
    prompts: list[Rec]  # every own human prompt record


def cycles(chain: Chain, own_session: str | None) -> list[Cycle]:
    result: list[Cycle] = []
    current: Cycle | None = None
    for rec in chain.records:
        if rec.starts_cycle:
            kind = "inherited" if is_inherited(rec, own_session) else rec.kind
            current = Cycle(starter=rec, kind=kind)
            result.append(current)
            continue
        if rec.uuid in chain.breaks:
            # A prompt may have been lost just before: what follows is nobody's turn.
            current = Cycle(starter=rec, kind="break", records=[rec])
            result.append(current)
            continue
        if current is None:
            continue  # preamble before the first prompt (or the ancestor's tail)
        if rec.type == "user" and rec.kind == "interrupt":
            current.interrupted = True
        current.records.append(rec)
    return result


def is_inherited(rec: Rec, own_session: str | None) -> bool:
    """Copied from an ancestor session by --resume/--continue (§2.2, §3)."""
    if own_session is None:
        return False
    if rec.session_id is not None and rec.session_id != own_session:
        return True
    return rec.inherited_marker


@dataclass
class Outcome:
    text: str
    records: list[Rec]  # assistant records the outcome text came from
    last_index: int  # index in cycle.records of the last outcome record (-1: none)
    failed: bool  # the last assistant message is an API error / synthetic


def outcome(cycle: Cycle) -> Outcome:
    """Text blocks after the cycle's last tool_use (§2.5 visible outcome)."""
    texts: list[str] = []
    recs: list[Rec] = []
    seen_blocks: set[tuple[str | None, str]] = set()
    last_index = -1
    last_assistant: Rec | None = None
    for index, rec in enumerate(cycle.records):
        if rec.type != "assistant":
            continue
        last_assistant = rec
        for kind, value in rec.blocks:
            if kind != TEXT:  # a tool call, or a block of the wrong shape that may have been one
                texts, recs, last_index = [], [], -1
                seen_blocks.clear()
            elif not rec.api_error and value.strip():
                key = (rec.msg_id, value)  # the same streamed block written twice
                if key in seen_blocks:
                    continue
                seen_blocks.add(key)
                texts.append(value.strip())
                if not recs or recs[-1] is not rec:
                    recs.append(rec)
                last_index = index
    failed = last_assistant is not None and last_assistant.api_error
    return Outcome("\n\n".join(texts), recs, last_index, failed)


def has_end_marker(cycle: Cycle, result: Outcome, loaded: Loaded) -> bool:
    """turn_duration / stop_hook_summary after the outcome, or end_turn on its message (§2.5)."""
    final_ids = {rec.msg_id for rec in result.records[-1:]}
    if any(
        rec.stop_reason == "end_turn" and rec.msg_id in final_ids
        for rec in cycle.records
        if rec.type == "assistant"
    ):
        return True
    tail = cycle.records[result.last_index :]
    if any(rec.type == "system" and rec.subtype in END_SUBTYPES for rec in tail):
        return True
    # Markers are often children of the last records without being on the chain.
    stack = [rec.uuid for rec in tail]
    seen: set[str] = set()
    while stack:
        uuid = stack.pop()
        if uuid in seen:
            continue
        seen.add(uuid)
        for child in loaded.children_of(uuid):
            if child.type == "system" and child.subtype in END_SUBTYPES:
                return True
            if child.type in ("system", "attachment", "progress"):
                stack.append(child.uuid)
    return False


def build_turns(chain: Chain, loaded: Loaded, own_session: str | None, settled: bool) -> TurnBuild:
    all_cycles = cycles(chain, own_session)
    turns: list[ParsedTurn] = []
    unfinished = False
    for index, cycle in enumerate(all_cycles):
        if cycle.kind not in TURN_KINDS:
            continue
        is_last = index == len(all_cycles) - 1
        result = outcome(cycle)
        if cycle.interrupted or result.failed:
            continue  # skipped for good: never an ordinal (§2.5 interrupted / API error)
        if result.text and (not is_last or settled or has_end_marker(cycle, result, loaded)):
            turns.append(_make_turn(len(turns), cycle, result))
        elif is_last and (
            cycle.kind == "human" or any(rec.type == "assistant" for rec in cycle.records)
        ):
            unfinished = True
    prompts = [c.starter for c in all_cycles if c.kind == "human"]
    return TurnBuild(turns, unfinished, prompts[0] if prompts else None, prompts)


def _make_turn(ordinal: int, cycle: Cycle, result: Outcome) -> ParsedTurn:
    prompt = cycle.starter.text
    steering = [
        rec.steering
        for rec in cycle.records[: result.last_index + 1]
        if rec.type == "attachment" and rec.steering
    ]
    if steering:
        prompt = "\n\n".join([prompt, *steering])
    message_ids: list[str] = [cycle.starter.uuid]
    for rec in result.records:
        msg_id = rec.msg_id or rec.uuid
        if msg_id not in message_ids:
            message_ids.append(msg_id)
    return ParsedTurn(
        ordinal=ordinal,
        native_turn_id=cycle.starter.uuid,
        prompt=prompt,
        outcome=result.text,
        started_at=cycle.starter.timestamp,
        completed_at=result.records[-1].timestamp,
        native_message_ids=message_ids,
    )
