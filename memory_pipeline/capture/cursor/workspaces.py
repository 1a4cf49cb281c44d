"""Which workspace folder a Cursor composer belongs to (FORMAT.md §2).

Each folder Cursor opened has `workspaceStorage/<id>/`: `workspace.json` names it
(`{"folder": "file:///home/me/api"}`, or `{"workspace": "file:///.../x.code-workspace"}` for a
multi-root workspace; `vscode-remote://...` over SSH), and its `state.vscdb` `ItemTable` key
`composer.composerData` lists the workspace's composers: `allComposers[].composerId` (Cursor
<= 2.x), else `selectedComposerIds` / `lastFocusedComposerIds` (Cursor 3.0 removed
`allComposers`). Before composers moved to the global store (2024, Cursor 0.4x), the
`allComposers` entries held the whole conversation (`conversation`), the first layout
generation (`layout: workspace-inline`).

A folder is provenance only (`cwd` and `workspace_folder` of the task's native context, which
MEMORY_EXCLUDE `cwd:` rules match); it never becomes the semantic project.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline.capture.cursor import sqlite
from memory_pipeline.capture.cursor.sqlite import ITEM_TABLE, BadValue, StoreUnavailable

COMPOSER_LIST_KEY = "composer.composerData"
_WORKSPACE_JSON_MAX = 1024 * 1024


@dataclass
class Workspace:
    workspace_id: str  # the workspaceStorage directory name
    folder: str | None  # the folder (or .code-workspace) URI from workspace.json
    composers: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> allComposers entry


def folder_path(uri: str | None) -> str | None:
    """A `file://` URI as a local path; None for other schemes (a remote folder keeps its URI
    in `workspace_folder` only)."""
    if not uri or not uri.startswith("file://"):
        return None
    parsed = urllib.parse.urlparse(uri)
    path = urllib.parse.unquote(parsed.path)
    return path or None


def read_folder(directory: Path) -> str | None:
    path = directory / "workspace.json"
    try:
        if not path.is_file() or path.stat().st_size > _WORKSPACE_JSON_MAX:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    for key in ("folder", "workspace"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def composer_list(snap: sqlite.Snapshot) -> dict[str, Any] | None:
    """The workspace's `composer.composerData` object, or None (absent or damaged)."""
    try:
        return sqlite.decode(snap.get(ITEM_TABLE, COMPOSER_LIST_KEY))
    except BadValue:
        return None


def listed_ids(data: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    entries = data.get("allComposers")
    if isinstance(entries, list):
        ids += [
            e["composerId"]
            for e in entries
            if isinstance(e, dict) and isinstance(e.get("composerId"), str)
        ]
    for key in ("selectedComposerIds", "lastFocusedComposerIds"):
        value = data.get(key)
        if isinstance(value, list):
            ids += [v for v in value if isinstance(v, str)]
    return list(dict.fromkeys(ids))


def read_workspace(db: Path) -> Workspace | None:
    """The workspace of one `workspaceStorage/<id>/state.vscdb`; None when it cannot be read."""
    try:
        with sqlite.snapshot(db) as snap:
            data = composer_list(snap)
    except StoreUnavailable:
        return None
    ws = Workspace(db.parent.name, read_folder(db.parent))
    if data is None:
        return ws
    entries = data.get("allComposers")
    by_id = {}
    if isinstance(entries, list):
        by_id = {
            e["composerId"]: e
            for e in entries
            if isinstance(e, dict) and isinstance(e.get("composerId"), str)
        }
    for cid in listed_ids(data):
        ws.composers[cid] = by_id.get(cid, {})
    return ws


class WorkspaceIndex:
    """composerId -> Workspace over every `workspaceStorage/*/state.vscdb` of a user directory,
    read again only when one of them changed."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._by_composer: dict[str, Workspace] = {}

    def lookup(self, storage: Path) -> dict[str, Workspace]:
        dbs = sorted(storage.glob("*/state.vscdb")) if storage.is_dir() else []
        key = tuple((str(p), _state(p)) for p in dbs)
        if key != self._key:
            found: dict[str, Workspace] = {}
            for db in dbs:
                ws = read_workspace(db)
                if ws is None:
                    continue
                for cid in ws.composers:
                    found.setdefault(cid, ws)
            self._key, self._by_composer = key, found
        return self._by_composer


def _state(path: Path) -> tuple[int, int] | None:
    try:
        sts = [p.stat() for p in sqlite.state_paths(path) if p.exists()]
    except OSError:
        return None
    return (sum(s.st_size for s in sts), max((s.st_mtime_ns for s in sts), default=0))
