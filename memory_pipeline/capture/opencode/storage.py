"""Reading OpenCode's own stores: the JSON files of every generation and the SQLite database.

Where OpenCode writes (packages/opencode/src/global, storage/, session/ of sst/opencode, now
anomalyco/opencode; `Global.Path.data` = `$XDG_DATA_HOME/opencode`, default
`~/.local/share/opencode` on Linux and macOS alike, since it uses `xdg-basedir`):

* generation `json-legacy` (0.x, before the project-id migration):
  `project/<dir>/storage/session/info/<sessionID>.json`,
  `project/<dir>/storage/session/message/<sessionID>/<messageID>.json`,
  `project/<dir>/storage/session/part/<sessionID>/<messageID>/<partID>.json`;
* generation `json` (storage migrations 1-2): `storage/project/<projectID>.json` (`worktree`),
  `storage/session/<projectID>/<sessionID>.json`, `storage/message/<sessionID>/<messageID>.json`,
  `storage/part/<messageID>/<partID>.json`;
* generation `sqlite` (1.2+, `storage/db.ts`, `json-migration.ts`): `opencode.db` (or
  `opencode-<channel>.db`; `$OPENCODE_DB` overrides) with tables `project(id, worktree)`,
  `session(id, project_id, parent_id, directory, title, version, share_url, permission,
  time_created, time_updated, time_archived, revert)`, `message(id, session_id, time_created,
  data)` and `part(id, message_id, session_id, time_created, data)`; `data` is the JSON of the
  message / part without its ids. WAL journal; we open it read-only in one read transaction, so
  a database written while we read gives one consistent snapshot.

OpenCode copies a store forward on upgrade and keeps the old one, so a session can exist in more
than one generation; the newest generation holding it wins (`OpenCodeConnector.discover`).
Every reader is total: a file or row that cannot be read is a `ParseIssue`, never an exception.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.capture import sqlite_store
from memory_pipeline.capture.models import ParseIssue
from memory_pipeline.capture.sqlite_store import wal_state_paths
from memory_pipeline.tuning import OPENCODE_JSON_MAX_BYTES

JSON_LEGACY, JSON, SQLITE = "json-legacy", "json", "sqlite"


@dataclass
class Message:
    """One message with its parts (part order: id order, OpenCode's own)."""

    id: str
    info: dict[str, Any]
    parts: list[dict[str, Any]] = field(default_factory=list)
    damaged: bool = False  # a part could not be read: its text is never used as a whole


@dataclass
class RawSession:
    """A session as stored, before turns are built."""

    id: str
    info: dict[str, Any]
    generation: str
    project_id: str | None = None
    worktree: str | None = None
    messages: list[Message] = field(default_factory=list)


def read_json(path: Path, issues: list[ParseIssue]) -> dict[str, Any] | None:
    """One JSON object file, or None with the reason recorded (never raises)."""
    try:
        with open(path, "rb") as fh:  # regular files only: discovery checked the session file
            raw = fh.read(OPENCODE_JSON_MAX_BYTES + 1)
    except OSError as exc:
        issues.append(ParseIssue(path=str(path), reason="unreadable", detail=_one_line(exc)))
        return None
    if len(raw) > OPENCODE_JSON_MAX_BYTES:
        issues.append(
            ParseIssue(
                path=str(path),
                reason="record_too_large",
                detail=f"over {OPENCODE_JSON_MAX_BYTES:,} bytes",
            )
        )
        return None
    if not raw.strip():
        issues.append(ParseIssue(path=str(path), reason="empty_file"))
        return None
    return _loads(raw, str(path), issues)


def _loads(raw: bytes | str, where: str, issues: list[ParseIssue]) -> dict[str, Any] | None:
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        issues.append(ParseIssue(path=where, reason="invalid_utf8", detail=_one_line(exc)))
        return None
    try:
        obj = json.loads(text)
    except RecursionError:
        issues.append(ParseIssue(path=where, reason="too_deep", detail="JSON nested too deep"))
        return None
    except ValueError as exc:
        issues.append(ParseIssue(path=where, reason="invalid_json", detail=_one_line(exc)))
        return None
    if not isinstance(obj, dict):
        issues.append(
            ParseIssue(path=where, reason="bad_record", detail=f"a JSON {type(obj).__name__}")
        )
        return None
    return obj


def _json_files(directory: Path) -> list[Path]:
    """`*.json` regular files of one directory, sorted by name (= OpenCode's id order)."""
    try:
        with os.scandir(directory) as it:
            found = [
                Path(e.path)
                for e in it
                if e.name.endswith(".json") and e.is_file(follow_symlinks=False)
            ]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.name)


