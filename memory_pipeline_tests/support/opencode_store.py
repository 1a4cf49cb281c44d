"""Write OpenCode stores the way OpenCode writes them, for tests, fuzzing and the demo.

Shapes from anomalyco/opencode (formerly sst/opencode, MIT license), packages/opencode/src:
`session/index.ts` (`Session.Info`), `session/message-v2.ts` (`MessageV2.User`/`Assistant`, parts),
`storage/storage.ts` (JSON layout; `JSON.stringify(content, null, 2)` per file),
`storage/json-migration.ts` and `session/session.sql.ts` (the SQLite tables, the `data` column
being the JSON without the ids). See `memory_pipeline_tests/capture/data/opencode/README.md`.

A session is given as plain data (`Sess`, `Msg`); `write_json_store` lays it out as the `json`
generation (or `json-legacy`), `write_sqlite_store` as the database.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The DDL of the tables we read, as OpenCode's drizzle migrations create them (1.2.x).
SQLITE_SCHEMA = """
CREATE TABLE project (
  id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text, icon_url text,
  icon_color text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_initialized integer, sandboxes text NOT NULL DEFAULT '[]', commands text
);
CREATE TABLE session (
  id text PRIMARY KEY, project_id text NOT NULL REFERENCES project(id) ON DELETE CASCADE,
  workspace_id text, parent_id text, slug text NOT NULL, directory text NOT NULL, path text,
  title text NOT NULL, version text NOT NULL, share_url text, summary_additions integer,
  summary_deletions integer, summary_files integer, summary_diffs text, revert text,
  permission text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_compacting integer, time_archived integer
);
CREATE INDEX session_parent_idx ON session (parent_id);
CREATE TABLE message (
  id text PRIMARY KEY, session_id text NOT NULL REFERENCES session(id) ON DELETE CASCADE,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL
);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (
  id text PRIMARY KEY, message_id text NOT NULL REFERENCES message(id) ON DELETE CASCADE,
  session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL,
  data text NOT NULL
);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
"""

VERSION = "1.2.6"


@dataclass
class Msg:
    """A message: role, parts (dicts without ids), times; assistant extras."""

    id: str
    role: str
    created: int
    parts: list[dict[str, Any]]
    completed: int | None = None
    parent: str | None = None  # assistant: the user message answered
    finish: str | None = "stop"
    error: dict[str, Any] | None = None
    summary: bool | None = None


@dataclass
class Sess:
    id: str
    title: str
    created: int
    updated: int
    directory: str = "/home/mara/src/logslice"
    project_id: str = "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750"
    parent: str | None = None
    permission: list[dict[str, Any]] | None = None
    share_url: str | None = None
    messages: list[Msg] = field(default_factory=list)


def message_info(session: Sess, m: Msg) -> dict[str, Any]:
    """`MessageV2.Info` as stored (ids included; the SQLite `data` drops them)."""
    if m.role == "user":
        return {
            "id": m.id,
            "sessionID": session.id,
            "role": "user",
            "time": {"created": m.created},
            "agent": "build",
            "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"},
        }
    info: dict[str, Any] = {
        "id": m.id,
        "sessionID": session.id,
        "role": "assistant",
        "time": {"created": m.created, **({"completed": m.completed} if m.completed else {})},
        "parentID": m.parent,
        "modelID": "claude-sonnet-4-5",
        "providerID": "anthropic",
        "mode": "build",
        "agent": "build",
        "path": {"cwd": session.directory, "root": session.directory},
        "cost": 0.0123,
        "tokens": {"input": 1200, "output": 340, "reasoning": 0, "cache": {"read": 0, "write": 0}},
    }
    if m.finish and m.completed:
        info["finish"] = m.finish
    if m.error:
        info["error"] = m.error
    if m.summary is not None:
        info["summary"] = m.summary
    return info


def part_id(m: Msg, index: int) -> str:
    return f"prt_{m.id[4:]}{index:04d}"


def parts_of(session: Sess, m: Msg) -> list[dict[str, Any]]:
    return [
        {"id": part_id(m, i), "sessionID": session.id, "messageID": m.id, **p}
        for i, p in enumerate(m.parts)
    ]


def session_info(s: Sess) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": s.id,
        "slug": s.id[4:14],
        "version": VERSION,
        "projectID": s.project_id,
        "directory": s.directory,
        "title": s.title,
        "time": {"created": s.created, "updated": s.updated},
    }
    if s.parent:
        info["parentID"] = s.parent
    if s.permission is not None:
        info["permission"] = s.permission
    if s.share_url:
        info["share"] = {"url": s.share_url}
    return info


def _write(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False))


def write_json_store(data_home: Path, sessions: list[Sess], legacy: bool = False) -> list[Path]:
    """Lay the sessions out under `<data_home>/storage` (or the legacy per-project layout);
    returns the session files."""
    files = []
    for s in sessions:
        if legacy:
            root = data_home / "project" / s.directory.strip("/").replace("/", "-") / "storage"
            session_file = root / "session" / "info" / f"{s.id}.json"
            mdir = root / "session" / "message" / s.id
            pdir = root / "session" / "part" / s.id
        else:
            root = data_home / "storage"
            _write(
                root / "project" / f"{s.project_id}.json",
                {
                    "id": s.project_id,
                    "worktree": s.directory,
                    "vcs": "git",
                    "time": {"created": s.created, "initialized": s.created},
                },
            )
            session_file = root / "session" / s.project_id / f"{s.id}.json"
            mdir = root / "message" / s.id
            pdir = root / "part"
        _write(session_file, session_info(s))
        for m in s.messages:
            _write(mdir / f"{m.id}.json", message_info(s, m))
            for part in parts_of(s, m):
                _write(pdir / m.id / f"{part['id']}.json", part)
        files.append(session_file)
    return files


def write_sqlite_store(db: Path, sessions: list[Sess]) -> Path:
    """The sessions as rows of `opencode.db` (WAL journal, as OpenCode opens it)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        if not conn.execute("SELECT name FROM sqlite_master WHERE name='session'").fetchone():
            conn.executescript(SQLITE_SCHEMA)
        for s in sessions:
            add_sqlite_session(conn, s)
        conn.commit()
    finally:
        conn.close()
    return db


