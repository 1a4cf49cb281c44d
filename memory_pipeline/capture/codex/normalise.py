"""Records -> events: every Codex envelope generation becomes one internal event stream.

Notes §1.1: ≤May 2025 flat files, Jul–Sep 2025 bare ResponseItems, the `{timestamp,type,payload}`
envelope since Sep 2025. This is the trust boundary of the connector: every field is checked
for its type here, so the reducer only ever sees well-typed events. A field of the wrong type is
read as absent and recorded (`invalid_record`), a time that is not usable is read as missing and
recorded (`bad_timestamp`); the rest of the line and of the file is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memory_pipeline.capture.codex.fields import describe, integer, ms, parse_time, uuid7_ms
from memory_pipeline.capture.codex.records import meta_of
from memory_pipeline.capture.codex.text import (
    content_problem,
    content_text,
    image_count,
    is_context_text,
    list_len,
    prompt_text,
)
from memory_pipeline.capture.jsonl import JsonlRead
from memory_pipeline.capture.models import ParseIssue

# --- record vocabulary (notes §1.2, §1.5, §1.6) -------------------------------------------------

ENVELOPE_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
        "world_state",
    }
)
# ResponseItem types that are agent work, never part of the visible outcome (notes §1.5).
ACTIVITY_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
    }
)
# EventMsg types that are agent work (notes §1.6); everything unlisted is ignored.
ACTIVITY_EVENTS = frozenset(
    {
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "exec_command_end",
        "patch_apply_end",
        "mcp_tool_call_end",
        "web_search_end",
        "view_image_tool_call",
        "image_generation_end",
        "dynamic_tool_call_request",
        "dynamic_tool_call_response",
        "collab_agent_spawn_end",
        "collab_agent_interaction_end",
        "collab_waiting_end",
        "collab_close_end",
        "collab_resume_end",
    }
)
# user_message.kind values of real prompts (older builds: plain; some later builds: user).
PROMPT_KINDS = frozenset({"plain", "user"})
# session_meta fields read as strings (ownership vocabulary and provenance, notes §1.4). `source`
# is a string or a one-key object; `git` an object; the agent_* identity fields count whenever
# present, whatever their type.
META_STRING_FIELDS = (
    "originator",
    "cli_version",
    "cwd",
    "model_provider",
    "thread_source",
    "forked_from_id",
)

EventKind = Literal[
    "meta",
    "turn_started",
    "turn_complete",
    "turn_aborted",
    "user",
    "agent",
    "assistant",
    "activity",
    "rollback",
    "name",
    "context",
]


@dataclass(frozen=True)
class Event:
    kind: EventKind
    line: int
    ts: datetime | None
    # "event": event_msg (or legacy bare item, which is the only source there);
    # "item": paginated item_completed TurnItem (notes §1.6)
    origin: Literal["event", "item"] = "event"
    turn_id: str | None = None
    text: str = ""
    phase: str | None = None
    msg_id: str | None = None
    time_ms: int | None = None  # turn_started: latest possible own start (v7 id / started_at)
    ordinal: int | None = None  # RolloutLine.ordinal (JUL), for subagent_history_start_ordinal
    payload: dict[str, Any] = field(default_factory=dict)


class Normaliser:
    """Maps raw JSON objects to `Event`s and counts what the reducer must know about."""

    def __init__(self, read: JsonlRead, prompts_from_items: bool) -> None:
        self.read = read
        self.prompts_from_items = prompts_from_items
        self.unknown: dict[str, list[int]] = {}  # record type -> [first line, count]
        self.user_events = 0  # user_message events + item_completed UserMessage
        self.enveloped_user_items = 0  # non-context role:user response_items in the envelope
        self.saw_codex_record = False
        self.bare_items = False
        self.enveloped = False

    def events(self, line: int, obj: dict[str, Any]) -> list[Event]:
        if obj.get("record_type") is not None:  # Jul–Sep 2025 `{"record_type":"state"}` lines
            self.saw_codex_record = True
            return []
        meta = meta_of(obj)
        if meta is not None and meta is obj:  # legacy first line
            self.saw_codex_record = True
            self.bare_items = True
            self._check_meta(meta, line)
            ts = self._time(obj.get("timestamp"), line, "timestamp")
            return [Event("meta", line, ts, payload=obj)]
        rtype = obj.get("type")
        if rtype is not None and not isinstance(rtype, str):
            self._invalid(line, f"record type is {describe(rtype)}, not a string; line skipped")
            return []
        if "payload" in obj and rtype is not None:
            if rtype not in ENVELOPE_TYPES:
                self._unknown(rtype, line)
                return []
            self.saw_codex_record = True
            self.enveloped = True
            return self._enveloped(line, obj, rtype)
        if rtype is not None and ("role" in obj or rtype in ACTIVITY_ITEMS):
            # ≤Sep 2025: bare ResponseItems, no envelope, no timestamps (notes §1.1).
            self.saw_codex_record = True
            self.bare_items = True
            return self._response_item(line, None, obj, bare=True, ordinal=None)
        self._unknown(rtype if rtype is not None else "<no type>", line)
        return []

    def _unknown(self, rtype: str, line: int) -> None:
        seen = self.unknown.setdefault(rtype[:80], [line, 0])
        seen[1] += 1

    def unknown_issues(self) -> list[ParseIssue]:
        return [
            ParseIssue(
                path=str(self.read.path),
                line=first,
                reason="unknown_record",
                detail=f"type={rtype!r} ({count} line{'s' if count != 1 else ''}) ignored",
            )
            for rtype, (first, count) in self.unknown.items()
        ]

    # --- checked reads (a wrong type is recorded and read as absent) ----------------------------

    def _invalid(self, line: int, detail: str) -> None:
        self.read.issue("invalid_record", detail, line)

    def _time(self, value: Any, line: int, what: str) -> datetime | None:
        if value is None:
            return None
        parsed = parse_time(value)
        if parsed is None:
            self.read.issue(
                "bad_timestamp",
                f"{what} {describe(value)} is not a usable time; treated as missing",
                line,
            )
        return parsed

    def _str(self, obj: dict[str, Any], key: str, line: int, what: str) -> str | None:
        value = obj.get(key)
        if value is None or isinstance(value, str):
            return value
        self._invalid(line, f"{what}.{key} is {describe(value)}, not a string; ignored")
        return None

    def _content(self, content: Any, line: int, what: str) -> None:
        problem = content_problem(content)
        if problem is not None:
            self._invalid(line, f"{what} {problem}; malformed parts ignored")

    def _check_meta(self, meta: dict[str, Any], line: int) -> None:
        """Record session_meta fields of the wrong type; ownership then reads them as absent."""
        bad = [k for k in META_STRING_FIELDS if meta.get(k) is not None]
        bad = [k for k in bad if not isinstance(meta[k], str)]
        if meta.get("id") is not None and not isinstance(meta["id"], str):
            bad.append("id")
        source = meta.get("source")
        if source is not None and not isinstance(source, str | dict):
            bad.append("source")
        if isinstance(source, dict) and any(
            k in source and not isinstance(source[k], str) for k in ("custom", "internal")
        ):
            bad.append("source")
        if meta.get("git") is not None and not isinstance(meta["git"], dict):
            bad.append("git")
        if bad:
            self._invalid(line, f"session_meta {', '.join(bad)} of the wrong type; ignored")

    # --- envelope -------------------------------------------------------------------------------

    def _enveloped(self, line: int, obj: dict[str, Any], rtype: str) -> list[Event]:
        ts = self._time(obj.get("timestamp"), line, "timestamp")
        payload = obj.get("payload")
        ordinal = integer(obj.get("ordinal"))
        if not isinstance(payload, dict):
            self._invalid(line, f"{rtype} payload is not an object")
            return []
        if rtype == "session_meta":
            self._check_meta(payload, line)
            self._time(payload.get("timestamp"), line, "session_meta.timestamp")
            return [Event("meta", line, ts, payload=payload, ordinal=ordinal)]
        if rtype == "turn_context":
            return [Event("context", line, ts, payload=payload, ordinal=ordinal)]
        if rtype == "response_item":
            return self._response_item(line, ts, payload, bare=False, ordinal=ordinal)
        if rtype == "event_msg":
            return self._event_msg(line, ts, payload, ordinal)
        return []  # compacted, inter-agent communication, world_state: not turn content

    def _response_item(
        self, line: int, ts: datetime | None, item: dict[str, Any], bare: bool, ordinal: int | None
    ) -> list[Event]:
        itype = self._str(item, "type", line, "response_item")
        if itype in ACTIVITY_ITEMS:
            return [Event("activity", line, ts, ordinal=ordinal)]
        if itype != "message":
            return []  # ghost_snapshot, compaction, unknown items: no turn content
        role = self._str(item, "role", line, "message")
        msg_id = self._str(item, "id", line, "message")
        phase = self._str(item, "phase", line, "message")
        content = item.get("content")
        if role in ("assistant", "user"):
            self._content(content, line, f"{role} message")
        if role == "assistant":
            text = content_text(content, ("output_text", "text"))
            return [
                Event("assistant", line, ts, text=text, phase=phase, msg_id=msg_id, ordinal=ordinal)
            ]
        if role != "user":
            return []  # developer/system: permissions, collaboration mode... (notes §1.5)
        text = content_text(content, ("input_text", "text"))
        if is_context_text(text):
            return []
        images = image_count(content)
        if not bare:
            # Enveloped role:user items duplicate user_message events or are injected context:
            # prompts come from event_msg.user_message (notes §1.5), unless the file has none.
            if text.strip() or images:
                self.enveloped_user_items += 1
            if not self.prompts_from_items:
                return []
        prompt = prompt_text(text, images)
        if not prompt:
            return []
        if bare:
            self.user_events += 1
        return [Event("user", line, ts, text=prompt, msg_id=msg_id, ordinal=ordinal)]

    def _event_msg(
        self, line: int, ts: datetime | None, p: dict[str, Any], ordinal: int | None
    ) -> list[Event]:
        etype = self._str(p, "type", line, "event_msg")
        turn_id = self._str(p, "turn_id", line, "event_msg")
        if etype in ("task_started", "turn_started"):
            started = self._time(p.get("started_at"), line, f"{etype}.started_at")
            time_ms = uuid7_ms(turn_id)
            if time_ms is None and started is not None:
                # started_at is whole unix seconds: take the end of that second, so a turn that
                # began in the same second as its (forked) thread still counts as the thread's.
                time_ms = (ms(started) or 0) + 999
            return [
                Event(
                    "turn_started",
                    line,
                    ts,
                    turn_id=turn_id,
                    time_ms=time_ms,
                    ordinal=ordinal,
                    payload={"started_at": started},
                )
            ]
        if etype in ("task_complete", "turn_complete"):
            completion = {
                "last_agent_message": self._str(p, "last_agent_message", line, etype),
                "error": bool(p.get("error")),
                "completed_at": self._time(p.get("completed_at"), line, f"{etype}.completed_at"),
            }
            return [
                Event(
                    "turn_complete", line, ts, turn_id=turn_id, payload=completion, ordinal=ordinal
                )
            ]
        if etype == "turn_aborted":
            return [Event("turn_aborted", line, ts, turn_id=turn_id, ordinal=ordinal)]
        if etype == "user_message":
            self.user_events += 1
            message = self._str(p, "message", line, "user_message") or ""
            kind = p.get("kind")
            if (isinstance(kind, str) and kind not in PROMPT_KINDS) or is_context_text(message):
                # Sep–Oct 2025 builds also emitted user_message events for injected context,
                # marked with `kind` (InputMessageKind: user_instructions, environment_context).
                return []
            images = list_len(p.get("images")) + list_len(p.get("local_images"))
            prompt = prompt_text(message, images)
            client_id = self._str(p, "client_id", line, "user_message")
            if not prompt:
                return []
            return [Event("user", line, ts, text=prompt, msg_id=client_id, ordinal=ordinal)]
        if etype == "agent_message":
            message = self._str(p, "message", line, "agent_message")
            if message is None or not message.strip():
                return []
            phase = self._str(p, "phase", line, "agent_message")
            return [Event("agent", line, ts, text=message, phase=phase, ordinal=ordinal)]
        if etype == "item_completed":
            return self._turn_item(line, ts, p, turn_id, ordinal)
        if etype == "thread_rolled_back":
            n = integer(p.get("num_turns"))
            if n is not None and n >= 0:
                return [Event("rollback", line, ts, payload={"num_turns": n}, ordinal=ordinal)]
            self._invalid(line, "thread_rolled_back without num_turns")
            return []
        if etype == "thread_name_updated":
            name = {
                "thread_id": self._str(p, "thread_id", line, etype),
                "thread_name": self._str(p, "thread_name", line, etype),
            }
            return [Event("name", line, ts, payload=name, ordinal=ordinal)]
        if etype in ACTIVITY_EVENTS:
            return [Event("activity", line, ts, turn_id=turn_id, ordinal=ordinal)]
        return []  # token_count, context_compacted, review mode, unknown events: ignored

    def _turn_item(
        self,
        line: int,
        ts: datetime | None,
        p: dict[str, Any],
        turn_id: str | None,
        ordinal: int | None,
    ) -> list[Event]:
        """`item_completed` (paginated history mode, notes §1.6)."""
        item = p.get("item")
        if not isinstance(item, dict):
            return []
        itype = self._str(item, "type", line, "item_completed.item")
        item_id = self._str(item, "id", line, "item_completed.item")
        if itype == "UserMessage":
            content = item.get("content")
            self._content(content, line, "UserMessage")
            prompt = prompt_text(content_text(content, ("text",)), image_count(content))
            self.user_events += 1
            if not prompt:
                return []
            return [
                Event(
                    "user",
                    line,
                    ts,
                    origin="item",
                    turn_id=turn_id,
                    text=prompt,
                    msg_id=item_id,
                    ordinal=ordinal,
                )
            ]
        if itype == "AgentMessage":
            content = item.get("content")
            self._content(content, line, "AgentMessage")
            text = content_text(content, ("Text", "text"))
            if not text.strip():
                return []
            phase = self._str(item, "phase", line, "AgentMessage")
            return [
                Event(
                    "agent",
                    line,
                    ts,
                    origin="item",
                    turn_id=turn_id,
                    text=text,
                    phase=phase,
                    msg_id=item_id,
                    ordinal=ordinal,
                )
            ]
        if itype in ("Reasoning", "CommandExecution", "McpToolCall", "FileChange", "WebSearch"):
            return [Event("activity", line, ts, turn_id=turn_id, ordinal=ordinal)]
        return []
