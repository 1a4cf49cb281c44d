"""Render the demo corpus from the conversation spec into the real on-disk formats.

    python -m memory_pipeline.demo.build_corpus            # rewrite memory_pipeline/demo/corpus
    python -m memory_pipeline.demo.build_corpus --out DIR  # write somewhere else
    python -m memory_pipeline.demo.build_corpus --stats    # print what the spec contains

Output (all deterministic: ids and timestamps derive from the spec, nothing from the clock):

    corpus/codex_home/sessions/YYYY/MM/DD/rollout-<local time>-<thread uuid>.jsonl
    corpus/codex_home/session_index.jsonl      thread names (/rename), latest entry wins
    corpus/codex_home/history.jsonl            prompts typed in the TUI
    corpus/claude_home/projects/<project-key>/<session uuid>.jsonl
    corpus/claude_home/projects/<project-key>/<session uuid>/subagents/agent-<id>.{jsonl,meta.json}
    corpus/claude_home/history.jsonl           prompts typed in interactive sessions
    corpus/imports/*.jsonl                     the generic chat import format
    gold.jsonl                                 retrieval queries with the turns they must find

Codex records follow the 0.125+ TUI rollouts (session_meta, task_started, developer and contextual
user messages, turn_context, user_message, reasoning, exec_command / apply_patch calls with their
events, commentary and final_answer agent messages, task_complete). Claude Code records follow
2.1.2xx transcripts (uuid/parentUuid chain, promptId, promptSource "typed", entrypoint "cli", one
content block per streamed assistant record, tool_use/tool_result pairs, system turn_duration).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.demo.conversations import homelab, imports, ledgerline, logslice, meterflow
from memory_pipeline.demo.conversations.queries import QUERIES
from memory_pipeline.demo.spec import (
    Delegate,
    Edit,
    ImportChat,
    Read,
    Say,
    Search,
    Session,
    Shell,
    Step,
    Turn,
    Write,
)
from memory_pipeline.models.sources import SOURCES

DEMO_DIR = Path(__file__).resolve().parent
CORPUS_DIR = DEMO_DIR / "corpus"
GOLD_PATH = DEMO_DIR / "gold.jsonl"
DOCUMENTS_DIR = DEMO_DIR / "documents"  # the demo inbox, written by hand (documents/README.md)
DEMO_PDF_DATE = "2026-10-20"  # the demo PDF's creation date (its memories' created_at)
# Every source's demo roots (memory_pipeline/models/sources.py) and the demo inbox: rebuilt from
# scratch each time.
OUTPUT_DIRS = (*(d for s in SOURCES for d in s.demo), "inbox")

SESSIONS: tuple[Session, ...] = (
    *logslice.SESSIONS,
    *ledgerline.SESSIONS,
    *homelab.SESSIONS,
    *meterflow.SESSIONS,
)
CHATS: tuple[ImportChat, ...] = imports.CHATS

# The user's zone is Europe/Berlin. All demo dates are in 2026; summer time ends on
# 25 October 2026 at 01:00 UTC. Written out so the output never depends on the machine's tzdata.
_DST_END_UTC = datetime(2026, 10, 25, 1, 0, tzinfo=UTC)
_DST_END_LOCAL = datetime(2026, 10, 25, 3, 0)  # local wall time when clocks went back
TIMEZONE = "Europe/Berlin"
USER_HOME = "/home/mara"

CODEX_MODEL = "gpt-5.5"
CLAUDE_MODEL = "claude-opus-5"
CLAUDE_SUBAGENT_MODEL = "claude-haiku-4-5-20251001"
CLAUDE_SDK_MODEL = "claude-sonnet-5"


def codex_version(day: date) -> str:
    if day < date(2026, 10, 1):
        return "0.152.0"
    if day < date(2026, 10, 20):
        return "0.158.1"
    return "0.161.0"


def claude_version(day: date) -> str:
    if day < date(2026, 10, 1):
        return "2.1.231"
    if day < date(2026, 10, 20):
        return "2.1.240"
    return "2.1.252"


# ----------------------------------------------------------------------------------------------
# Time and ids


def to_utc(local: datetime) -> datetime:
    offset = 2 if local < _DST_END_LOCAL else 1
    return (local - timedelta(hours=offset)).replace(tzinfo=UTC)


def to_local(when: datetime) -> datetime:
    offset = 2 if when < _DST_END_UTC else 1
    return (when + timedelta(hours=offset)).replace(tzinfo=None)


def iso_ms(when: datetime) -> str:
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def iso_us(when: datetime) -> str:
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def unix_s(when: datetime) -> int:
    return int(when.timestamp())


def unix_ms(when: datetime) -> int:
    return round(when.timestamp() * 1000)


_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Ids:
    """Deterministic ids and jitter: each value is a hash of the seed and a counter."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.n = 0

    def _next(self) -> bytes:
        self.n += 1
        return hashlib.sha256(f"{self.seed}\x1f{self.n}".encode()).digest()

    def hex(self, k: int) -> str:
        return self._next().hex()[:k]

    def b62(self, k: int) -> str:
        out: list[str] = []
        while len(out) < k:
            # 248 is the largest multiple of 62 below 256: no modulo bias.
            out.extend(_B62[b % 62] for b in self._next() if b < 248)
        return "".join(out[:k])

    def frac(self) -> float:
        return int.from_bytes(self._next()[:4], "big") / 2**32

    def between(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.frac()

    def uuid4(self) -> str:
        raw = bytearray(self._next()[:16])
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        return str(uuid.UUID(bytes=bytes(raw)))

    def uuid7(self, when: datetime) -> str:
        raw = bytearray(unix_ms(when).to_bytes(6, "big") + self._next()[:10])
        raw[6] = (raw[6] & 0x0F) | 0x70
        raw[8] = (raw[8] & 0x3F) | 0x80
        return str(uuid.UUID(bytes=bytes(raw)))


class Clock:
    def __init__(self, start: datetime, ids: Ids) -> None:
        self.now = start
        self.ids = ids

    def tick(self, lo: float, hi: float) -> datetime:
        seconds = self.ids.between(lo, hi)
        self.now = self.now + timedelta(milliseconds=round(seconds * 1000))
        return self.now

    def set(self, when: datetime) -> datetime:
        self.now = when
        return when


def turn_times(start_date: str, turns: Iterable[Any], ids: Ids) -> list[datetime]:
    """Local wall times of the turns (`at` is "HH:MM" or "YYYY-MM-DD HH:MM"), plus seconds."""
    day = date.fromisoformat(start_date)
    out = []
    for turn in turns:
        at = turn.at
        if " " in at:
            day_s, at = at.split(" ")
            day = date.fromisoformat(day_s)
        hh, mm = (int(x) for x in at.split(":"))
        seconds = timedelta(milliseconds=round(ids.between(0, 50) * 1000))
        out.append(datetime(day.year, day.month, day.day, hh, mm) + seconds)
    return out


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def abs_path(cwd: str, path: str) -> str:
    return path if path.startswith("/") else f"{cwd}/{path}"


# ----------------------------------------------------------------------------------------------
# What the builder reports (used by the tests and --stats)


@dataclass
class TaskInfo:
    source: str  # "codex" | "claude_code" | "chat_import"
    native_id: str
    spec_key: str
    project: str
    ownership: str  # expected: "user_owned" | "delegated"
    delegation: str = ""  # "subagent", "exec", "sdk" for delegated tasks
    complete_turns: int = 0
    unfinished: bool = False
    aborted_turns: int = 0
    days: tuple[str, ...] = ()  # local dates with turns
    title: str | None = None  # expected title (latest session_index name / ai-title / import)
    path: str = ""


@dataclass
class Manifest:
    tasks: list[TaskInfo] = field(default_factory=list)
    gold: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    plants: Counter = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)

    def task(self, spec_key: str) -> TaskInfo:
        return next(t for t in self.tasks if t.spec_key == spec_key)

    def add_gold(self, query_ids: Iterable[str], source: str, native_id: str, ordinal: int):
        for qid in query_ids:
            if qid not in QUERIES:
                raise ValueError(f"turn tagged with unknown gold query {qid!r}")
            ref = {"source": source, "native_task_id": native_id, "turn_ordinal": ordinal}
            self.gold.setdefault(qid, []).append(ref)


