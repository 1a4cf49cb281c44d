from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_pipeline.capture.cursor import CursorConnector
from memory_pipeline_tests.support.cursor_store import load_fixture, write_chat_meta, write_vscdb

DATA = Path(__file__).resolve().parent.parent / "data" / "cursor"
SPLIT_ID = "7f3c2a10-1b2c-4d5e-8f90-aa11bb22cc33"
TRANSCRIPT_ID = "5d1f7b3e-9a2c-4e8f-b1d0-3c4a5b6c7d8e"


@dataclass
class CursorHome:
    user: Path  # ~/.config/Cursor/User
    data: Path  # ~/.cursor

    @property
    def global_db(self) -> Path:
        return self.user / "globalStorage" / "state.vscdb"

    def connector(self, **kw) -> CursorConnector:
        return CursorConnector([self.user, self.data], **kw)

    def workspace(self, ws_id: str, fixture: str, folder: str) -> Path:
        d = self.user / "workspaceStorage" / ws_id
        d.mkdir(parents=True, exist_ok=True)
        (d / "workspace.json").write_text(json.dumps({"folder": folder}))
        return write_vscdb(d / "state.vscdb", load_fixture(fixture))

    def transcript(self, chat_id: str = TRANSCRIPT_ID, text: str | None = None, nested=True):
        slug = self.data / "projects" / "home-mara-src-meterflow" / "agent-transcripts"
        path = slug / chat_id / f"{chat_id}.jsonl" if nested else slug / f"{chat_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text is not None else (DATA / "agent-transcript.jsonl").read_text())
        return path

    def chat_meta(self, chat_id: str = TRANSCRIPT_ID, **meta):
        meta = {
            "agentId": chat_id,
            "name": "Failing tests",
            "mode": "default",
            "createdAt": 1791273600000,
            "lastUsedModel": "auto",
            **meta,
        }
        return write_chat_meta(self.data, "6a4ed208d874bc31c17fb549de8edded", chat_id, meta)


@pytest.fixture
def home(tmp_path: Path) -> CursorHome:
    h = CursorHome(tmp_path / "config" / "Cursor" / "User", tmp_path / "dot-cursor")
    h.user.mkdir(parents=True)
    h.data.mkdir(parents=True)
    return h


@pytest.fixture
def split_home(home: CursorHome) -> CursorHome:
    write_vscdb(home.global_db, load_fixture("global-split.json"))
    home.workspace("a1b2c3d4e5f6", "workspace-split.json", "file:///home/mara/src/meterflow")
    return home
