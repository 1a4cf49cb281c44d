"""OpenCode demo sessions, written as OpenCode 1.1 writes its JSON storage.

`opencode_home/` is an OpenCode data directory (`$XDG_DATA_HOME/opencode`): `storage/project/`,
`storage/session/<projectID>/`, `storage/message/<sessionID>/`, `storage/part/<messageID>/`, one
`JSON.stringify(value, null, 2)` file each (anomalyco/opencode `storage/storage.ts`,
`session/index.ts`, `session/message-v2.ts`). One interactive session in logslice, and the child
session its `task` tool opened for the `@explore` subagent (`parentID`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.demo import build_corpus as bc
from memory_pipeline.demo.conversations.projects import LOGSLICE
from memory_pipeline.demo.spec import Delegate, Read, Session, Shell, Turn, steps

HOME = "opencode_home"
VERSION = "1.1.36"
PROJECT_ID = "5d0c2b4f8e1a9c7b3f6d2e0a4c8b1f9e7d3a5c60"  # the repository's first commit

SESSIONS: tuple[Session, ...] = (
    Session(
        key="opencode-logslice-follow",
        tool="opencode",
        project=LOGSLICE,
        date="2026-10-21",
        summary="OpenCode: a --follow mode for logslice (tail a growing log)",
        turns=(
            Turn(
                at="14:05",
                prompt="Add a `--follow` flag to logslice: keep printing new lines in the window "
                "as the file grows, like `tail -f`. What's the least invasive way?",
                steps=steps(
                    Read("src/main.rs", "fn main() -> anyhow::Result<()> {\n    let args ..."),
                    Delegate(
                        key="opencode-logslice-follow-explore",
                        prompt="Find where logslice opens and reads the input file, and whether "
                        "anything assumes the file stops growing.",
                        steps=steps(Shell("rg -n 'File::open|read_until' src", "src/reader.rs")),
                        answer="`src/reader.rs:18` opens the file and `read_until` loops to "
                        "EOF; nothing else assumes a fixed size except the progress bar, which "
                        "reads `metadata().len()` once.",
                        agent_type="explore",
                    ),
                ),
                answer="Least invasive: keep the reader, and when `--follow` is set, treat EOF "
                "as 'sleep 250 ms and try again' instead of the end. The only thing that "
                "assumes a fixed size is the progress bar, so `--follow` disables it. I'd poll "
                "rather than use inotify: it works the same on macOS and over NFS.",
            ),
            Turn(
                at="14:19",
                prompt="Polling is fine. What happens on logrotate with copytruncate?",
                steps=steps(Shell("cargo test follow", "test follow_truncated ... ok")),
                answer="With copytruncate the file shrinks under us: if the current offset is "
                "past the new length, `--follow` seeks back to 0 and goes on. I added "
                "`follow_truncated`, which truncates the file mid-read; it passes.",
                plants=("insight",),
            ),
        ),
    ),
)


def _write(path: Path, obj: Any, manifest: bc.Manifest) -> None:
    bc.write_text(path, json.dumps(obj, indent=2, ensure_ascii=False))
    manifest.files.append(str(path))


class _Writer:
    def __init__(self, home: Path, manifest: bc.Manifest, ids: bc.Ids) -> None:
        self.storage = home / "storage"
        self.manifest = manifest
        self.ids = ids
        self.counter = 0

    def id(self, prefix: str, ms: int) -> str:
        """OpenCode's ascending ids (`id/id.ts`): 6 bytes of time * 0x1000 + a counter in hex,
        then 14 random base62 characters."""
        self.counter += 1
        return f"{prefix}_{(ms * 0x1000 + self.counter) % (1 << 48):012x}{self.ids.b62(14)}"

    def session(self, sid: str, title: str, start: datetime, end: datetime, **extra: Any) -> None:
        info = {
            "id": sid,
            "slug": sid[4:14].lower(),
            "version": VERSION,
            "projectID": PROJECT_ID,
            "directory": LOGSLICE.cwd,
            "title": title,
            "time": {"created": bc.unix_ms(start), "updated": bc.unix_ms(end)},
            **extra,
        }
        _write(self.storage / "session" / PROJECT_ID / f"{sid}.json", info, self.manifest)

    def message(self, sid: str, info: dict[str, Any], parts: list[dict[str, Any]]) -> str:
        mid = info["id"]
        _write(self.storage / "message" / sid / f"{mid}.json", info, self.manifest)
        for part in parts:
            pid = self.id("prt", info["time"]["created"])
            body = {"id": pid, "sessionID": sid, "messageID": mid, **part}
            _write(self.storage / "part" / mid / f"{pid}.json", body, self.manifest)
        return mid

    def user(self, sid: str, when: datetime, text: str) -> str:
        mid = self.id("msg", bc.unix_ms(when))
        info = {
            "id": mid,
            "sessionID": sid,
            "role": "user",
            "time": {"created": bc.unix_ms(when)},
            "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"},
        }
        return self.message(sid, info, [{"type": "text", "text": text}])

    def assistant(
        self,
        sid: str,
        parent: str,
        start: datetime,
        end: datetime,
        parts: list[dict[str, Any]],
        finish: str,
    ) -> str:
        info = {
            "id": self.id("msg", bc.unix_ms(start)),
            "sessionID": sid,
            "role": "assistant",
            "time": {"created": bc.unix_ms(start), "completed": bc.unix_ms(end)},
            "parentID": parent,
            "modelID": "claude-sonnet-4-5",
            "providerID": "anthropic",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": LOGSLICE.cwd, "root": LOGSLICE.cwd},
            "cost": round(self.ids.between(0.002, 0.03), 5),
            "tokens": {
                "input": int(self.ids.between(2000, 9000)),
                "output": int(self.ids.between(80, 900)),
                "reasoning": 0,
                "cache": {"read": 0, "write": 0},
            },
            "finish": finish,
        }
        step_start = {"type": "step-start"}
        step_finish = {"type": "step-finish", "reason": finish, "cost": info["cost"], "tokens": {}}
        return self.message(sid, info, [step_start, *parts, step_finish])


def _tool(step: Any, at: datetime) -> dict[str, Any]:
    if isinstance(step, Read):
        tool, args, output = "read", {"filePath": step.path}, step.content
    else:
        tool, args, output = "bash", {"command": step.cmd}, step.output or ""
    return {
        "type": "tool",
        "callID": f"toolu_{bc.unix_ms(at):x}",
        "tool": tool,
        "state": {
            "status": "completed",
            "input": args,
            "output": output,
            "title": getattr(step, "path", getattr(step, "cmd", "")),
            "metadata": {},
            "time": {"start": bc.unix_ms(at), "end": bc.unix_ms(at) + 40},
        },
    }


def render(home: Path, manifest: bc.Manifest) -> None:
    for session in SESSIONS:
        ids = bc.Ids(session.key)
        w = _Writer(home, manifest, ids)
        times = [bc.to_utc(t) for t in bc.turn_times(session.date, session.turns, ids)]
        sid = w.id("ses", bc.unix_ms(times[0]))
        children: list[tuple[Delegate, datetime]] = []
        for turn, at in zip(session.turns, times, strict=True):
            uid = w.user(sid, at, turn.prompt)
            clock = at + timedelta(seconds=2)
            for step in turn.steps:
                if isinstance(step, Delegate):
                    children.append((step, clock))
                    part = {
                        "type": "tool",
                        "callID": f"toolu_{bc.unix_ms(clock):x}",
                        "tool": "task",
                        "state": {
                            "status": "completed",
                            "input": {"description": "explore", "prompt": step.prompt},
                            "output": step.answer,
                            "title": "explore",
                            "metadata": {},
                            "time": {"start": bc.unix_ms(clock), "end": bc.unix_ms(clock) + 9000},
                        },
                    }
                else:
                    part = _tool(step, clock)
                end = clock + timedelta(seconds=12)
                w.assistant(sid, uid, clock, end, [part], "tool-calls")
                clock = end + timedelta(seconds=1)
            text = {"type": "text", "text": turn.answer, "time": {"start": bc.unix_ms(clock)}}
            w.assistant(sid, uid, clock, clock + timedelta(seconds=20), [text], "stop")
            manifest.plants.update(turn.plants)
        title = "Add a --follow mode to logslice"
        w.session(sid, title, times[0], times[-1] + timedelta(minutes=1))
        manifest.tasks.append(
            bc.TaskInfo(
                source="opencode",
                native_id=sid,
                spec_key=session.key,
                project=session.project.key,
                ownership="user_owned",
                complete_turns=len(session.turns),
                days=(session.date,),
                title=title,
                path=f"{HOME}/storage/session/{PROJECT_ID}/{sid}.json",
            )
        )
        for delegate, at in children:
            cid = w.id("ses", bc.unix_ms(at))
            uid = w.user(cid, at, delegate.prompt)
            text = {"type": "text", "text": delegate.answer}
            done = at + timedelta(seconds=9)
            w.assistant(cid, uid, at + timedelta(seconds=1), done, [text], "stop")
            w.session(
                cid,
                f"Find the file reading code (@{delegate.agent_type} subagent)",
                at,
                at + timedelta(seconds=9),
                parentID=sid,
            )
            manifest.tasks.append(
                bc.TaskInfo(
                    source="opencode",
                    native_id=cid,
                    spec_key=delegate.key,
                    project=session.project.key,
                    ownership="delegated",
                    delegation="subagent",
                    complete_turns=1,
                    days=(session.date,),
                    path=f"{HOME}/storage/session/{PROJECT_ID}/{cid}.json",
                )
            )