# ----------------------------------------------------------------------------------------------
# Codex


_CODEX_BASE_INSTRUCTIONS = (
    "You are Codex, a coding agent based on GPT-5. You and the user share one workspace, and "
    "your job is to collaborate with them until their goal is genuinely handled.\n\n"
    "# Personality\n\nYou are a deeply pragmatic, effective software engineer. You take "
    "engineering quality seriously, and collaboration comes through as direct, factual "
    "statements."
)

_CODEX_PERMISSIONS = (
    "<permissions instructions>\nFilesystem sandboxing defines which files can be read or "
    "written. `sandbox_mode` is `workspace-write`: The sandbox permits reading files, and "
    "editing files in `cwd` and `writable_roots`. Editing files in other directories requires "
    "approval. Network access is restricted.\n</permissions instructions>"
)

_CODEX_PERMISSIONS_EXEC = (
    "<permissions instructions>\nFilesystem sandboxing defines which files can be read or "
    "written. `sandbox_mode` is `read-only`: The sandbox only permits reading files. Network "
    "access is restricted. Approvals are never requested.\n</permissions instructions>"
)

_CODEX_COLLABORATION = (
    "<collaboration_mode># Collaboration Mode: Default\n\nYou are now in Default mode. Any "
    "previous instructions for other modes (e.g. Plan mode) are no longer active.\n"
    "</collaboration_mode>"
)

_TURN_ABORTED = (
    "<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified "
    "exec processes may still be running in the background. If any tools/commands were aborted, "
    "they may have partially executed; verify current state before retrying.\n</turn_aborted>"
)

_REASONING_SUMMARIES = (
    "**Planning the next step**",
    "**Checking the relevant files**",
    "**Weighing the options**",
    "**Verifying the change**",
)


