"""Render the Kiro demo sessions (`conversations/kiro.py`) the way Kiro writes them.

Kiro CLI 2.x (agent engine v2): `kiro_home/sessions/cli/<id>.jsonl` (compact records
`{"version":"v1","kind":"Prompt"|"AssistantMessage"|"ToolResults","data":{...}}`) and the
`<id>.json` sidecar (`session_id`, `cwd`, `title`, `created_at`, `updated_at`,
`parent_session_id`, `session_state.conversation_metadata.user_turn_metadatas`), the typed
prompts in `kiro_home/.cli_bash_history` (rustyline `#V2`). Kiro IDE (new layout):
`kiro_ide/kiro.kiroagent/workspace-sessions/<base64url(cwd)>/<id>.json` and `sessions.json`.
Field provenance: memory_pipeline_tests/capture/data/kiro_cli/README.md and kiro_ide/README.md.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from memory_pipeline.demo.conversations.kiro import KIRO_SESSIONS, PARENTS
from memory_pipeline.demo.spec import Read, Say, Session, Shell


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _iso(when) -> str:  # UTC datetime -> RFC 3339 with ms
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def render(kind: str, home: Path, manifest: Any) -> None:
    """Write the Kiro demo sessions of `kind` ("kiro_cli" or "kiro_ide") under `home` (the
    source's demo root): Kiro CLI's `~/.kiro`, or Kiro IDE's `kiro.kiroagent` directory."""
    from memory_pipeline.demo import build_corpus as bc  # the builder's helpers (no cycle)

    written: list[Path] = []
    typed: list[tuple[Any, str]] = []
    ids_of = {s.key: bc.Ids(s.key).uuid4() for s in KIRO_SESSIONS}
    index: dict[Path, list[dict[str, Any]]] = {}
    for session in (s for s in KIRO_SESSIONS if s.tool == kind):
        ids = bc.Ids(session.key + "/records")
        times = [bc.to_utc(t) for t in bc.turn_times(session.date, session.turns, ids)]
        sid = ids_of[session.key]
        if kind == "kiro_cli":
            written += _cli(session, sid, times, ids, home, ids_of, bc)
            if session.mode != "subagent":
                typed += [(t, turn.prompt) for t, turn in zip(times, session.turns, strict=True)]
        else:
            path, entry = _ide(session, sid, times, ids, home, bc)
            written.append(path)
            index.setdefault(path.parent, []).append(entry)
        for ordinal, turn in enumerate(session.turns):
            manifest.plants.update(turn.plants)
            manifest.add_gold(turn.gold, kind, sid, ordinal)
        manifest.tasks.append(
            bc.TaskInfo(
                source=kind,
                native_id=sid,
                spec_key=session.key,
                project=session.project.key,
                ownership="delegated" if session.mode == "subagent" else "user_owned",
                delegation="subagent" if session.mode == "subagent" else "",
                complete_turns=len(session.turns),
                days=tuple(sorted({bc.to_local(t).date().isoformat() for t in times})),
                path=str(written[-1].relative_to(home)),
            )
        )
    for directory, entries in index.items():
        path = directory / "sessions.json"
        bc.write_text(path, json.dumps(entries, indent=2) + "\n")
        written.append(path)
    if kind == "kiro_cli":
        history = home / ".cli_bash_history"
        escaped = (p.replace("\\", "\\\\").replace("\n", "\\n") for _t, p in sorted(typed))
        bc.write_text(history, "\n".join(["#V2", *escaped]) + "\n")
        written.append(history)
    manifest.files += [str(p) for p in written]


def _cli(session: Session, sid: str, times, ids, home: Path, ids_of, bc) -> list[Path]:
    lines: list[str] = []
    turns_meta: list[dict[str, Any]] = []
    ended = times[0]
    for turn, at in zip(session.turns, times, strict=True):
        prompt_id = ids.uuid4()
        turn_ids = [prompt_id]
        lines.append(
            _compact(
                {
                    "version": "v1",
                    "kind": "Prompt",
                    "data": {
                        "message_id": prompt_id,
                        "content": [{"kind": "text", "data": turn.prompt}],
                        "meta": {"timestamp": round(at.timestamp(), 3)},
                    },
                }
            )
        )
        for step in turn.steps:
            mid = ids.uuid4()
            if isinstance(step, Say):
                content = [{"kind": "text", "data": step.text}]
                lines.append(
                    _compact(
                        {
                            "version": "v1",
                            "kind": "AssistantMessage",
                            "data": {"message_id": mid, "content": content},
                        }
                    )
                )
                turn_ids.append(mid)
                continue
            if isinstance(step, Shell):
                name, inp, out = "shell", {"command": step.cmd}, step.output or ""
            elif isinstance(step, Read):
                name, inp, out = "read", {"path": step.path}, step.content
            else:
                continue
            tool_id = "tooluse_" + ids.b62(22)
            use = {"kind": "toolUse", "data": {"toolUseId": tool_id, "name": name, "input": inp}}
            lines.append(
                _compact(
                    {
                        "version": "v1",
                        "kind": "AssistantMessage",
                        "data": {"message_id": mid, "content": [{"kind": "text", "data": ""}, use]},
                    }
                )
            )
            rid = ids.uuid4()
            result = {
                "kind": "toolResult",
                "data": {
                    "toolUseId": tool_id,
                    "content": [{"kind": "text", "data": out}],
                    "status": "success",
                },
            }
            lines.append(
                _compact(
                    {
                        "version": "v1",
                        "kind": "ToolResults",
                        "data": {"message_id": rid, "content": [result]},
                    }
                )
            )
            turn_ids += [mid, rid]
        answer_id = ids.uuid4()
        lines.append(
            _compact(
                {
                    "version": "v1",
                    "kind": "AssistantMessage",
                    "data": {
                        "message_id": answer_id,
                        "content": [{"kind": "text", "data": turn.answer}],
                    },
                }
            )
        )
        turn_ids.append(answer_id)
        seconds = round(ids.between(4, 40), 3)
        ended = at + bc.timedelta(seconds=seconds)
        turns_meta.append(
            {
                "input_token_count": 0,
                "output_token_count": 0,
                "turn_duration": {"secs": int(seconds), "nanos": int((seconds % 1) * 1e9)},
                "end_timestamp": _iso(ended),
                "end_reason": "UserTurnEnd",
                "total_request_count": len(turn.steps) + 1,
                "message_ids": turn_ids,
                "metering_usage": [{"value": round(ids.between(0.1, 1.5), 2), "unit": "credit"}],
                "result": {
                    "Ok": {"role": "assistant", "content": [{"kind": "text", "data": turn.answer}]}
                },
            }
        )
    cli = home / "sessions" / "cli"
    parent = PARENTS.get(session.key)
    sidecar = {
        "session_id": sid,
        "cwd": session.project.cwd,
        "title": session.turns[0].prompt[:60],
        "created_at": _iso(times[0]),
        "updated_at": _iso(ended),
        "parent_session_id": ids_of[parent] if parent else None,
        "session_created_reason": "subagent",
        "session_state": {
            "version": "v1",
            "agent_name": "kiro_default",
            "rts_model_state": {
                "conversation_id": sid,
                "model_info": {
                    "model_name": "Claude Sonnet 4.5",
                    "model_id": "claude-sonnet-4.5",
                    "context_window_tokens": 200000,
                },
                "context_usage_percentage": round(ids.between(1, 9), 2),
            },
            "permissions": {"filesystem": {"allowed_read_paths": [], "allowed_write_paths": []}},
            "conversation_metadata": {"user_turn_metadatas": turns_meta},
        },
    }
    jsonl, meta = cli / f"{sid}.jsonl", cli / f"{sid}.json"
    bc.write_text(jsonl, "\n".join(lines) + "\n")
    bc.write_text(meta, json.dumps(sidecar, indent=2) + "\n")
    return [meta, jsonl]


def _ide(session: Session, sid: str, times, ids, root: Path, bc) -> tuple[Path, dict[str, Any]]:
    encoded = base64.urlsafe_b64encode(session.project.cwd.encode()).decode().rstrip("=")
    history: list[dict[str, Any]] = []
    for turn in session.turns:
        history.append(
            {
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": turn.prompt}],
                    "id": ids.uuid4(),
                }
            }
        )
        history.append({"message": {"role": "assistant", "content": "On it.", "id": ids.uuid4()}})
        history.append(
            {
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": turn.answer}],
                    "id": ids.uuid4(),
                }
            }
        )
    doc = {
        "sessionId": sid,
        "title": session.summary.split(": ", 1)[-1].rstrip("."),
        "sessionType": "vibe",
        "selectedModel": "claude-sonnet-4.5",
        "history": history,
    }
    path = root / "workspace-sessions" / encoded / f"{sid}.json"
    bc.write_text(path, json.dumps(doc, indent=2) + "\n")
    entry = {
        "sessionId": sid,
        "title": doc["title"],
        "dateCreated": str(bc.unix_ms(times[0])),
        "workspaceDirectory": session.project.cwd,
    }
    return path, entry
