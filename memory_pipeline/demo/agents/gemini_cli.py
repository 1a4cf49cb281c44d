"""Gemini CLI demo sessions, written as Gemini CLI 0.56 writes its directory.

`gemini_home/.gemini/` is Gemini CLI's directory (`~/.gemini`; google-gemini/gemini-cli @
5411f113): `projects.json` and `tmp/homelab/.project_root` (the project registry,
`config/projectRegistry.ts`), `tmp/homelab/logs.json` (the prompts typed into the interactive UI,
`core/logger.ts`) and `tmp/homelab/chats/session-<UTC minute>-<id8>.jsonl` (the session logs,
`services/chatRecordingService.ts`: a metadata line, each message as one compact JSON line, a
`gemini` message written again with its tool calls, the tool response as a `user` message, a
`{"$set": {"lastUpdated"}}` after each message). One interactive session in homelab, and a
`gemini -p` run there (delegated: its prompt is in no `logs.json`).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.demo import build_corpus as bc
from memory_pipeline.demo.conversations.projects import HOMELAB
from memory_pipeline.demo.spec import Session, Turn

HOME = "gemini_home/.gemini"
MODEL = "gemini-2.5-pro"
SLUG = "homelab"

CHAT = Session(
    key="gemini-homelab-backup-window",
    tool="gemini",
    project=HOMELAB,
    date="2026-10-23",
    summary="Gemini CLI: move the Proxmox backup window off the ZFS scrub",
    turns=(
        Turn(
            at="19:40",
            prompt="The nightly vzdump backups got slow since Sunday. Look at "
            "ansible/roles/proxmox/templates/vzdump.cron.j2 and tell me why.",
            answer="The backup window now overlaps the monthly ZFS scrub: `vzdump.cron.j2` "
            "starts at 01:00 and the scrub that `zfsutils-linux` schedules for the second "
            "Sunday runs 00:24 until about 06:00, so both read the same pool. Backups are slow "
            "only in scrub week, which matches 'since Sunday'.",
            plants=("insight",),
        ),
        Turn(
            at="19:52",
            prompt="Move the backups to 21:30 and keep the scrub where it is.",
            answer="Done: `vzdump.cron.j2` starts at 21:30 now, and the role's default "
            "`proxmox_backup_hour` is 21 with `proxmox_backup_minute` 30. The scrub stays on the "
            "second Sunday; the two no longer overlap even if a backup runs three hours.",
            plants=("decision",),
        ),
    ),
)
HEADLESS = Session(
    key="gemini-homelab-lint",
    tool="gemini",
    project=HOMELAB,
    date="2026-10-24",
    mode="exec",
    summary="gemini -p: ansible-lint over the proxmox role",
    turns=(
        Turn(
            at="06:15",
            prompt="Run ansible-lint on roles/proxmox and list only the errors.",
            answer="ansible-lint found no errors in `roles/proxmox` (two warnings: "
            "`name[casing]` in tasks/main.yml lines 12 and 31).",
        ),
    ),
)


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


class _Log:
    """A session log as ChatRecordingService appends it."""

    def __init__(self, session_id: str, project_hash: str, start: datetime) -> None:
        self.lines: list[str] = []
        meta = {
            "sessionId": session_id,
            "projectHash": project_hash,
            "startTime": bc.iso_ms(start),
            "lastUpdated": bc.iso_ms(start),
            "kind": "main",
        }
        self.lines.append(_line(meta))

    def message(self, record: dict[str, Any], again: bool = False) -> None:
        self.lines.append(_line(record))
        if not again:
            later = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
            later += timedelta(milliseconds=1)
            self.lines.append(_line({"$set": {"lastUpdated": bc.iso_ms(later)}}))


def _tokens(ids: bc.Ids) -> dict[str, int]:
    prompt = 7000 + int(ids.between(0, 4000))
    out = 120 + int(ids.between(0, 300))
    thoughts = 40 + int(ids.between(0, 200))
    return {
        "input": prompt,
        "output": out,
        "cached": 0,
        "thoughts": thoughts,
        "tool": 0,
        "total": prompt + out + thoughts,
    }


def _render(session: Session, log_entries: list[dict[str, Any]], ids: bc.Ids) -> _Log:
    times = [bc.to_utc(t) for t in bc.turn_times(session.date, session.turns, ids)]
    session_id = ids.uuid4()
    clock = bc.Clock(times[0] - timedelta(seconds=20), ids)
    project_hash = hashlib.sha256(session.project.cwd.encode()).hexdigest()
    log = _Log(session_id, project_hash, clock.now)
    for n, (turn, at) in enumerate(zip(session.turns, times, strict=True)):
        clock.set(at)
        if not session.delegated:
            typed = at - timedelta(milliseconds=20)
            log_entries.append(
                {
                    "sessionId": session_id,
                    "messageId": n,
                    "timestamp": bc.iso_ms(typed),
                    "type": "user",
                    "message": turn.prompt,
                }
            )
        log.message(
            {
                "id": ids.uuid4(),
                "timestamp": bc.iso_ms(at),
                "type": "user",
                "content": [{"text": turn.prompt}],
            }
        )
        if n == 0 and not session.delegated:
            # the first turn reads the template: narration with a tool call, then its response
            said = clock.tick(3, 6)
            narration = {
                "id": ids.uuid4(),
                "timestamp": bc.iso_ms(said),
                "type": "gemini",
                "content": "I'll read the cron template first.",
                "thoughts": [
                    {
                        "subject": "Reading the backup schedule",
                        "description": "The template decides when vzdump runs.",
                        "timestamp": bc.iso_ms(said),
                    }
                ],
                "tokens": _tokens(ids),
                "model": MODEL,
            }
            log.message(narration)
            call_id = f"read_file-{bc.unix_ms(said)}-0"
            path = f"{session.project.cwd}/ansible/roles/proxmox/templates/vzdump.cron.j2"
            output = "0 1 * * * root vzdump --all --mode snapshot --compress zstd"
            narration["toolCalls"] = [
                {
                    "id": call_id,
                    "name": "read_file",
                    "args": {"absolute_path": path},
                    "result": [
                        {
                            "functionResponse": {
                                "id": call_id,
                                "name": "read_file",
                                "response": {"output": output},
                            }
                        }
                    ],
                    "status": "success",
                    "timestamp": bc.iso_ms(clock.tick(0.1, 0.3)),
                    "displayName": "ReadFile",
                    "description": "",
                    "renderOutputAsMarkdown": True,
                }
            ]
            log.message(narration, again=True)
            log.message(
                {
                    "id": ids.uuid4(),
                    "timestamp": bc.iso_ms(clock.tick(0.1, 0.3)),
                    "type": "user",
                    "content": [
                        {
                            "functionResponse": {
                                "id": call_id,
                                "name": "read_file",
                                "response": {"output": output},
                            }
                        }
                    ],
                }
            )
        answered = clock.tick(6, 14)
        log.message(
            {
                "id": ids.uuid4(),
                "timestamp": bc.iso_ms(answered),
                "type": "gemini",
                "content": turn.answer,
                "thoughts": [
                    {
                        "subject": "Answering",
                        "description": "Stating the cause and the change.",
                        "timestamp": bc.iso_ms(answered),
                    }
                ],
                "tokens": _tokens(ids),
                "model": MODEL,
            }
        )
    return log


def render(home: Path, manifest: bc.Manifest) -> None:
    project = home / "tmp" / SLUG
    entries: list[dict[str, Any]] = []
    for session in (CHAT, HEADLESS):
        ids = bc.Ids(session.key)
        log = _render(session, entries, ids)
        meta = json.loads(log.lines[0])
        start = datetime.fromisoformat(meta["startTime"].replace("Z", "+00:00"))
        minute = start.strftime("%Y-%m-%dT%H-%M")
        name = f"session-{minute}-{meta['sessionId'][:8]}.jsonl"
        path = project / "chats" / name
        bc.write_text(path, "".join(log.lines))
        manifest.files.append(str(path))
        for turn in session.turns:
            manifest.plants.update(turn.plants)
        manifest.tasks.append(
            bc.TaskInfo(
                source="gemini_cli",
                native_id=meta["sessionId"],
                spec_key=session.key,
                project=session.project.key,
                ownership="delegated" if session.delegated else "user_owned",
                delegation="exec" if session.delegated else "",
                complete_turns=len(session.turns),
                days=(session.date,),
                path=f"{HOME}/tmp/{SLUG}/chats/{name}",
            )
        )
    for path, text in (
        (project / "logs.json", json.dumps(entries, indent=2, ensure_ascii=False)),
        (project / ".project_root", HOMELAB.cwd),
        (home / "projects.json", json.dumps({"projects": {HOMELAB.cwd: SLUG}}, indent=2)),
    ):
        bc.write_text(path, text)
        manifest.files.append(str(path))