class CodexRollout:
    """Builds one Codex rollout file (a thread) record by record."""

    def __init__(
        self,
        session: Session,
        thread_id: str,
        start: datetime,
        ids: Ids,
        *,
        parent_thread_id: str | None = None,
        delegate: Delegate | None = None,
    ) -> None:
        self.session = session
        self.project = session.project
        self.thread_id = thread_id
        self.start = start
        self.ids = ids
        self.clock = Clock(start, ids)
        self.records: list[dict[str, Any]] = []
        self.parent_thread_id = parent_thread_id
        self.delegate = delegate
        self.children: list[CodexRollout] = []
        self.tokens = 0
        self.version = codex_version(to_local(start).date())
        self.exec = session.mode == "exec"

    # -- records ------------------------------------------------------------------------------

    def add(self, kind: str, payload: dict[str, Any], when: datetime | None = None) -> None:
        stamp = when or self.clock.now
        self.records.append({"timestamp": iso_ms(stamp), "type": kind, "payload": payload})

    def event(self, payload: dict[str, Any]) -> None:
        self.add("event_msg", payload)

    def item(self, payload: dict[str, Any]) -> None:
        self.add("response_item", payload)

    def message(self, role: str, texts: list[str], phase: str | None = None) -> None:
        kind = "output_text" if role == "assistant" else "input_text"
        payload: dict[str, Any] = {
            "type": "message",
            "role": role,
            "content": [{"type": kind, "text": t} for t in texts],
        }
        if phase:
            payload["phase"] = phase
        self.item(payload)

    def token_count(self, with_info: bool = True) -> None:
        info = None
        if with_info:
            last_in = int(self.ids.between(9000, 26000))
            last_out = int(self.ids.between(60, 900))
            self.tokens += last_in + last_out
            cached = int(last_in * 0.82)
            info = {
                "total_token_usage": {
                    "input_tokens": self.tokens - last_out,
                    "cached_input_tokens": int((self.tokens - last_out) * 0.8),
                    "output_tokens": last_out,
                    "reasoning_output_tokens": last_out // 3,
                    "total_tokens": self.tokens,
                },
                "last_token_usage": {
                    "input_tokens": last_in,
                    "cached_input_tokens": cached,
                    "output_tokens": last_out,
                    "reasoning_output_tokens": last_out // 3,
                    "total_tokens": last_in + last_out,
                },
                "model_context_window": 258400,
            }
        self.event({"type": "token_count", "info": info, "rate_limits": None})

    # -- session ------------------------------------------------------------------------------

    def session_meta(self, first_record_at: datetime) -> None:
        originator = "codex_exec" if self.exec else "codex-tui"
        payload: dict[str, Any] = {
            "session_id": self.parent_thread_id or self.thread_id,
            "id": self.thread_id,
        }
        if self.parent_thread_id:
            payload["parent_thread_id"] = self.parent_thread_id
        payload.update(
            timestamp=iso_ms(self.start),
            cwd=self.project.cwd,
            originator=originator,
            cli_version=self.version,
        )
        if self.delegate is not None:
            d = self.delegate
            payload["source"] = {
                "subagent": {
                    "thread_spawn": {
                        "parent_thread_id": self.parent_thread_id,
                        "depth": 1,
                        "agent_path": d.agent_path,
                        "agent_nickname": d.nickname,
                        "agent_role": d.agent_type,
                    }
                }
            }
            payload["thread_source"] = "subagent"
            payload["agent_nickname"] = d.nickname
            payload["agent_role"] = d.agent_type
            payload["agent_path"] = d.agent_path
        else:
            payload["source"] = "exec" if self.exec else "cli"
            payload["thread_source"] = "user"
        payload["model_provider"] = "openai"
        payload["base_instructions"] = {"text": _CODEX_BASE_INSTRUCTIONS}
        payload["history_mode"] = "legacy"
        payload["git"] = {
            "commit_hash": hashlib.sha1(f"{self.session.key}:git".encode()).hexdigest(),
            "branch": self.session.branch,
            "repository_url": self.project.repository_url,
        }
        self.add("session_meta", payload, when=first_record_at)

    def initial_context(self, day: date, agents_md: bool = True) -> None:
        self.message(
            "developer",
            [_CODEX_PERMISSIONS_EXEC if self.exec else _CODEX_PERMISSIONS, _CODEX_COLLABORATION],
        )
        texts = []
        if agents_md and self.project.agents_md:
            texts.append(
                f"# AGENTS.md instructions for {self.project.cwd}\n\n<INSTRUCTIONS>\n"
                f"{self.project.agents_md}</INSTRUCTIONS>"
            )
        texts.append(self.environment_context(day))
        self.message("user", texts)

    def environment_context(self, day: date) -> str:
        return (
            f"<environment_context>\n  <cwd>{self.project.cwd}</cwd>\n  <shell>zsh</shell>\n"
            f"  <current_date>{day.isoformat()}</current_date>\n"
            f"  <timezone>{TIMEZONE}</timezone>\n</environment_context>"
        )

    def turn_context(self, turn_id: str, day: date) -> None:
        sandbox = (
            {"type": "read-only"}
            if self.exec
            else {
                "type": "workspace-write",
                "writable_roots": [],
                "network_access": False,
                "exclude_tmpdir_env_var": False,
                "exclude_slash_tmp": False,
            }
        )
        self.add(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": self.project.cwd,
                "current_date": day.isoformat(),
                "timezone": TIMEZONE,
                "approval_policy": "never" if self.exec else "on-request",
                "sandbox_policy": sandbox,
                "model": CODEX_MODEL,
                "personality": "pragmatic",
                "collaboration_mode": {
                    "mode": "default",
                    "settings": {
                        "model": CODEX_MODEL,
                        "reasoning_effort": "medium",
                        "developer_instructions": None,
                    },
                },
                "realtime_active": False,
                "effort": "medium",
                "summary": "none",
                "truncation_policy": {"mode": "tokens", "limit": 10000},
            },
        )

    # -- turns --------------------------------------------------------------------------------

    def render_turns(self, turns: tuple[Turn, ...], times: list[datetime]) -> None:
        previous_day: date | None = None
        previous_aborted = False
        for index, (turn, local) in enumerate(zip(turns, times, strict=True)):
            at = to_utc(local)
            if index and at <= self.clock.now:
                raise ValueError(
                    f"{self.session.key}: turn {index} at {turn.at} starts before the previous "
                    f"turn ended ({iso_ms(self.clock.now)})"
                )
            self.clock.set(at)
            if index == 0:
                self.session_meta(at)
            turn_id = self.ids.uuid7(at)
            self.event(
                {
                    "type": "task_started",
                    "turn_id": turn_id,
                    "started_at": unix_s(at),
                    "model_context_window": 258400,
                    "collaboration_mode_kind": "default",
                }
            )
            day = local.date()
            if index == 0:
                self.initial_context(day)
            elif day != previous_day:
                # A resumed thread (days later): Codex re-sends the environment context.
                self.message("user", [self.environment_context(day)])
            if previous_aborted:
                self.message("user", [_TURN_ABORTED])
            self.turn_context(turn_id, day)
            self.clock.tick(0.001, 0.003)
            self.message("user", [turn.prompt])
            self.clock.tick(0.001, 0.002)
            self.event(
                {
                    "type": "user_message",
                    "message": turn.prompt,
                    "images": [],
                    "local_images": [],
                    "text_elements": [],
                }
            )
            self.clock.tick(0.3, 1.2)
            self.token_count(with_info=False)
            self.reasoning(turn_id)
            for step in turn.steps:
                self.step(step, turn_id)
            if turn.aborted:
                self.clock.tick(3, 12)
                self.event(
                    {
                        "type": "turn_aborted",
                        "turn_id": turn_id,
                        "reason": "interrupted",
                        "completed_at": unix_s(self.clock.now),
                        "duration_ms": unix_ms(self.clock.now) - unix_ms(at),
                    }
                )
            elif not turn.unfinished:
                self.final_answer(turn, turn_id, at)
            previous_day = day
            previous_aborted = turn.aborted

    def reasoning(self, turn_id: str) -> None:
        self.clock.tick(1.5, 6)
        summary = _REASONING_SUMMARIES[int(self.ids.frac() * len(_REASONING_SUMMARIES))]
        self.item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": summary}],
                "content": None,
                "encrypted_content": "gAAAAAB" + self.ids.b62(40) + self.ids.b62(40),
            }
        )

    def final_answer(self, turn: Turn, turn_id: str, started: datetime) -> None:
        first_token = self.clock.tick(2, 8)
        self.clock.tick(4, 14)
        self.event(
            {
                "type": "agent_message",
                "message": turn.answer,
                "phase": "final_answer",
                "memory_citation": None,
            }
        )
        self.message("assistant", [turn.answer], phase="final_answer")
        self.clock.tick(0.01, 0.03)
        self.token_count()
        self.clock.tick(0.01, 0.05)
        self.event(
            {
                "type": "task_complete",
                "turn_id": turn_id,
                "last_agent_message": turn.answer,
                "completed_at": unix_s(self.clock.now),
                "duration_ms": unix_ms(self.clock.now) - unix_ms(started),
                "time_to_first_token_ms": unix_ms(first_token) - unix_ms(started),
            }
        )

    # -- steps --------------------------------------------------------------------------------

    def step(self, step: Step, turn_id: str) -> None:
        if isinstance(step, Say):
            self.clock.tick(1.5, 5)
            self.event(
                {
                    "type": "agent_message",
                    "message": step.text,
                    "phase": "commentary",
                    "memory_citation": None,
                }
            )
            self.message("assistant", [step.text], phase="commentary")
        elif isinstance(step, Shell):
            self.exec_command(step.cmd, step.output, step.exit_code, turn_id)
        elif isinstance(step, Read):
            path = abs_path(self.project.cwd, step.path)
            self.exec_command(f"sed -n '1,200p' {path}", step.content, 0, turn_id)
        elif isinstance(step, Search):
            self.exec_command(f"rg -n '{step.pattern}' {step.path}", step.output, 0, turn_id)
        elif isinstance(step, Edit | Write):
            self.apply_patch(step, turn_id)
        elif isinstance(step, Delegate):
            self.spawn(step, turn_id)
        else:  # pragma: no cover - the spec has no other step kinds
            raise TypeError(step)

    def exec_command(self, cmd: str, output: str | None, code: int, turn_id: str) -> None:
        self.clock.tick(1.5, 6)
        call_id = "call_" + self.ids.b62(24)
        args = {
            "cmd": cmd,
            "workdir": self.project.cwd,
            "yield_time_ms": 10000,
            "max_output_tokens": 12000,
        }
        self.item(
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps(args, ensure_ascii=False),
                "call_id": call_id,
            }
        )
        self.clock.tick(0.2, 0.6)
        self.token_count()
        if output is None:
            return
        began = self.clock.now
        self.clock.tick(0.5, 20)
        wall = (self.clock.now - began).total_seconds()
        self.item(
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": (
                    f"Chunk ID: {self.ids.hex(6)}\nWall time: {wall:.4f} seconds\n"
                    f"Process exited with code {code}\n"
                    f"Original token count: {max(1, len(output) // 4)}\nOutput:\n{output}"
                ),
            }
        )
        self.clock.tick(0.005, 0.02)
        self.event(
            {
                "type": "exec_command_end",
                "call_id": call_id,
                "process_id": str(10000 + int(self.ids.frac() * 80000)),
                "turn_id": turn_id,
                "command": ["/bin/zsh", "-lc", cmd],
                "cwd": self.project.cwd,
                "parsed_cmd": [{"type": "unknown", "cmd": cmd}],
                "source": "unified_exec_startup",
                "stdout": "",
                "stderr": "",
                "aggregated_output": output,
                "exit_code": code,
                "duration": {"secs": int(wall), "nanos": int((wall % 1) * 1e9)},
                "formatted_output": "",
                "status": "completed" if code == 0 else "failed",
            }
        )

    def apply_patch(self, step: Edit | Write, turn_id: str) -> None:
        self.clock.tick(3, 12)
        call_id = "call_" + self.ids.b62(24)
        path = abs_path(self.project.cwd, step.path)
        rel = step.path
        if isinstance(step, Write):
            body = "".join(f"+{line}\n" for line in step.content.splitlines())
            patch = f"*** Begin Patch\n*** Add File: {rel}\n{body}*** End Patch\n"
            change = {"add": {"content": step.content}}
            letter = "A"
        else:
            old = "".join(f"-{line}\n" for line in step.old.splitlines())
            new = "".join(f"+{line}\n" for line in step.new.splitlines())
            patch = f"*** Begin Patch\n*** Update File: {rel}\n@@\n{old}{new}*** End Patch\n"
            change = {"update": {"unified_diff": f"@@\n{old}{new}", "move_path": None}}
            letter = "M"
        self.item(
            {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": call_id,
                "name": "apply_patch",
                "input": patch,
            }
        )
        self.clock.tick(0.05, 0.3)
        stdout = f"Success. Updated the following files:\n{letter} {rel}\n"
        self.event(
            {
                "type": "patch_apply_end",
                "call_id": call_id,
                "turn_id": turn_id,
                "stdout": stdout,
                "stderr": "",
                "success": True,
                "changes": {path: change},
            }
        )
        self.item(
            {
                "type": "custom_tool_call_output",
                "call_id": call_id,
                "output": f"Exit code: 0\nWall time: 0 seconds\nOutput:\n{stdout}",
            }
        )
        self.clock.tick(0.2, 0.6)
        self.token_count()

    def spawn(self, step: Delegate, turn_id: str) -> None:
        self.clock.tick(2, 6)
        call_id = "call_" + self.ids.b62(24)
        spawned_at = self.clock.now
        child_id = self.ids.uuid7(spawned_at)
        args = {"message": step.prompt, "agent_type": step.agent_type}
        self.item(
            {
                "type": "function_call",
                "name": "spawn_agent",
                "arguments": json.dumps(args, ensure_ascii=False),
                "call_id": call_id,
            }
        )
        self.clock.tick(0.3, 0.9)
        self.item(
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": json.dumps({"agent_id": child_id, "nickname": step.nickname}),
            }
        )
        self.event(
            {
                "type": "collab_agent_spawn_end",
                "call_id": call_id,
                "sender_thread_id": self.thread_id,
                "new_thread_id": child_id,
                "new_agent_nickname": step.nickname,
                "new_agent_role": step.agent_type,
                "prompt": step.prompt,
                "status": "running",
            }
        )
        child_session = Session(
            key=step.key,
            tool="codex",
            project=self.project,
            date=to_local(spawned_at).date().isoformat(),
            branch=self.session.branch,
            turns=(Turn(at="", prompt=step.prompt, answer=step.answer, steps=step.steps),),
        )
        child_start = spawned_at + timedelta(milliseconds=400)
        child = CodexRollout(
            child_session,
            child_id,
            child_start,
            Ids(step.key),
            parent_thread_id=self.thread_id,
            delegate=step,
        )
        child.render_turns(child_session.turns, [to_local(child_start + timedelta(seconds=1))])
        self.children.append(child)
        # The parent waits for the child, then reads its answer.
        wait_id = "call_" + self.ids.b62(24)
        self.clock.tick(0.5, 2)
        self.item(
            {
                "type": "function_call",
                "name": "wait_agent",
                "arguments": json.dumps({"ids": [child_id], "timeout_ms": 600000}),
                "call_id": wait_id,
            }
        )
        self.clock.set(child.clock.now + timedelta(milliseconds=350))
        self.item(
            {
                "type": "function_call_output",
                "call_id": wait_id,
                "output": json.dumps(
                    {"status": {child_id: {"completed": step.answer}}}, ensure_ascii=False
                ),
            }
        )
        self.token_count()

    # -- output -------------------------------------------------------------------------------

    def relpath(self) -> str:
        local = to_local(self.start)
        return f"sessions/{local:%Y/%m/%d}/rollout-{local:%Y-%m-%dT%H-%M-%S}-{self.thread_id}.jsonl"