def add_sqlite_session(conn: sqlite3.Connection, s: Sess) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, time_updated)"
        " VALUES (?, ?, 'git', ?, ?)",
        [s.project_id, s.directory, s.created, s.created],
    )
    conn.execute(
        "INSERT OR REPLACE INTO session (id, project_id, parent_id, slug, directory, title,"
        " version, share_url, permission, time_created, time_updated)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            s.id,
            s.project_id,
            s.parent,
            s.id[4:14],
            s.directory,
            s.title,
            VERSION,
            s.share_url,
            json.dumps(s.permission) if s.permission is not None else None,
            s.created,
            s.updated,
        ],
    )
    for m in s.messages:
        info = message_info(s, m)
        data = {k: v for k, v in info.items() if k not in ("id", "sessionID")}
        conn.execute(
            "INSERT OR REPLACE INTO message (id, session_id, time_created, time_updated, data)"
            " VALUES (?, ?, ?, ?, ?)",
            [m.id, s.id, m.created, m.completed or m.created, json.dumps(data)],
        )
        for part in parts_of(s, m):
            pdata = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
            conn.execute(
                "INSERT OR REPLACE INTO part (id, message_id, session_id, time_created,"
                " time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
                [part["id"], m.id, s.id, m.created, m.created, json.dumps(pdata)],
            )


# --- a typical session ------------------------------------------------------------------------

T0 = 1_790_000_000_000  # 2026-09-21T...Z, epoch ms


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **extra}


def turn(
    n: int, prompt: str, answer: str, base: int = T0, done: bool = True, tool: bool = True
) -> list[Msg]:
    """A user prompt and the assistant loop answering it: a tool step, then the answer step."""
    uid = f"msg_{base // 1000:010x}{n:02d}0user"
    user = Msg(uid, "user", base + n * 60_000, [text(prompt)])
    msgs = [user]
    if tool:
        msgs.append(
            Msg(
                f"msg_{base // 1000:010x}{n:02d}1asst",
                "assistant",
                base + n * 60_000 + 1000,
                [
                    {"type": "step-start", "snapshot": "8a1f"},
                    {"type": "reasoning", "text": "Let me look at the file first.", "time": {}},
                    {
                        "type": "tool",
                        "callID": "toolu_01",
                        "tool": "read",
                        "state": {
                            "status": "completed",
                            "input": {"filePath": "src/main.rs"},
                            "output": "fn main() {}",
                            "title": "src/main.rs",
                            "metadata": {},
                            "time": {"start": base, "end": base + 5},
                        },
                    },
                    {"type": "step-finish", "reason": "tool-calls", "cost": 0.01, "tokens": {}},
                ],
                completed=base + n * 60_000 + 2000,
                parent=uid,
                finish="tool-calls",
            )
        )
    msgs.append(
        Msg(
            f"msg_{base // 1000:010x}{n:02d}2asst",
            "assistant",
            base + n * 60_000 + 3000,
            [
                {"type": "step-start"},
                text(answer, time={"start": base, "end": base + 9}),
                {"type": "step-finish", "reason": "stop", "cost": 0.01, "tokens": {}},
            ]
            if done
            else [{"type": "step-start"}, text(answer[: len(answer) // 2])],
            completed=base + n * 60_000 + 4000 if done else None,
            parent=uid,
        )
    )
    return msgs