@dataclass(frozen=True)
class JsonLayout:
    """Where one session's messages and parts live, per JSON generation."""

    generation: str
    session_file: Path

    @property
    def session_id(self) -> str:
        return self.session_file.stem

    def storage_root(self) -> Path:
        # json: <storage>/session/<projectID>/<id>.json; legacy: <storage>/session/info/<id>.json
        return self.session_file.parent.parent.parent

    def message_dir(self) -> Path:
        if self.generation == JSON_LEGACY:
            return self.storage_root() / "session" / "message" / self.session_id
        return self.storage_root() / "message" / self.session_id

    def part_dir(self, message_id: str) -> Path:
        if self.generation == JSON_LEGACY:
            return self.storage_root() / "session" / "part" / self.session_id / message_id
        return self.storage_root() / "part" / message_id

    def project_file(self) -> Path | None:
        if self.generation == JSON_LEGACY:
            return None
        return self.storage_root() / "project" / f"{self.session_file.parent.name}.json"


def layout_of(path: Path) -> JsonLayout:
    generation = JSON_LEGACY if path.parent.name == "info" else JSON
    return JsonLayout(generation, path)


def json_state_paths(path: Path) -> list[Path]:
    """What makes up a JSON session's version: its session file, message directory, message
    files and part directories, and the part files of its last message (the one being
    streamed). A new message or part adds a directory entry, a finished answer rewrites its
    message (`time.completed`), a rename rewrites the session file. Stats only, no reads."""
    layout = layout_of(path)
    mdir = layout.message_dir()
    messages = _json_files(mdir)
    paths = [path, mdir]
    for message in messages:
        paths += [message, layout.part_dir(message.stem)]
    if messages:
        paths += _json_files(layout.part_dir(messages[-1].stem))
    return paths


def state_of(paths: list[Path]) -> tuple[int, int]:
    """The sum of the sizes and the newest mtime of the paths that exist."""
    size, newest = 0, 0
    for p in dict.fromkeys(paths):
        try:
            st = p.stat()
        except OSError:
            continue
        size += st.st_size
        newest = max(newest, st.st_mtime_ns)
    return size, newest


def read_json_session(path: Path, issues: list[ParseIssue]) -> RawSession | None:
    """A JSON-generation session with its messages and parts; bad files skipped and recorded."""
    layout = layout_of(path)
    info = read_json(path, issues)
    if info is None:
        return None
    session = RawSession(id=layout.session_id, info=info, generation=layout.generation)
    if layout.generation == JSON:
        session.project_id = layout.session_file.parent.name
        project_file = layout.project_file()
        if project_file is not None and project_file.is_file():
            project = read_json(project_file, [])  # the project's problems are not this task's
            worktree = project.get("worktree") if project else None
            session.worktree = worktree if isinstance(worktree, str) else None
    for message_file in _json_files(layout.message_dir()):
        info_m = read_json(message_file, issues)
        if info_m is None:
            continue
        message = Message(id=message_file.stem, info=info_m)
        inline = info_m.get("parts")  # message v1 kept its parts inline
        if isinstance(inline, list):
            message.parts = [p for p in inline if isinstance(p, dict)]
        for part_file in _json_files(layout.part_dir(message.id)):
            part = read_json(part_file, issues)
            if part is not None:
                message.parts.append(part)
            else:
                message.damaged = True
        session.messages.append(message)
    return session


# --- SQLite -----------------------------------------------------------------------------------


sqlite_state_paths = wal_state_paths  # the database changes in place, mostly in its `-wal`


def connect_ro(path: Path) -> sqlite3.Connection:
    """Read-only, never creating the file; the agent keeps writing meanwhile (WAL)."""
    return sqlite_store.connect_ro(Path(path).resolve(), 2.0)


def sqlite_session_ids(path: Path) -> set[str]:
    """Ids of the sessions a database holds (empty when it cannot be read)."""
    try:
        conn = connect_ro(path)
    except sqlite3.Error:
        return set()
    try:
        return {r[0] for r in conn.execute("SELECT id FROM session") if isinstance(r[0], str)}
    except sqlite3.Error:
        return set()
    finally:
        conn.close()


def sqlite_starts(path: Path, usable: Callable[[Any], bool]) -> list[RawSession]:
    """What `turns.started_at` needs of every session `read_sqlite` keeps, in one read
    transaction: its `time_created`, and, only when that is no `usable` time (a row can hold
    text there), its messages without parts, whose first readable time is then the start.
    Rows are skipped as `read_sqlite` skips them, so task days and parse agree."""
    conn = connect_ro(path)
    try:
        conn.execute("BEGIN")
        sessions: list[RawSession] = []
        for sid, created in conn.execute("SELECT id, time_created FROM session ORDER BY id"):
            if not isinstance(sid, str) or not sid:
                continue  # read_sqlite: a bad_record, no task
            session = RawSession(id=sid, info={"time": {"created": created}}, generation=SQLITE)
            if not usable(created):
                for mid, raw in conn.execute(
                    "SELECT id, data FROM message WHERE session_id = ?", [sid]
                ):
                    data = _loads(raw, "", []) if isinstance(raw, str) else None
                    if isinstance(mid, str) and data is not None:
                        session.messages.append(Message(id=mid, info=data))
            sessions.append(session)
        conn.execute("COMMIT")
        return sessions
    finally:
        conn.close()