def render_codex(
    session: Session, codex_home: Path, manifest: Manifest, history: list, index: list
) -> None:
    ids = Ids(session.key)
    times = turn_times(session.date, session.turns, ids)
    start = to_utc(times[0]) - timedelta(seconds=ids.between(15, 70))
    thread_id = ids.uuid7(start)
    rollout = CodexRollout(session, thread_id, start, ids)
    rollout.render_turns(session.turns, times)
    for item in (rollout, *rollout.children):
        path = codex_home / item.relpath()
        write_jsonl(path, item.records)
        manifest.files.append(str(path))
    complete = [t for t in session.turns if t.complete]
    title = session.names[-1].name if session.names else None
    manifest.tasks.append(
        TaskInfo(
            source="codex",
            native_id=thread_id,
            spec_key=session.key,
            project=session.project.key,
            ownership="delegated" if session.delegated else "user_owned",
            delegation="exec" if session.mode == "exec" else "",
            complete_turns=len(complete),
            unfinished=any(t.unfinished for t in session.turns),
            aborted_turns=sum(t.aborted for t in session.turns),
            days=tuple(sorted({t.date().isoformat() for t in times})),
            title=title,
            path=rollout.relpath(),
        )
    )
    for child in rollout.children:
        manifest.tasks.append(
            TaskInfo(
                source="codex",
                native_id=child.thread_id,
                spec_key=child.session.key,
                project=session.project.key,
                ownership="delegated",
                delegation="subagent",
                complete_turns=1,
                days=(to_local(child.start).date().isoformat(),),
                path=child.relpath(),
            )
        )
    ordinal = 0
    for turn, local in zip(session.turns, times, strict=True):
        manifest.plants.update(turn.plants)
        if not session.delegated:
            history.append(
                (
                    to_utc(local),
                    {"session_id": thread_id, "ts": unix_s(to_utc(local)), "text": turn.prompt},
                )
            )
        if turn.complete:
            manifest.add_gold(turn.gold, "codex", thread_id, ordinal)
            ordinal += 1
        elif turn.gold:
            raise ValueError(f"{session.key}: an incomplete turn cannot be a gold reference")
    for name in session.names:
        when = to_utc(datetime.fromisoformat(name.at)) + timedelta(seconds=ids.between(1, 50))
        index.append(
            (when, {"id": thread_id, "thread_name": name.name, "updated_at": iso_us(when)})
        )


