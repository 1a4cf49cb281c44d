"""The demo corpus's Cursor sessions: reproducible from their spec and parsed cleanly."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory_pipeline.capture.cursor import CursorConnector
from memory_pipeline.demo import cursor_corpus

CORPUS = cursor_corpus.CORPUS
ROOTS = (cursor_corpus.USER_DIR, cursor_corpus.HOME_DIR)


def _content(root: Path) -> dict[str, object]:
    """Every file under the Cursor demo roots: a database by its rows, any other by its bytes."""
    out: dict[str, object] = {}
    for sub in ROOTS:
        for path in sorted((root / sub).rglob("*")):
            if not path.is_file():
                continue
            rel = str(path.relative_to(root))
            if path.suffix in (".vscdb", ".db"):
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                tables = [
                    r[0]
                    for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                ]
                out[rel] = {
                    t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables
                }
                conn.close()
            else:
                out[rel] = path.read_bytes()
    return out


def test_the_generator_reproduces_the_committed_cursor_sessions(tmp_path: Path):
    cursor_corpus.build(tmp_path)
    assert _content(tmp_path) == _content(CORPUS)


def test_the_demo_cursor_sessions_parse_cleanly_and_are_the_users():
    connector = CursorConnector([CORPUS / sub for sub in ROOTS])
    tasks, issues = [], []
    for path in connector.discover():
        result = connector.parse(path)
        tasks += result.tasks
        issues += result.issues
        assert connector.task_days(path) == {t.started_at.date() for t in result.tasks}
    assert issues == []
    assert len(tasks) == 4
    assert {t.ownership.reason for t in tasks} == {
        "cursor:typed-prompt",
        "cursor:cli-prompt-history",
    }
    assert sum(len(t.turns) for t in tasks) == 6
    assert {t.native_context["cwd"] for t in tasks} == {
        "/home/mara/homelab",
        "/home/mara/src/meterflow",
    }
