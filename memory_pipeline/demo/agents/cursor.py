"""The demo corpus's Cursor sessions: two Cursor IDE composers and one `cursor-agent` run.

Rendered by `python -m memory_pipeline.demo.build_corpus` (DEMO_AGENTS) into `corpus/cursor/`,
one root holding both of Cursor's directories (the connector looks for both in every root):

    globalStorage/state.vscdb                  the IDE's global store (composers + bubbles)
    workspaceStorage/<id>/workspace.json       the folder of each workspace
    workspaceStorage/<id>/state.vscdb          its composer list
    projects/<slug>/agent-transcripts/<id>/<id>.jsonl   a cursor-agent transcript
    chats/<md5 of cwd>/<id>/store.db           its chat store (meta: createdAt, name)
    prompt_history.json                        the prompts typed in cursor-agent

in the shapes `memory_pipeline/capture/cursor/FORMAT.md` documents (Cursor 2.x stores; rollback
journal, so no `-wal` is committed). Deterministic: ids and times come from the spec below, rows
are inserted in key order and VACUUMed, and the header's "SQLite version that wrote it" field is
fixed (`_stamp`), so the bytes do not depend on the SQLite library that built them. Written for
this project (Apache-2.0); names and numbers are invented.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HOME = "cursor"  # corpus/cursor, the `demo` of Cursor's entry in models/sources.py
PROJECTS = {"/home/mara/src/meterflow": "meterflow", "/home/mara/homelab": "homelab"}
DDL = (
    "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
    "CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
)

# (key, workspace folder, name, mode, start UTC, [(prompt, [steps], answer)])
COMPOSERS: tuple[tuple[str, str, str | None, str, str, list[tuple[str, list[str], str]]], ...] = (
    (
        "meterflow-dst-gap",
        "/home/mara/src/meterflow",
        "DST gap in daily totals",
        "agent",
        "2026-10-26T08:40:00",
        [
            (
                "The daily totals for 25 October have 25 hours of readings. Find out why and fix"
                " the aggregation.",
                [
                    "read_file meterflow/aggregate.py",
                    "run_terminal_cmd pytest -q tests/test_dst.py",
                ],
                "The utility CSV is in local time, so 02:00-03:00 on 25 October appears twice."
                " `daily_totals()` now groups by the UTC day computed from `utc_offset`, and"
                " a test pins 25 hours of readings to 24 UTC hours. 14 tests pass.",
            ),
            (
                "Does the spring change (29 March) need the same treatment?",
                [],
                "Yes: that day has 23 local hours. Grouping by UTC day handles both; I added"
                " `test_spring_forward_day_has_23_local_hours`.",
            ),
        ],
    ),
    (
        "homelab-backup-timer",
        "/home/mara/homelab",
        "Restic backup timer",
        "agent",
        "2026-10-30T19:20:00",
        [
            (
                "Write a systemd timer that runs the restic backup of the Proxmox host nightly"
                " at 03:30 with a random delay of up to 20 minutes.",
                ["edit_file ansible/roles/backup/templates/restic-backup.timer.j2"],
                "Added `restic-backup.timer` (OnCalendar=*-*-* 03:30, RandomizedDelaySec=20min,"
                " Persistent=true) and its service to the `backup` role; `ansible-playbook"
                " site.yml --check` shows both units would be installed on pve1.",
            )
        ],
    ),
)

# (key, cwd, name, start UTC, [(prompt, answer)])
TRANSCRIPTS = (
    (
        "homelab-cli-vlan",
        "/home/mara/homelab",
        "VLAN for the IoT devices",
        "2026-11-02T17:45:00",
        [
            (
                "add a VLAN 30 for the IoT devices to the opnsense terraform config",
                "Added `opnsense_interface_vlan.iot` (tag 30, parent igb1) and a DHCP range"
                " 10.0.30.100-200 in `terraform/opnsense/vlans.tf`; `terraform plan` shows 2 to"
                " add.",
            ),
            (
                "block IoT from reaching the LAN but allow DNS to the resolver",
                "Two firewall rules on IOT: pass UDP/TCP 53 to 10.0.10.1, then block IOT net to"
                " LAN net; plan shows 2 more to add.",
            ),
        ],
    ),
)


def _id(key: str) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(key.encode()).digest()[:16], version=4))


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _rich(text: str) -> str:
    node = {
        "detail": 0,
        "format": 0,
        "mode": "normal",
        "style": "",
        "text": text,
        "type": "text",
        "version": 1,
    }
    para = {
        "children": [node],
        "direction": "ltr",
        "format": "",
        "indent": 0,
        "type": "paragraph",
        "version": 1,
    }
    root = {
        "children": [para],
        "direction": "ltr",
        "format": "",
        "indent": 0,
        "type": "root",
        "version": 1,
    }
    return json.dumps({"root": root}, separators=(",", ":"))


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _write_db(path: Path, rows: dict[str, dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        for ddl in DDL:
            conn.execute(ddl)
        for table, kv in rows.items():
            conn.executemany(
                f"INSERT INTO {table} (key, value) VALUES (?, ?)",
                [(k, _dumps(v)) for k, v in sorted(kv.items())],
            )
        conn.commit()
        conn.execute("VACUUM")
    finally:
        conn.close()
    _stamp(path)


def _composer(spec: tuple) -> tuple[str, dict[str, Any], dict[str, Any]]:
    key, folder, name, mode, start, turns = spec
    cid = _id(key)
    t = datetime.fromisoformat(start).replace(tzinfo=UTC)
    bubbles: dict[str, Any] = {}
    headers = []
    clock = t
    for n, (prompt, steps, answer) in enumerate(turns):
        uid = _id(f"{key}/u{n}")
        bubbles[f"bubbleId:{cid}:{uid}"] = {
            "_v": 3,
            "type": 1,
            "bubbleId": uid,
            "text": prompt,
            "richText": _rich(prompt),
            "createdAt": _iso(clock),
            "requestId": _id(f"{key}/r{n}"),
            "unifiedMode": 2,
            "isAgentic": mode == "agent",
            "workspaceUris": [f"file://{folder}"],
            "modelInfo": {"modelName": "claude-4.5-sonnet"},
        }
        headers.append({"bubbleId": uid, "type": 1})
        for s, step in enumerate(steps):
            clock += timedelta(seconds=7)
            tool, _, arg = step.partition(" ")
            sid = _id(f"{key}/s{n}.{s}")
            bubbles[f"bubbleId:{cid}:{sid}"] = {
                "_v": 3,
                "type": 2,
                "bubbleId": sid,
                "text": "",
                "createdAt": _iso(clock),
                "capabilityType": 15,
                "toolFormerData": {
                    "tool": 15 if tool == "run_terminal_cmd" else 40,
                    "name": tool,
                    "toolCallId": f"toolu_{sid[:12]}",
                    "status": "completed",
                    "rawArgs": json.dumps({"target": arg}),
                    "params": json.dumps({"target": arg}),
                    "result": json.dumps({"output": "ok"}),
                },
            }
            headers.append({"bubbleId": sid, "type": 2})
        clock += timedelta(seconds=23)
        aid = _id(f"{key}/a{n}")
        bubbles[f"bubbleId:{cid}:{aid}"] = {
            "_v": 3,
            "type": 2,
            "bubbleId": aid,
            "serverBubbleId": _id(f"{key}/srv{n}"),
            "text": answer,
            "createdAt": _iso(clock),
            "codeBlocks": [],
            "tokenCount": {"inputTokens": 2400, "outputTokens": 310},
        }
        headers.append({"bubbleId": aid, "type": 2, "serverBubbleId": _id(f"{key}/srv{n}")})
        clock += timedelta(minutes=4)
    composer = {
        "_v": 10,
        "composerId": cid,
        "text": "",
        "richText": "",
        "hasLoaded": True,
        "fullConversationHeadersOnly": headers,
        "conversationMap": {},
        "status": "completed",
        "unifiedMode": mode,
        "forceMode": "edit" if mode == "agent" else "chat",
        "isAgentic": mode == "agent",
        "createdAt": _ms(t),
        "lastUpdatedAt": _ms(clock),
        "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
        "createdOnBranch": "main",
        "generatingBubbleIds": [],
        "subComposerIds": [],
    }
    if name:
        composer["name"] = name
    entry = {
        "composerId": cid,
        "createdAt": _ms(t),
        "lastUpdatedAt": _ms(clock),
        "unifiedMode": mode,
        "forceMode": composer["forceMode"],
    }
    if name:
        entry["name"] = name
    return cid, {f"composerData:{cid}": composer, **bubbles}, entry


def _slug(path: str) -> str:
    return "-".join(p for p in "".join(c if c.isalnum() else "-" for c in path).split("-") if p)


def _stamp(path: Path) -> None:
    """Fix the header field naming the SQLite version that last wrote the file (offset 96) and
    its "version-valid-for" counter (92, set equal to the change counter at 24, which SQLite
    requires for it to trust the in-header page count): a library upgrade changes no byte."""
    data = bytearray(path.read_bytes())
    data[92:96] = data[24:28]
    data[96:100] = (3_040_001).to_bytes(4, "big")
    path.write_bytes(bytes(data))


def render(home: Path, manifest: Any) -> None:
    """Write Cursor's files under `home` and record each task in `manifest` (build_corpus)."""
    from memory_pipeline.demo.build_corpus import TaskInfo

    kv: dict[str, Any] = {}
    workspaces: dict[str, list[dict[str, Any]]] = {}
    for spec in COMPOSERS:
        cid, rows, entry = _composer(spec)
        kv.update(rows)
        workspaces.setdefault(spec[1], []).append(entry)
        day = datetime.fromisoformat(spec[4]).date().isoformat()
        manifest.tasks.append(
            TaskInfo(
                source="cursor",
                native_id=cid,
                spec_key=f"cursor-{spec[0]}",
                project=PROJECTS[spec[1]],
                ownership="user_owned",
                complete_turns=len(spec[5]),
                days=(day,),
                title=spec[2],
                path=str(home / "globalStorage" / "state.vscdb"),
            )
        )
    written = [home / "globalStorage" / "state.vscdb"]
    _write_db(written[0], {"cursorDiskKV": kv, "ItemTable": {}})
    for folder, entries in sorted(workspaces.items()):
        ws = home / "workspaceStorage" / hashlib.md5(folder.encode()).hexdigest()
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "workspace.json").write_text(json.dumps({"folder": f"file://{folder}"}) + "\n")
        listed = {
            "allComposers": entries,
            "selectedComposerIds": [entries[0]["composerId"]],
            "composerDataVersion": 1,
        }
        _write_db(
            ws / "state.vscdb", {"ItemTable": {"composer.composerData": listed}, "cursorDiskKV": {}}
        )
        written += [ws / "workspace.json", ws / "state.vscdb"]
    typed: list[str] = []
    for key, cwd, name, start, turns in TRANSCRIPTS:
        chat_id = _id(key)
        path = home / "projects" / _slug(cwd) / "agent-transcripts" / chat_id / f"{chat_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for prompt, answer in turns:
            typed.append(prompt)
            lines.append(
                {
                    "role": "user",
                    "message": {
                        "content": [
                            {"type": "text", "text": f"<user_query>\n{prompt}\n</user_query>"}
                        ]
                    },
                }
            )
            lines.append(
                {
                    "role": "assistant",
                    "message": {
                        "content": [
                            {"type": "text", "text": "Checking the terraform config."},
                            {
                                "type": "tool_use",
                                "name": "Shell",
                                "input": {"command": "terraform plan"},
                            },
                        ]
                    },
                }
            )
            lines.append(
                {"role": "assistant", "message": {"content": [{"type": "text", "text": answer}]}}
            )
            lines.append({"type": "turn_ended", "status": "success"})
        path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
        written.append(path)
        db = home / "chats" / hashlib.md5(cwd.encode()).hexdigest() / chat_id / "store.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        when = datetime.fromisoformat(start).replace(tzinfo=UTC)
        meta = {
            "agentId": chat_id,
            "name": name,
            "mode": "default",
            "createdAt": _ms(when),
            "lastUsedModel": "auto",
        }
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('0', ?)", [_dumps(meta).hex()])
        conn.commit()
        conn.execute("VACUUM")
        conn.close()
        _stamp(db)
        written.append(db)
        manifest.tasks.append(
            TaskInfo(
                source="cursor",
                native_id=chat_id,
                spec_key=f"cursor-{key}",
                project=PROJECTS[cwd],
                ownership="user_owned",
                complete_turns=len(turns),
                days=(when.date().isoformat(),),
                title=name,
                path=str(path),
            )
        )
    history = home / "prompt_history.json"
    history.write_text(json.dumps(list(reversed(typed))) + "\n")
    written.append(history)
    manifest.files += [str(p) for p in written]
