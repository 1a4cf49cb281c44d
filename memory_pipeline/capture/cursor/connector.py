"""CursorConnector: Cursor's stores and agent transcripts -> ParsedTask (no database).

Roots (memory_pipeline/models/sources.py): the IDE's user directory (Linux `~/.config/Cursor/User`,
macOS `~/Library/Application Support/Cursor/User`; `MEMORY_CURSOR_USER_DIR` moves it: Cursor
itself has no variable, only `--user-data-dir`) and the CLI's data directory (`~/.cursor`,
`CURSOR_DATA_DIR`). Every root is searched for both; a root that holds neither is ignored.

Files (one unit of change detection each):

* `globalStorage/state.vscdb`: every composer (`cursorDiskKV` `composerData:<id>`), one task
  each. Layout generations: `split` (`fullConversationHeadersOnly` + one
  `bubbleId:<composerId>:<bubbleId>` row per bubble, 2025-), `conversation-map` (headers + an
  inline `conversationMap`), `inline` (a `conversation` array inside composerData, 2024);
* `workspaceStorage/<id>/state.vscdb`: composers of the oldest layout (`workspace-inline`: the
  whole conversation in `ItemTable` `composer.composerData` `allComposers[]`), when the global
  store does not hold them;
* `projects/<slug>/agent-transcripts/**.jsonl`: agent transcripts (transcripts.py); one that is
  the IDE's copy of a composer the global store holds is left to the store.

A version of a store is its database and `-wal` together (`state_paths`). `parse` and
`task_days` never raise for bad input; the start day of a composer is its `createdAt` (else
`lastUpdatedAt`), by one rule (`composer_start`) for both.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.capture.cursor import sqlite
from memory_pipeline.capture.cursor.bubbles import (
    ASSISTANT,
    USER,
    Bubble,
    Turns,
    build_turns,
    parse_time,
)
from memory_pipeline.capture.cursor.ownership import composer_ownership, transcript_ownership
from memory_pipeline.capture.cursor.sqlite import DISK_KV, BadValue, StoreUnavailable
from memory_pipeline.capture.cursor.transcripts import (
    TRANSCRIPTS_DIR,
    WORKSPACE_HASH,
    chat_meta,
    cwd_of,
    is_subagent,
    project_slug,
    prompt_history,
    read_transcript,
    transcript_id,
)
from memory_pipeline.capture.cursor.workspaces import (
    Workspace,
    WorkspaceIndex,
    composer_list,
    folder_path,
    read_folder,
)
from memory_pipeline.capture.jsonl import JsonlRead
from memory_pipeline.capture.models import ParsedTask, ParseIssue, ParseResult, TaskTitle
from memory_pipeline.capture.protocol import discover_candidates
from memory_pipeline.tuning import CURSOR_TRANSCRIPT_MAX_BYTES

SOURCE = "cursor"
COMPOSER_PREFIX = "composerData:"
BUBBLE_PREFIX = "bubbleId:"
GLOBAL_DB = ("globalStorage", "state.vscdb")
WORKSPACES = "workspaceStorage"
DEFAULT_SETTLE_AFTER = timedelta(minutes=30)


def composer_start(composer: dict[str, Any]) -> datetime | None:
    """A composer's start: `createdAt` (epoch ms), else `lastUpdatedAt`."""
    return parse_time(composer.get("createdAt")) or parse_time(composer.get("lastUpdatedAt"))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]


def _candidates(root: Path) -> list[Path]:
    """The global store, every workspace store and every agent transcript under one root."""
    candidates: list[Path] = []
    if not root.is_dir():
        return candidates
    db = root.joinpath(*GLOBAL_DB)
    if db.exists() or db.is_symlink():
        candidates.append(db)
    storage = root / WORKSPACES
    if storage.is_dir():
        try:
            candidates += [p for p in storage.glob("*/state.vscdb")]
        except OSError:
            pass
    projects = root / "projects"
    if projects.is_dir():
        try:
            for project in projects.iterdir():
                tdir = project / TRANSCRIPTS_DIR
                if not tdir.is_dir():
                    continue
                for dirpath, _dirs, files in os.walk(tdir):
                    candidates += [Path(dirpath) / f for f in files if f.endswith(".jsonl")]
        except OSError:
            pass
    return candidates