def read_sqlite(path: Path, issues: list[ParseIssue]) -> list[RawSession]:
    """Every session of the database in one read transaction (one consistent snapshot)."""
    where = str(path)
    try:
        conn = connect_ro(path)
    except sqlite3.Error as exc:
        issues.append(ParseIssue(path=where, reason="unreadable", detail=_one_line(exc)))
        return []
    sessions: dict[str, RawSession] = {}
    try:
        conn.execute("BEGIN")
        columns = {r[1] for r in conn.execute("PRAGMA table_info(session)")}
        if not {"id", "time_created"} <= columns:
            issues.append(
                ParseIssue(
                    path=where, reason="not_a_transcript", detail="no OpenCode session table"
                )
            )
            return []
        wanted = [
            c
            for c in (
                "id",
                "project_id",
                "parent_id",
                "slug",
                "directory",
                "title",
                "version",
                "share_url",
                "permission",
                "revert",
                "time_created",
                "time_updated",
                "time_archived",
            )
            if c in columns
        ]
        worktrees: dict[str, str] = {}
        try:
            for pid, worktree in conn.execute("SELECT id, worktree FROM project"):
                if isinstance(pid, str) and isinstance(worktree, str):
                    worktrees[pid] = worktree
        except sqlite3.Error:
            pass
        for row in conn.execute(f"SELECT {', '.join(wanted)} FROM session ORDER BY id"):
            record = dict(zip(wanted, row, strict=True))
            sid = record.get("id")
            if not isinstance(sid, str) or not sid:
                issues.append(ParseIssue(path=where, reason="bad_record", detail="session id"))
                continue
            sessions[sid] = _session_from_row(record, worktrees, where, issues)
        for mid, sid, raw in conn.execute(
            "SELECT id, session_id, data FROM message ORDER BY session_id, time_created, id"
        ):
            session = sessions.get(sid)
            if session is None or not isinstance(mid, str):
                continue
            data = _loads(raw, f"{where}#message/{mid}", issues) if isinstance(raw, str) else None
            if data is None:
                if not isinstance(raw, str):
                    issues.append(
                        ParseIssue(
                            path=f"{where}#message/{mid}", reason="bad_record", detail="data"
                        )
                    )
                continue
            session.messages.append(Message(id=mid, info=data))
        by_id = {m.id: m for s in sessions.values() for m in s.messages}
        for pid, mid, raw in conn.execute("SELECT id, message_id, data FROM part ORDER BY id"):
            message = by_id.get(mid)
            if message is None:
                continue
            part = _loads(raw, f"{where}#part/{pid}", issues) if isinstance(raw, str) else None
            if part is not None:
                message.parts.append(part)
            else:
                message.damaged = True
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        issues.append(ParseIssue(path=where, reason="unreadable", detail=_one_line(exc)))
        return []
    finally:
        conn.close()
    return list(sessions.values())


def _session_from_row(
    record: dict[str, Any], worktrees: dict[str, str], where: str, issues: list[ParseIssue]
) -> RawSession:
    """A session row in the JSON generation's shape (`Session.Info`), so one builder serves."""
    info: dict[str, Any] = {
        "id": record["id"],
        "title": record.get("title"),
        "directory": record.get("directory"),
        "version": record.get("version"),
        "slug": record.get("slug"),
        "time": {
            "created": record.get("time_created"),
            "updated": record.get("time_updated"),
            "archived": record.get("time_archived"),
        },
    }
    if record.get("parent_id"):
        info["parentID"] = record["parent_id"]
    if record.get("share_url"):
        info["share"] = {"url": record["share_url"]}
    for column, key in (("permission", "permission"), ("revert", "revert")):
        raw = record.get(column)
        if isinstance(raw, str) and raw:
            try:
                info[key] = json.loads(raw)
            except (ValueError, RecursionError):
                issues.append(
                    ParseIssue(
                        path=f"{where}#session/{record['id']}", reason="bad_record", detail=column
                    )
                )
    project_id = record.get("project_id")
    return RawSession(
        id=record["id"],
        info=info,
        generation=SQLITE,
        project_id=project_id if isinstance(project_id, str) else None,
        worktree=worktrees.get(project_id) if isinstance(project_id, str) else None,
    )


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