# ----------------------------------------------------------------------------------------------
# Claude Code


def claude_project_key(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class ClaudeTranscript:
    """Builds one Claude Code transcript (a main session file or a subagent file)."""

    def __init__(
        self,
        session: Session,
        session_id: str,
        ids: Ids,
        clock: Clock,
        *,
        agent_id: str | None = None,
        agent_type: str | None = None,
    ) -> None:
        self.session = session
        self.project = session.project
        self.session_id = session_id
        self.ids = ids
        self.clock = clock
        self.agent_id = agent_id
        self.agent_type = agent_type
        self.records: list[dict[str, Any]] = []
        self.last_uuid: str | None = None
        self.prompt_id: str | None = None
        self.version = claude_version(to_local(clock.now).date())
        self.sdk = session.mode == "sdk"
        self.entrypoint = "sdk-cli" if self.sdk else "cli"
        if agent_id:
            self.model = CLAUDE_SUBAGENT_MODEL
        else:
            self.model = CLAUDE_SDK_MODEL if self.sdk else CLAUDE_MODEL
        self.children: list[tuple[ClaudeTranscript, dict[str, Any]]] = []
        self.turn_records = 0

    # -- envelope -----------------------------------------------------------------------------

    def _tail(self) -> dict[str, Any]:
        return {
            "userType": "external",
            "entrypoint": self.entrypoint,
            "cwd": self.project.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.session.branch,
        }

    def _head(self) -> dict[str, Any]:
        head: dict[str, Any] = {"parentUuid": self.last_uuid, "isSidechain": bool(self.agent_id)}
        if self.agent_id:
            head["agentId"] = self.agent_id
        return head

    def threaded(self, record: dict[str, Any]) -> str:
        self.records.append(record)
        self.last_uuid = record["uuid"]
        self.turn_records += 1
        return record["uuid"]

    def sidecar(self, record: dict[str, Any]) -> None:
        self.records.append(record)

    # -- records ------------------------------------------------------------------------------

    def user_prompt(self, text: str) -> str:
        self.prompt_id = self.prompt_id if self.agent_id else self.ids.uuid4()
        rec = self._head()
        rec["promptId"] = self.prompt_id
        rec["type"] = "user"
        rec["message"] = {"role": "user", "content": text}
        rec["uuid"] = self.ids.uuid4()
        rec["timestamp"] = iso_ms(self.clock.now)
        if not self.agent_id:
            rec["permissionMode"] = "default"
            rec["promptSource"] = "sdk" if self.sdk else "typed"
            if not self.sdk:
                rec["origin"] = {"kind": "human"}
        rec.update(self._tail())
        return self.threaded(rec)

    def assistant(self, block: dict[str, Any], msg_id: str, request_id: str, stop: Any) -> str:
        usage = {
            "input_tokens": int(self.ids.between(2, 12)),
            "cache_creation_input_tokens": int(self.ids.between(200, 4000)),
            "cache_read_input_tokens": int(self.ids.between(18000, 60000)),
            "output_tokens": int(self.ids.between(20, 700)),
            "service_tier": "standard",
            "cache_creation": {
                "ephemeral_1h_input_tokens": 0,
                "ephemeral_5m_input_tokens": 0,
            },
            "inference_geo": "not_available",
        }
        usage["cache_creation"]["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
        rec = self._head()
        rec["message"] = {
            "model": self.model,
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "stop_details": None,
            "usage": usage,
            "diagnostics": None,
        }
        rec["requestId"] = request_id
        if self.agent_id:
            rec["attributionAgent"] = self.agent_type
        rec["type"] = "assistant"
        rec["uuid"] = self.ids.uuid4()
        rec["timestamp"] = iso_ms(self.clock.now)
        rec["effort"] = "high"
        rec.update(self._tail())
        return self.threaded(rec)

    def tool_result(
        self,
        tool_use_id: str,
        parent: str,
        content: Any,
        result: Any,
        is_error: bool | None,
    ) -> str:
        block: dict[str, Any] = {
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": content,
        }
        if is_error is not None:
            block["is_error"] = is_error
        rec = self._head()
        rec["promptId"] = self.prompt_id
        rec["type"] = "user"
        rec["message"] = {"role": "user", "content": [block]}
        rec["uuid"] = self.ids.uuid4()
        rec["timestamp"] = iso_ms(self.clock.now)
        if result is not None:
            rec["toolUseResult"] = result
        rec["sourceToolAssistantUUID"] = parent
        rec.update(self._tail())
        return self.threaded(rec)

    def turn_duration(self, started: datetime) -> None:
        rec = {"parentUuid": self.last_uuid, "isSidechain": False, "type": "system"}
        rec["subtype"] = "turn_duration"
        rec["durationMs"] = unix_ms(self.clock.now) - unix_ms(started)
        rec["messageCount"] = self.turn_records
        rec["timestamp"] = iso_ms(self.clock.now)
        rec["uuid"] = self.ids.uuid4()
        rec["isMeta"] = False
        rec.update(self._tail())
        self.threaded(rec)

    # -- a turn -------------------------------------------------------------------------------

    def new_message(self) -> tuple[str, str]:
        return "msg_01" + self.ids.b62(22), "req_011C" + self.ids.b62(21)

    def thinking(self, msg: tuple[str, str]) -> None:
        text = "" if self.ids.frac() < 0.6 else "Let me look at the relevant code before answering."
        self.clock.tick(1.5, 5)
        block = {"type": "thinking", "thinking": text, "signature": "Eu" + self.ids.b62(60)}
        self.assistant(block, *msg, stop=None)

    def render_turn(self, turn: Turn, at: datetime) -> None:
        self.clock.set(at)
        self.turn_records = 0
        if not self.agent_id:
            self.sidecar(
                {
                    "type": "file-history-snapshot",
                    "messageId": "",  # filled below with the prompt's uuid
                    "snapshot": {
                        "messageId": "",
                        "trackedFileBackups": {},
                        "timestamp": iso_ms(at),
                    },
                    "isSnapshotUpdate": False,
                }
            )
            snapshot = self.records[-1]
        prompt_uuid = self.user_prompt(turn.prompt)
        if not self.agent_id:
            snapshot["messageId"] = prompt_uuid
            snapshot["snapshot"]["messageId"] = prompt_uuid
        pending_say: str | None = None
        first_call = True
        for step in turn.steps:
            if isinstance(step, Say):
                if pending_say is not None:
                    raise ValueError(f"{self.session.key}: two commentary steps in a row")
                pending_say = step.text
                continue
            msg = self.new_message()
            if first_call:
                self.thinking(msg)
                first_call = False
            if pending_say is not None:
                self.clock.tick(1, 4)
                self.assistant({"type": "text", "text": pending_say}, *msg, stop=None)
                pending_say = None
            self.tool_step(step, msg)
        if pending_say is not None:
            raise ValueError(f"{self.session.key}: commentary must be followed by a tool call")
        msg = self.new_message()
        if first_call:
            self.thinking(msg)
        self.clock.tick(4, 15)
        # Streamed records often carry no stop_reason; subagents always end with end_turn.
        stop = "end_turn" if self.agent_id or self.ids.frac() < 0.7 else None
        self.assistant({"type": "text", "text": turn.answer}, *msg, stop=stop)
        if not self.agent_id:
            self.clock.tick(0.05, 0.3)
            self.turn_duration(at)

    def tool_step(self, step: Step, msg: tuple[str, str]) -> None:
        tool_id = "toolu_01" + self.ids.b62(22)
        self.clock.tick(1.5, 6)
        cwd = self.project.cwd
        if isinstance(step, Shell):
            name = "Bash"
            tool_input: dict[str, Any] = {"command": step.cmd}
            tool_input["description"] = step.description or "Run command"
        elif isinstance(step, Read):
            name, tool_input = "Read", {"file_path": abs_path(cwd, step.path)}
        elif isinstance(step, Search):
            name = "Grep"
            tool_input = {
                "pattern": step.pattern,
                "path": abs_path(cwd, step.path),
                "output_mode": "content",
                "-n": True,
            }
        elif isinstance(step, Edit):
            name = "Edit"
            tool_input = {
                "file_path": abs_path(cwd, step.path),
                "old_string": step.old,
                "new_string": step.new,
                "replace_all": False,
            }
        elif isinstance(step, Write):
            name = "Write"
            tool_input = {"file_path": abs_path(cwd, step.path), "content": step.content}
        elif isinstance(step, Delegate):
            name = "Agent"
            tool_input = {
                "description": step.description,
                "prompt": step.prompt,
                "subagent_type": step.agent_type,
            }
        else:  # pragma: no cover
            raise TypeError(step)
        block = {
            "type": "tool_use",
            "id": tool_id,
            "name": name,
            "input": tool_input,
            "caller": {"type": "direct"},
        }
        parent = self.assistant(block, *msg, stop="tool_use")
        if isinstance(step, Delegate):
            self.clock.tick(0.3, 1)
            content, result = self.spawn(step, tool_id)
            self.tool_result(tool_id, parent, content, result, None)
            return
        self.clock.tick(0.3, 15 if isinstance(step, Shell) else 1.5)
        content, result, is_error = tool_output(step, cwd)
        self.tool_result(tool_id, parent, content, result, is_error)

    def spawn(self, step: Delegate, tool_id: str) -> tuple[Any, dict[str, Any]]:
        agent_id = "a" + self.ids.hex(16)
        ids = Ids(step.key)
        child_clock = Clock(self.clock.now, ids)
        child_session = Session(
            key=step.key,
            tool="claude",
            project=self.project,
            date=to_local(self.clock.now).date().isoformat(),
            branch=self.session.branch,
            turns=(),
        )
        child = ClaudeTranscript(
            child_session,
            self.session_id,
            ids,
            child_clock,
            agent_id=agent_id,
            agent_type=step.agent_type,
        )
        child.prompt_id = self.prompt_id
        child.version = self.version
        started = child_clock.now
        child.render_turn(
            Turn(at="", prompt=step.prompt, answer=step.answer, steps=step.steps), started
        )
        meta = {
            "agentType": step.agent_type,
            "description": step.description,
            "toolUseId": tool_id,
            "spawnDepth": 1,
        }
        self.children.append((child, meta))
        self.clock.set(child_clock.now + timedelta(milliseconds=500))
        duration = unix_ms(self.clock.now) - unix_ms(started)
        tokens = int(ids.between(15000, 40000))
        tool_uses = sum(not isinstance(s, Say) for s in step.steps)
        content = [
            {"type": "text", "text": step.answer},
            {
                "type": "text",
                "text": (
                    f"agentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue "
                    f"this agent)\n<usage>total_tokens: {tokens}\ntool_uses: {tool_uses}\n"
                    f"duration_ms: {duration}</usage>"
                ),
            },
        ]
        result = {
            "status": "completed",
            "prompt": step.prompt,
            "agentId": agent_id,
            "agentType": step.agent_type,
            "resolvedModel": CLAUDE_SUBAGENT_MODEL,
            "content": [{"type": "text", "text": step.answer}],
            "totalDurationMs": duration,
            "totalTokens": tokens,
            "totalToolUseCount": tool_uses,
            "toolStats": {
                "readCount": sum(isinstance(s, Read) for s in step.steps),
                "searchCount": sum(isinstance(s, Search) for s in step.steps),
                "bashCount": sum(isinstance(s, Shell) for s in step.steps),
                "editFileCount": sum(isinstance(s, Edit | Write) for s in step.steps),
                "linesAdded": 0,
                "linesRemoved": 0,
                "otherToolCount": 0,
            },
        }
        return content, result


def tool_output(step: Step, cwd: str) -> tuple[Any, Any, bool | None]:
    """The tool_result content, the toolUseResult sidecar and is_error for a Claude tool call."""
    if isinstance(step, Shell):
        out = step.output or ""
        if step.exit_code:
            text = f"Exit code {step.exit_code}\n{out}"
            return text, f"Error: {text}", True
        result = {
            "stdout": out,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": not out,
        }
        return out or "(Bash completed with no output)", result, False
    if isinstance(step, Read):
        lines = step.content.splitlines()
        numbered = "\n".join(f"{i:>6}→{line}" for i, line in enumerate(lines, 1))
        path = abs_path(cwd, step.path)
        result = {
            "type": "text",
            "file": {
                "filePath": path,
                "content": step.content,
                "numLines": len(lines),
                "startLine": 1,
                "totalLines": len(lines),
            },
        }
        return numbered, result, None
    if isinstance(step, Search):
        matches = step.output.splitlines()
        files = sorted({m.split(":", 1)[0] for m in matches if ":" in m})
        result = {
            "mode": "content",
            "numFiles": len(files),
            "filenames": files,
            "content": step.output,
            "numLines": len(matches),
        }
        return step.output, result, None
    if isinstance(step, Edit):
        path = abs_path(cwd, step.path)
        old, new = step.old.splitlines(), step.new.splitlines()
        result = {
            "filePath": path,
            "oldString": step.old,
            "newString": step.new,
            "originalFile": None,
            "structuredPatch": [
                {
                    "oldStart": 1,
                    "oldLines": len(old),
                    "newStart": 1,
                    "newLines": len(new),
                    "lines": [f"-{x}" for x in old] + [f"+{x}" for x in new],
                }
            ],
            "userModified": False,
            "replaceAll": False,
        }
        return f"The file {path} has been updated successfully.", result, None
    if isinstance(step, Write):
        path = abs_path(cwd, step.path)
        result = {
            "type": "create",
            "filePath": path,
            "content": step.content,
            "structuredPatch": [],
            "originalFile": None,
        }
        return f"File created successfully at: {path}", result, None
    raise TypeError(step)  # pragma: no cover


def render_claude(session: Session, claude_home: Path, manifest: Manifest, history: list) -> None:
    ids = Ids(session.key)
    session_id = ids.uuid4()
    times = turn_times(session.date, session.turns, ids)
    clock = Clock(to_utc(times[0]), ids)
    transcript = ClaudeTranscript(session, session_id, ids, clock)
    transcript.sidecar(
        {"type": "permission-mode", "permissionMode": "default", "sessionId": session_id}
    )
    previous_day = times[0].date()
    for index, (turn, local) in enumerate(zip(session.turns, times, strict=True)):
        if not turn.complete:
            raise ValueError(f"{session.key}: Claude turns in the demo are always complete")
        at = to_utc(local)
        if index and at <= clock.now:
            raise ValueError(f"{session.key}: turn {index} starts before the previous one ended")
        if local.date() != previous_day:
            # The user left the session open and came back another day: the earlier day ended
            # with a last-prompt sidecar like any pause does.
            transcript.sidecar(last_prompt(session_id, session.turns[index - 1], transcript))
            previous_day = local.date()
        transcript.render_turn(turn, at)
        if index == 0 and session.ai_title:
            transcript.sidecar(
                {"type": "ai-title", "sessionId": session_id, "aiTitle": session.ai_title}
            )
        manifest.plants.update(turn.plants)
        manifest.add_gold(turn.gold, "claude_code", session_id, index)
        if not session.delegated:
            history.append(
                (
                    at,
                    {
                        "display": turn.prompt,
                        "pastedContents": {},
                        "timestamp": unix_ms(at),
                        "project": session.project.cwd,
                        "sessionId": session_id,
                    },
                )
            )
    transcript.sidecar(last_prompt(session_id, session.turns[-1], transcript))
    project_dir = claude_home / "projects" / claude_project_key(session.project.cwd)
    path = project_dir / f"{session_id}.jsonl"
    write_jsonl(path, transcript.records)
    manifest.files.append(str(path))
    manifest.tasks.append(
        TaskInfo(
            source="claude_code",
            native_id=session_id,
            spec_key=session.key,
            project=session.project.key,
            ownership="delegated" if session.delegated else "user_owned",
            delegation="sdk" if session.mode == "sdk" else "",
            complete_turns=len(session.turns),
            days=tuple(sorted({t.date().isoformat() for t in times})),
            title=session.ai_title,
            path=str(path.relative_to(claude_home)),
        )
    )
    for child, meta in transcript.children:
        sub = project_dir / session_id / "subagents" / f"agent-{child.agent_id}"
        write_jsonl(sub.with_suffix(".jsonl"), child.records)
        write_text(sub.with_suffix(".meta.json"), dumps(meta))
        manifest.files += [str(sub.with_suffix(".jsonl")), str(sub.with_suffix(".meta.json"))]
        manifest.tasks.append(
            TaskInfo(
                source="claude_code",
                native_id=f"{session_id}/agent-{child.agent_id}",
                spec_key=child.session.key,
                project=session.project.key,
                ownership="delegated",
                delegation="subagent",
                complete_turns=1,
                days=(to_local(to_utc(times[0])).date().isoformat(),),
                title=meta["description"] or None,
                path=str(sub.with_suffix(".jsonl").relative_to(claude_home)),
            )
        )


def last_prompt(session_id: str, turn: Turn, transcript: ClaudeTranscript) -> dict[str, Any]:
    return {
        "type": "last-prompt",
        "lastPrompt": turn.prompt,
        "leafUuid": transcript.last_uuid,
        "sessionId": session_id,
    }


# ----------------------------------------------------------------------------------------------
# Chat imports


def render_chats(chats: tuple[ImportChat, ...], imports_dir: Path, manifest: Manifest) -> None:
    by_file: dict[str, list[dict[str, Any]]] = {}
    for chat in chats:
        ids = Ids(chat.key)
        day = date.fromisoformat(chat.date)
        lines = by_file.setdefault(chat.file, [])
        messages = [
            (msg, turn_index)
            for turn_index, turn in enumerate(chat.turns)
            for msg in (*turn.prompt, *turn.outcome)
        ]
        stamps = []
        for msg, _ in messages:
            if " " in msg.at:
                day_s, hm = msg.at.split(" ")
                day = date.fromisoformat(day_s)
            else:
                hm = msg.at
            hh, mm = (int(x) for x in hm.split(":"))
            stamps.append(datetime(day.year, day.month, day.day, hh, mm, int(ids.between(0, 59))))
        for (msg, _), local in zip(messages, stamps, strict=True):
            line: dict[str, Any] = {"task_id": chat.task_id}
            if msg.title:
                line["title"] = msg.title
            if chat.kind == "assistant":
                line["role"] = msg.speaker
                line["message_id"] = ids.uuid4()
            else:
                if msg.speaker == chat.turns[0].prompt[0].speaker:
                    line["role"] = "human"
                line["speaker"] = msg.speaker
            line["text"] = msg.text
            line["timestamp"] = chat_timestamp(local, chat.timestamps)
            lines.append(line)
        earliest = min(stamps)
        titles = [m.title for m, _ in messages if m.title]
        manifest.tasks.append(
            TaskInfo(
                source="chat_import",
                native_id=chat.task_id,
                spec_key=chat.key,
                project=chat.project,
                ownership="user_owned",
                complete_turns=len(chat.turns),
                days=(to_local(to_utc(earliest)).date().isoformat(),),
                title=titles[-1] if titles else None,
                path=f"imports/{chat.file}",
            )
        )
        for ordinal, turn in enumerate(chat.turns):
            manifest.plants.update(turn.plants)
            manifest.add_gold(turn.gold, "chat_import", chat.task_id, ordinal)
    for name, lines in by_file.items():
        path = imports_dir / name
        write_jsonl(path, lines)
        manifest.files.append(str(path))


def chat_timestamp(local: datetime, style: str) -> str:
    when = to_utc(local)
    if style == "utc-naive":
        return when.strftime("%Y-%m-%dT%H:%M:%S")
    if style == "utc-z":
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    offset = 2 if local < _DST_END_LOCAL else 1
    return local.strftime("%Y-%m-%dT%H:%M:%S") + f"+{offset:02d}:00"


# ----------------------------------------------------------------------------------------------
# Writing


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    write_text(path, "".join(dumps(r) + "\n" for r in records))


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def render_inbox(documents: Path, inbox: Path, manifest: Manifest) -> None:
    """The demo inbox (issue 33): the hand-written documents, a `.pdf.txt` rendered into a PDF
    with a text layer (one page per form feed)."""
    from memory_pipeline.demo.pdf import text_pdf

    inbox.mkdir(parents=True, exist_ok=True)
    for src in sorted(documents.iterdir()):
        if src.name == "README.md" or not src.is_file():
            continue
        if src.name.endswith(".pdf.txt"):
            pages = src.read_text(encoding="utf-8").split("\f")
            target = inbox / src.name.removesuffix(".txt")
            title = pages[0].splitlines()[0]
            target.write_bytes(text_pdf(pages, title=title, created=DEMO_PDF_DATE))
        else:
            target = inbox / src.name
            target.write_bytes(src.read_bytes())
        manifest.files.append(str(target))


def build(out_dir: Path = CORPUS_DIR, gold_path: Path | None = None) -> Manifest:
    """Write the whole corpus under `out_dir` (and gold.jsonl to `gold_path`)."""
    out_dir = Path(out_dir)
    gold_path = Path(gold_path) if gold_path is not None else out_dir.parent / "gold.jsonl"
    manifest = Manifest()
    codex_home = out_dir / "codex_home"
    claude_home = out_dir / "claude_home"
    codex_history: list = []
    session_index: list = []
    claude_history: list = []
    keys = [s.key for s in SESSIONS] + [c.key for c in CHATS]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate spec keys")
    for session in SESSIONS:
        if session.tool == "codex":
            render_codex(session, codex_home, manifest, codex_history, session_index)
        else:
            render_claude(session, claude_home, manifest, claude_history)
    render_chats(CHATS, out_dir / "imports", manifest)
    from memory_pipeline.demo.agents import DEMO_AGENTS  # they use this module's helpers

    for agent in DEMO_AGENTS:  # the other agents: one module each (demo/agents/)
        agent.render(out_dir / agent.HOME, manifest)
    render_inbox(DOCUMENTS_DIR, out_dir / "inbox", manifest)
    for path, entries in (
        (codex_home / "history.jsonl", codex_history),
        (codex_home / "session_index.jsonl", session_index),
        (claude_home / "history.jsonl", claude_history),
    ):
        write_jsonl(path, [entry for _, entry in sorted(entries, key=lambda e: e[0])])
        manifest.files.append(str(path))
    missing = sorted(set(QUERIES) - set(manifest.gold))
    if missing:
        raise ValueError(f"gold queries without a tagged turn: {missing}")
    gold_lines = [
        {
            "id": qid,
            "query": QUERIES[qid].query,
            "relevant": manifest.gold[qid],
            "kind": QUERIES[qid].kind,
        }
        for qid in sorted(QUERIES)
    ]
    write_jsonl(gold_path, gold_lines)
    manifest.files.append(str(gold_path))
    return manifest


def stats(manifest: Manifest) -> str:
    lines = []
    by_source: Counter = Counter()
    turns: Counter = Counter()
    for task in manifest.tasks:
        by_source[(task.source, task.ownership)] += 1
        turns[(task.source, task.ownership)] += task.complete_turns
    for (source, ownership), count in sorted(by_source.items()):
        lines.append(
            f"{source:12} {ownership:10} tasks={count:3} complete_turns="
            f"{turns[(source, ownership)]}"
        )
    lines.append(f"total tasks={len(manifest.tasks)} complete_turns={sum(turns.values())}")
    lines.append("plants: " + ", ".join(f"{k}={v}" for k, v in sorted(manifest.plants.items())))
    lines.append(f"gold queries={len(manifest.gold)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=CORPUS_DIR, help="corpus directory")
    parser.add_argument("--gold", type=Path, default=None, help="gold.jsonl path")
    parser.add_argument("--stats", action="store_true", help="also print corpus statistics")
    args = parser.parse_args(argv)
    gold = args.gold
    if gold is None and args.out.resolve() == CORPUS_DIR:
        gold = GOLD_PATH
    for sub in OUTPUT_DIRS:  # files of a renamed or removed spec entry must not linger
        shutil.rmtree(args.out / sub, ignore_errors=True)
    manifest = build(args.out, gold)
    print(f"wrote {len(manifest.files)} files under {args.out}")
    if args.stats:
        print(stats(manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