class CursorConnector:
    source = SOURCE

    def __init__(
        self,
        roots: list[Path],
        *,
        settle_after: timedelta | None = DEFAULT_SETTLE_AFTER,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.skipped_files: list[ParseIssue] = []
        self.settle_after = settle_after
        self._now = now or (lambda: datetime.now(UTC))
        self._workspaces = WorkspaceIndex()
        self._ide_ids: dict[str, tuple[Any, set[str]]] = {}

    # --- Connector protocol ---------------------------------------------------------------------

    def discover(self) -> list[Path]:
        self.skipped_files = []
        return discover_candidates(self.roots, _candidates, self.skipped_files)

    def state_paths(self, path: Path) -> list[Path]:
        """A store's version is its database and `-wal` (Cursor writes in WAL mode)."""
        path = Path(path)
        return sqlite.state_paths(path) if path.suffix == ".vscdb" else [path]

    def task_days(self, path: Path) -> set[date]:
        try:
            return self._task_days(Path(path))
        except Exception:  # never raises: parse() records what this could not read
            return set()

    def parse(self, path: Path) -> ParseResult:
        path = Path(path)
        try:
            if path.suffix == ".vscdb":
                if self._is_global(path):
                    return self._parse_global(path)
                return self._parse_workspace(path)
            return self._parse_transcript(path)
        except StoreUnavailable as exc:
            return ParseResult(
                issues=[ParseIssue(path=str(path), reason=exc.reason, detail=exc.detail)]
            )
        except Exception as exc:  # last resort: parse() must never raise for bad input
            return ParseResult(
                issues=[ParseIssue(path=str(path), reason="parser_error", detail=_describe(exc))]
            )

    # --- days -----------------------------------------------------------------------------------

    def _task_days(self, path: Path) -> set[date]:
        if path.suffix != ".vscdb":
            start = self._transcript_start(path)
            if start is None or self._ide_copy(path):
                return set()
            return {start.date()}
        days: set[date] = set()
        with sqlite.snapshot(path) as snap:
            if self._is_global(path):
                for _key, raw in snap.prefix(DISK_KV, COMPOSER_PREFIX):
                    try:
                        start = composer_start(sqlite.decode(raw))
                    except BadValue:
                        continue
                    if start is not None:
                        days.add(start.date())
            else:
                held = self._global_ids(path)
                for _cid, entry in self._inline_entries(snap, held):
                    start = composer_start(entry)
                    if start is not None:
                        days.add(start.date())
        return days

    # --- the global store -----------------------------------------------------------------------

    def _is_global(self, path: Path) -> bool:
        return path.parent.name == GLOBAL_DB[0]

    def _parse_global(self, path: Path) -> ParseResult:
        issues: list[ParseIssue] = []
        tasks: list[ParsedTask] = []
        workspaces = self._workspaces.lookup(path.parent.parent / WORKSPACES)
        with sqlite.snapshot(path) as snap:
            if DISK_KV not in snap.tables:
                issues.append(
                    ParseIssue(
                        path=str(path), reason="not_a_transcript", detail="no cursorDiskKV table"
                    )
                )
                return ParseResult(issues=issues)
            parents: dict[str, str] = {}
            for key, raw in snap.prefix(DISK_KV, COMPOSER_PREFIX):
                try:
                    children = sqlite.decode(raw).get("subComposerIds")
                except BadValue:
                    continue
                if isinstance(children, list):
                    for child in children:
                        if isinstance(child, str):
                            parents.setdefault(child, key[len(COMPOSER_PREFIX) :])
            for key, raw in snap.prefix(DISK_KV, COMPOSER_PREFIX):
                cid = key[len(COMPOSER_PREFIX) :]
                try:
                    composer = sqlite.decode(raw)
                except BadValue as bad:
                    issues.append(
                        ParseIssue(path=str(path), reason=bad.reason, detail=f"{key}: {bad.detail}")
                    )
                    continue
                try:
                    task = self._composer_task(
                        path, snap, cid, composer, workspaces.get(cid), parents.get(cid), issues
                    )
                except Exception as exc:  # one composer's bug costs that composer
                    issues.append(
                        ParseIssue(
                            path=str(path), reason="bad_record", detail=f"{key}: {_describe(exc)}"
                        )
                    )
                    continue
                if task is not None:
                    tasks.append(task)
        return ParseResult(tasks=tasks, issues=issues)

    def _composer_task(
        self,
        path: Path,
        snap: sqlite.Snapshot,
        cid: str,
        composer: dict[str, Any],
        workspace: Workspace | None,
        parent: str | None,
        issues: list[ParseIssue],
        layout: str | None = None,
    ) -> ParsedTask | None:
        bubbles, layout = self._bubbles(snap, cid, composer, layout)
        if not bubbles:
            return None  # a chat opened and never used: no task
        start = composer_start(composer)
        if start is None:
            issues.append(
                ParseIssue(
                    path=str(path), reason="no_start_time", detail=f"composer {cid}: no createdAt"
                )
            )
            return None
        generating = composer.get("status") == "generating" or bool(
            composer.get("generatingBubbleIds")
        )
        turns = build_turns(bubbles, generating)
        for bubble in bubbles:
            if bubble.bad:
                issues.append(
                    ParseIssue(
                        path=str(path),
                        reason=bubble.bad,
                        detail=f"{BUBBLE_PREFIX}{cid}:{bubble.bubble_id}",
                    )
                )
        for user_id, why in turns.dropped:
            if "missing" in why:
                issues.append(
                    ParseIssue(
                        path=str(path),
                        reason="missing_record",
                        detail=f"composer {cid}, turn {user_id}: {why}"[:500],
                    )
                )
        name = composer.get("name")
        title = (
            TaskTitle(
                text=name.strip(),
                source="cursor:name",
                observed_at=parse_time(composer.get("lastUpdatedAt")),
            )
            if isinstance(name, str) and name.strip()
            else None
        )
        return ParsedTask(
            source=SOURCE,
            native_id=cid,
            started_at=start,
            title=title,
            ownership=composer_ownership(cid, composer, turns, parent),
            native_context=self._context(composer, turns, workspace, layout, parent),
            turns=turns.turns,
            unfinished_turn=turns.unfinished,
            source_path=str(path),
        )

    def _bubbles(
        self, snap: sqlite.Snapshot, cid: str, composer: dict[str, Any], layout: str | None
    ) -> tuple[list[Bubble], str]:
        inline = composer.get("conversation")
        if isinstance(inline, list) and inline:
            return [_inline_bubble(i, b) for i, b in enumerate(inline)], layout or "inline"
        headers = composer.get("fullConversationHeadersOnly")
        if not isinstance(headers, list) or not headers:
            return [], layout or "empty"
        conv_map = composer.get("conversationMap")
        conv_map = conv_map if isinstance(conv_map, dict) else {}
        rows: dict[str, bytes | str | None] = {}
        for key, raw in snap.prefix(DISK_KV, f"{BUBBLE_PREFIX}{cid}:"):
            rows[key[len(BUBBLE_PREFIX) + len(cid) + 1 :]] = raw
        out: list[Bubble] = []
        used_map = False
        for at, header in enumerate(headers):
            if not isinstance(header, dict) or not isinstance(header.get("bubbleId"), str):
                out.append(Bubble(f"#{at}", None, bad="bad_header"))
                continue
            bid = header["bubbleId"]
            htype = header.get("type") if header.get("type") in (USER, ASSISTANT) else None
            if isinstance(conv_map.get(bid), dict):
                used_map = True
                out.append(Bubble(bid, htype or conv_map[bid].get("type"), data=conv_map[bid]))
                continue
            if bid not in rows:
                out.append(Bubble(bid, htype, missing=True))
                continue
            try:
                data = sqlite.decode(rows[bid])
            except BadValue as bad:
                out.append(Bubble(bid, htype, bad=bad.reason))
                continue
            out.append(Bubble(bid, htype or data.get("type"), data=data))
        return out, layout or ("conversation-map" if used_map else "split")

    def _context(
        self,
        composer: dict[str, Any],
        turns: Turns,
        workspace: Workspace | None,
        layout: str,
        parent: str | None,
    ) -> dict[str, Any]:
        """Provenance only: workspace folder, mode, model, branch, layout."""
        ctx: dict[str, Any] = {"store_layout": layout}
        folder = workspace.folder if workspace else None
        first = (turns.first_user.data or {}) if turns.first_user else {}
        if folder is None:
            uris = first.get("workspaceUris")
            if isinstance(uris, list) and uris and isinstance(uris[0], str):
                folder = uris[0]
        cwd = folder_path(folder)
        if cwd is None and isinstance(first.get("workspaceProjectDir"), str):
            cwd = first["workspaceProjectDir"] or None
        if folder:
            ctx["workspace_folder"] = folder
        if cwd:
            ctx["cwd"] = cwd
        if workspace is not None:
            ctx["workspace_id"] = workspace.workspace_id
        for key in ("unifiedMode", "forceMode", "status", "createdOnBranch"):
            value = composer.get(key)
            if isinstance(value, str) and value:
                ctx["git_branch" if key == "createdOnBranch" else key] = value
        if isinstance(composer.get("isAgentic"), bool):
            ctx["isAgentic"] = composer["isAgentic"]
        if isinstance(composer.get("_v"), int):
            ctx["composer_version"] = composer["_v"]
        model = composer.get("modelConfig")
        if isinstance(model, dict) and isinstance(model.get("modelName"), str):
            ctx["model"] = model["modelName"]
        if parent:
            ctx["parent_composer_id"] = parent
        return ctx

    def _global_ids(self, path: Path) -> set[str]:
        """Composer ids the global store beside a workspace store (or in any root) holds."""
        stores = []
        if path.suffix == ".vscdb" and not self._is_global(path):
            stores.append(path.parent.parent.parent.joinpath(*GLOBAL_DB))
        stores += [r.joinpath(*GLOBAL_DB) for r in self.roots]
        held: set[str] = set()
        for db in dict.fromkeys(stores):
            held |= self._composer_ids(db)
        return held

    def _composer_ids(self, db: Path) -> set[str]:
        try:
            key = tuple(
                (p.stat().st_size, p.stat().st_mtime_ns)
                for p in sqlite.state_paths(db)
                if p.exists()
            )
        except OSError:
            return set()
        if not key:
            return set()
        cached = self._ide_ids.get(str(db))
        if cached and cached[0] == key:
            return cached[1]
        try:
            with sqlite.snapshot(db) as snap:
                ids = {k[len(COMPOSER_PREFIX) :] for k in snap.keys(DISK_KV, COMPOSER_PREFIX)}
        except StoreUnavailable:
            return set()
        self._ide_ids[str(db)] = (key, ids)
        return ids

    # --- workspace stores (the oldest layout) ---------------------------------------------------

    def _inline_entries(
        self, snap: sqlite.Snapshot, held: set[str]
    ) -> list[tuple[str, dict[str, Any]]]:
        data = composer_list(snap)
        entries = data.get("allComposers") if data else None
        if not isinstance(entries, list):
            return []
        out = []
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("composerId"), str):
                continue
            conv = entry.get("conversation")
            if isinstance(conv, list) and conv and entry["composerId"] not in held:
                out.append((entry["composerId"], entry))
        return out

    def _parse_workspace(self, path: Path) -> ParseResult:
        issues: list[ParseIssue] = []
        tasks: list[ParsedTask] = []
        held = self._global_ids(path)
        ws = Workspace(path.parent.name, read_folder(path.parent))
        with sqlite.snapshot(path) as snap:
            for cid, entry in self._inline_entries(snap, held):
                try:
                    task = self._composer_task(
                        path, snap, cid, entry, ws, None, issues, layout="workspace-inline"
                    )
                except Exception as exc:
                    issues.append(
                        ParseIssue(
                            path=str(path),
                            reason="bad_record",
                            detail=f"composer {cid}: {_describe(exc)}",
                        )
                    )
                    continue
                if task is not None:
                    tasks.append(task)
        return ParseResult(tasks=tasks, issues=issues)

    # --- agent transcripts ----------------------------------------------------------------------

    def _data_dir(self, path: Path) -> Path:
        parts = path.parts
        at = parts.index(TRANSCRIPTS_DIR) if TRANSCRIPTS_DIR in parts else len(parts) - 1
        # <data dir>/projects/<slug>/agent-transcripts/...
        return Path(*parts[: max(at - 2, 1)])

    def _transcript_start(self, path: Path) -> datetime | None:
        meta = chat_meta(self._data_dir(path), transcript_id(path))
        return parse_time(meta.get("createdAt")) if meta else None

    def _ide_copy(self, path: Path) -> bool:
        return transcript_id(path) in self._global_ids(path)

    def _parse_transcript(self, path: Path) -> ParseResult:
        read = JsonlRead(path)
        try:
            size = path.stat().st_size
        except OSError as exc:
            read.issue("unreadable", _describe(exc))
            return ParseResult(issues=read.issues)
        if size > CURSOR_TRANSCRIPT_MAX_BYTES:
            read.issue("file_too_large", f"{size} bytes > {CURSOR_TRANSCRIPT_MAX_BYTES}")
            return ParseResult(issues=read.issues)
        if self._ide_copy(path):
            return ParseResult()  # the IDE's copy of a composer the global store holds
        data_dir = self._data_dir(path)
        chat_id = transcript_id(path)
        transcript = read_transcript(path, read, self._is_settled(path))
        if transcript.records == 0:
            if read.lines_read > 0 and not any(i.reason == "truncated_line" for i in read.issues):
                read.issue("not_a_transcript", "no Cursor agent transcript records")
            return ParseResult(issues=read.issues)
        meta = chat_meta(data_dir, chat_id) or {}
        start = parse_time(meta.get("createdAt"))
        if start is None:
            read.issue("no_start_time", f"no chats/*/{chat_id}/store.db meta createdAt")
            return ParseResult(issues=read.issues)
        if transcript.dropped:
            read.issue("bad_record", f"{transcript.dropped} turn(s) dropped around damaged lines")
        name = meta.get("name")
        ctx: dict[str, Any] = {"store_layout": "agent-transcript"}
        slug = project_slug(path)
        if slug:
            ctx["project_slug"] = slug
        cwd = cwd_of(slug, meta.get(WORKSPACE_HASH), self._known_folders())
        if cwd:
            ctx["cwd"] = cwd
        for key in ("mode", "lastUsedModel"):
            if isinstance(meta.get(key), str) and meta[key]:
                ctx["model" if key == "lastUsedModel" else key] = meta[key]
        task = ParsedTask(
            source=SOURCE,
            native_id=chat_id,
            started_at=start,
            title=TaskTitle(text=name.strip(), source="cursor:chat-meta-name")
            if isinstance(name, str) and name.strip()
            else None,
            ownership=transcript_ownership(
                is_subagent(path), transcript.first_prompt, prompt_history(data_dir)
            ),
            native_context=ctx,
            turns=transcript.turns,
            unfinished_turn=transcript.unfinished,
            source_path=str(path),
        )
        return ParseResult(tasks=[task], issues=read.issues)

    def _known_folders(self) -> list[str]:
        """Local folders of the IDE's workspaces (candidates for a transcript's cwd)."""
        folders: list[str] = []
        for root in self.roots:
            for ws in self._workspaces.lookup(root / WORKSPACES).values():
                path = folder_path(ws.folder)
                if path and path not in folders:
                    folders.append(path)
        return folders

    def _is_settled(self, path: Path) -> bool:
        if self.settle_after is None:
            return False
        try:
            mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        except OSError:
            return False
        return self._now() - mtime >= self.settle_after


def _inline_bubble(at: int, raw: Any) -> Bubble:
    if not isinstance(raw, dict):
        return Bubble(f"#{at}", None, bad="bad_record")
    bid = raw.get("bubbleId") if isinstance(raw.get("bubbleId"), str) else f"#{at}"
    btype = raw.get("type") if raw.get("type") in (USER, ASSISTANT) else None
    if btype is None:
        return Bubble(bid, None, bad="bad_record")
    return Bubble(bid, btype, data=raw)


def build(roots: list[Path], options: object = None) -> CursorConnector:
    """The registry's factory (memory_pipeline/models/sources.py)."""
    return CursorConnector(roots)
