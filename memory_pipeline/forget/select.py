"""What the user asked to forget: memory ids, captured tasks, a project, a time range, a query.

Selectors combine as a union, except project and time range, which narrow each other (memories
of that project created in that range). A query selects the memories search returns for it
(shown first, and forgotten only after a yes). A task given as SOURCE:NATIVE_ID is tombstoned even
when it was never captured (an excluded or not yet captured one stays out for good).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from pydantic import BaseModel, Field

from memory_pipeline.errors import UserError

TASK_SOURCES = ("codex", "claude_code", "chat_import")


class Selector(BaseModel):
    memory_ids: list[UUID] = Field(default_factory=list)
    tasks: list[tuple[str, str]] = Field(default_factory=list)  # (source, native id)
    project: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    query: str | None = None
    # Memories the query matched (resolved before the forget, after the user confirmed them).
    query_matches: list[UUID] = Field(default_factory=list)
    include_private: bool = False

    @property
    def empty(self) -> bool:
        return not (
            self.memory_ids
            or self.tasks
            or self.project
            or self.since
            or self.until
            or self.query_matches
        )

    def audit(self) -> dict[str, Any]:
        """The selector as the audit keeps it: no query text, which may be what was forgotten."""
        out: dict[str, Any] = {}
        if self.memory_ids:
            out["memory_ids"] = [str(m) for m in self.memory_ids]
        if self.tasks:
            out["tasks"] = [f"{s}:{n}" for s, n in self.tasks]
        if self.project:
            out["project"] = self.project
        if self.since:
            out["since"] = self.since.isoformat()
        if self.until:
            out["until"] = self.until.isoformat()
        if self.query is not None:
            out["query_sha256"] = hashlib.sha256(self.query.encode()).hexdigest()
            out["query_matches"] = len(self.query_matches)
        if self.include_private:
            out["include_private"] = True
        return out


def parse_task(value: str) -> tuple[str, str]:
    source, sep, native_id = value.partition(":")
    if not sep or source not in TASK_SOURCES or not native_id.strip():
        raise UserError(
            f"--task {value!r}: write SOURCE:NATIVE_ID with SOURCE one of {', '.join(TASK_SOURCES)}"
            " (the native id is in `search --json` provenance)"
        )
    return source, native_id.strip()


def seed(conn: psycopg.Connection, selector: Selector) -> list[str]:
    """Fill the closure's temp tables (cascade.create_sets) with what was selected; returns
    the memory ids that were asked for by id but do not exist."""
    missing: list[str] = []
    ids = [str(m) for m in selector.memory_ids]
    if ids:
        found = {
            str(r[0])
            for r in conn.execute("SELECT id FROM memories WHERE id = ANY(%s::uuid[])", [ids])
        }
        missing = [m for m in ids if m not in found]
        conn.execute(
            "INSERT INTO forget_m SELECT unnest(%s::uuid[]) ON CONFLICT DO NOTHING", [sorted(found)]
        )
    if selector.query_matches:
        conn.execute(
            "INSERT INTO forget_m SELECT id FROM memories WHERE id = ANY(%s::uuid[])"
            " ON CONFLICT DO NOTHING",
            [[str(m) for m in selector.query_matches]],
        )
    for source, native_id in selector.tasks:
        conn.execute(
            "INSERT INTO forget_k SELECT id FROM captured_tasks WHERE source = %s"
            " AND native_id = %s ON CONFLICT DO NOTHING",
            [source, native_id],
        )
    if selector.project or selector.since or selector.until:
        conds, params = ["true"], []
        if selector.project:
            conds.append("project = %s")
            params.append(selector.project)
        if selector.since:
            conds.append("created_at >= %s")
            params.append(selector.since)
        if selector.until:
            conds.append("created_at < %s")
            params.append(selector.until)
        conn.execute(
            "INSERT INTO forget_m SELECT id FROM memories WHERE "
            + " AND ".join(conds)
            + " ON CONFLICT DO NOTHING",
            params,
        )
    return missing
