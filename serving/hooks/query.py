"""The query a hook searches with: the prompt, or at session start the repository and its
recent work.

The native cwd and repository are hints only. They shape the query text (session start) and,
when some memory's project has the repository's name, the rerank's project preference; they
never filter results and never become a memory's project.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psycopg

from memory_pipeline import tuning
from serving.hooks.payload import SESSION_START, HookEvent

RECENT_TASKS = 5  # titles of this many recent tasks make a session start's query


@dataclass(frozen=True)
class HookQuery:
    text: str  # "" means: nothing to search for
    project_context: str | None  # a known project named like the repository, as a rerank hint
    repository: str | None


def repository_root(cwd: str | None) -> Path | None:
    """The nearest ancestor of `cwd` (itself included) holding `.git`, else `cwd` itself."""
    if not cwd:
        return None
    path = Path(cwd)
    for candidate in (path, *path.parents):
        try:
            if (candidate / ".git").exists():
                return candidate
        except OSError:
            break
    return path


def repository_name(cwd: str | None) -> str | None:
    root = repository_root(cwd)
    return (root.name or None) if root else None


def build(conn: psycopg.Connection, event: HookEvent) -> HookQuery:
    repo = repository_name(event.cwd)
    project = _known_project(conn, repo) if repo else None
    if event.event != SESSION_START:
        prompt = " ".join(event.prompt.split())[: tuning.HOOK_QUERY_MAX_CHARS]
        if prompt.startswith("/") and " " not in prompt:
            prompt = ""  # a bare slash command (/clear, /compact) asks nothing of memory
        return HookQuery(prompt, project, repo)
    titles = _recent_titles(conn, event.cwd)
    parts = [p for p in (repo, "; ".join(titles)) if p]
    return HookQuery(": ".join(parts), project, repo)


def _known_project(conn: psycopg.Connection, repo: str) -> str | None:
    row = conn.execute(
        "SELECT project FROM memories WHERE lower(project) = lower(%s) LIMIT 1", [repo]
    ).fetchone()
    return row[0] if row else None


def _recent_titles(conn: psycopg.Connection, cwd: str | None) -> list[str]:
    """Titles of the latest tasks, those started in this repository (or directory) first."""
    root = repository_root(cwd)
    rows = conn.execute(
        "SELECT title FROM captured_tasks WHERE coalesce(title, '') <> ''"
        " ORDER BY (native_context->>'cwd' = %s OR starts_with(native_context->>'cwd', %s))"
        " IS TRUE DESC, started_at DESC LIMIT %s",
        [str(root or ""), f"{root}/" if root else "", RECENT_TASKS],
    ).fetchall()
    return [r[0] for r in rows]
