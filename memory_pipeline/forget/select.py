"""What the user asked to forget: memory ids, captured tasks, a project, a time range, a query.

Selectors combine as a union, except project and time range, which narrow each other (memories
of that project created in that range). A task given as SOURCE:NATIVE_ID is tombstoned even when
it was never captured (an excluded or not yet captured one stays out for good).

**A query is a literal match, never search.** It selects the memories and the turns whose text
holds the query (`QUERY_RULE`): case-insensitive, the query's words in that order with any
whitespace between them, as whole words (not inside a longer word: `quill` does not match
`quillfeather`). A memory's text is its title, content, summary, encoding context, tags, every
string in its metadata and its passages; a turn's text is its prompt and its outcome; a captured
task's is its title (often its first prompt): a task whose title holds the query goes whole.
Private memories and private tasks' turns and titles match only with `--include-private`.
Matches are shown with the text around them, and forgotten only after a yes.

`--with-evidence`: a selected memory's evidence goes too: the turns it rests on
(memory_provenance) and the topic segment memories those came from (which take their turns).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from pydantic import BaseModel, Field

from memory_pipeline.errors import UserError
from memory_pipeline.models.sources import SOURCE_NAMES

TASK_SOURCES = SOURCE_NAMES
QUERY_RULE = (
    "case-insensitive; the query's words in that order, any whitespace between them, as whole"
    " words (never inside a longer word); in a memory's title, content, summary, tags, metadata"
    " and passages, in a turn's prompt and outcome, and in a captured task's title (the whole"
    " task goes)"
)


class Selector(BaseModel):
    memory_ids: list[UUID] = Field(default_factory=list)
    tasks: list[tuple[str, str]] = Field(default_factory=list)  # (source, native id)
    project: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    query: str | None = None
    # Memories and turns the query matched (resolved before the forget, after the user
    # confirmed them).
    query_matches: list[UUID] = Field(default_factory=list)
    query_turns: list[UUID] = Field(default_factory=list)
    query_tasks: list[UUID] = Field(default_factory=list)
    include_private: bool = False
    with_evidence: bool = False

    @property
    def empty(self) -> bool:
        return not (
            self.memory_ids
            or self.tasks
            or self.project
            or self.since
            or self.until
            or self.query_matches
            or self.query_turns
            or self.query_tasks
        )

    def audit(self, key: bytes) -> dict[str, Any]:
        """The selector as the audit keeps it: no query text, which may be what was forgotten,
        only its HMAC-SHA256 under the home's audit key (audit.audit_key), so a guessed word
        cannot be confirmed without that key."""
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
            out["query_hmac_sha256"] = query_hmac(key, self.query)
            out["query_matches"] = len(self.query_matches)
            out["query_turns"] = len(self.query_turns)
            out["query_tasks"] = len(self.query_tasks)
        if self.include_private:
            out["include_private"] = True
        if self.with_evidence:
            out["with_evidence"] = True
        return out


def query_hmac(key: bytes, query: str) -> str:
    return hmac.new(key, b"forget-query\0" + query.encode(), hashlib.sha256).hexdigest()


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def query_regex(query: str) -> str:
    """The query as a PostgreSQL regular expression (ARE) for `~*` (see QUERY_RULE)."""
    words = query.split()
    if not words:
        raise UserError("--query is empty")
    bad = next((ch for ch in query if ch == "\0" or "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:
        raise UserError(
            f"--query holds the character {bad!r}, which no stored text can hold; leave it out"
        )
    # Every character that is not a letter or digit is escaped: in an ARE a backslash before a
    # non-alphanumeric character makes it literal (a backslash before a letter would not).
    body = r"\s+".join("".join(ch if ch.isalnum() else "\\" + ch for ch in word) for word in words)
    head = "(?<![[:alnum:]_])" if _word(words[0][0]) else ""
    tail = "(?![[:alnum:]_])" if _word(words[-1][-1]) else ""
    return head + body + tail


def python_regex(query: str) -> re.Pattern[str]:
    """The same rule in Python, to show where a match is (snippets)."""
    words = query.split()
    body = r"\s+".join(re.escape(w) for w in words)
    head = r"(?<!\w)" if _word(words[0][0]) else ""
    tail = r"(?!\w)" if _word(words[-1][-1]) else ""
    return re.compile(head + body + tail, re.IGNORECASE)


class QueryMatch(BaseModel):
    kind: str  # "memory", "turn" or "task"
    id: UUID
    label: str  # a memory's type, a turn's task and ordinal
    title: str
    snippet: str


_MEMORY_MATCHES = """
SELECT m.id, m.type, m.title,
       concat_ws(' | ', m.title, m.content, m.summary, m.encoding_context,
                 array_to_string(m.tags, ' '))
FROM memories m
WHERE (%(private)s OR NOT m.private)
  AND (m.title{c} ~* %(re)s OR m.content{c} ~* %(re)s OR coalesce(m.summary, ''){c} ~* %(re)s
       OR coalesce(m.encoding_context, ''){c} ~* %(re)s
       OR array_to_string(m.tags, ' '){c} ~* %(re)s
       OR EXISTS (SELECT 1 FROM jsonb_path_query(m.metadata, 'strict $.** ? (@.type() == "string")')
                  AS v WHERE (v #>> '{{}}'){c} ~* %(re)s)
       OR EXISTS (SELECT 1 FROM memory_passages p WHERE p.memory_id = m.id
                  AND p.text{c} ~* %(re)s))
ORDER BY m.created_at, m.id
"""
_TURN_MATCHES = """
SELECT t.id, k.source || ':' || k.native_id || ' turn ' || t.ordinal, coalesce(k.title, ''),
       t.prompt || ' | ' || t.outcome
FROM agent_turns t JOIN captured_tasks k ON k.id = t.task_id
WHERE (%(private)s OR NOT k.private) AND (t.prompt{c} ~* %(re)s OR t.outcome{c} ~* %(re)s)
ORDER BY k.started_at, k.id, t.ordinal
"""
_TASK_MATCHES = """
SELECT k.id, k.source || ':' || k.native_id, coalesce(k.title, ''), coalesce(k.title, '')
FROM captured_tasks k
WHERE (%(private)s OR NOT k.private) AND coalesce(k.title, ''){c} ~* %(re)s
ORDER BY k.started_at, k.id
"""
# Case-insensitive matching of every letter, not only ASCII ones, whatever the database's
# locale: PostgreSQL 17's built-in C.UTF-8 collation; an older server uses the database's own.
_UNICODE_COLLATION = "pg_c_utf8"


def query_matches(
    conn: psycopg.Connection, query: str, include_private: bool = False
) -> list[QueryMatch]:
    """Every memory and turn whose text literally holds the query (QUERY_RULE)."""
    params = {"re": query_regex(query), "private": include_private}
    pattern = python_regex(query)
    unicode = conn.execute(
        "SELECT 1 FROM pg_collation WHERE collname = %s", [_UNICODE_COLLATION]
    ).fetchone()
    collate = f' COLLATE "{_UNICODE_COLLATION}"' if unicode else ""
    out: list[QueryMatch] = []
    statements = (("memory", _MEMORY_MATCHES), ("turn", _TURN_MATCHES), ("task", _TASK_MATCHES))
    for kind, statement in statements:
        for row in conn.execute(statement.format(c=collate), params):  # type: ignore[arg-type]
            out.append(
                QueryMatch(
                    kind=kind,
                    id=row[0],
                    label=row[1],
                    title=row[2],
                    snippet=snippet(pattern, row[3]),
                )
            )
    return out


def snippet(pattern: re.Pattern[str], text: str, around: int = 40) -> str:
    """The text around the first match, on one line (the query itself is shown: the user
    typed it)."""
    found = pattern.search(text)
    start, end = (found.start(), found.end()) if found else (0, 0)
    lo, hi = max(0, start - around), min(len(text), end + around)
    piece = " ".join(text[lo:hi].split())
    return ("..." if lo else "") + piece + ("..." if hi < len(text) else "")


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
    if selector.query_turns:
        conn.execute(
            "INSERT INTO forget_t SELECT id FROM agent_turns WHERE id = ANY(%s::uuid[])"
            " ON CONFLICT DO NOTHING",
            [[str(t) for t in selector.query_turns]],
        )
    if selector.query_tasks:
        conn.execute(
            "INSERT INTO forget_k SELECT id FROM captured_tasks WHERE id = ANY(%s::uuid[])"
            " ON CONFLICT DO NOTHING",
            [[str(t) for t in selector.query_tasks]],
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
    if selector.with_evidence:
        add_evidence(conn)
    return missing


# A memory's evidence: the turns it rests on, and the segment memories of those turns' segments.
_EVIDENCE_TURNS = (
    "SELECT p.turn_id FROM memory_provenance p WHERE p.memory_id IN (SELECT id FROM forget_m)"
)
_EVIDENCE_SEGMENTS = (
    "SELECT DISTINCT s.memory_id FROM memory_provenance p"
    " JOIN topic_segments s ON s.id = p.segment_id"
    " WHERE p.memory_id IN (SELECT id FROM forget_m)"
)


def add_evidence(conn: psycopg.Connection) -> None:
    """Put the selected memories' evidence into the forget sets (`--with-evidence`)."""
    conn.execute(f"INSERT INTO forget_m {_EVIDENCE_SEGMENTS} ON CONFLICT DO NOTHING")
    conn.execute(f"INSERT INTO forget_t {_EVIDENCE_TURNS} ON CONFLICT DO NOTHING")


class Evidence(BaseModel):
    segments: list[tuple[str, str]] = Field(default_factory=list)  # (memory id, title)
    turns: int = 0
    tasks: list[str] = Field(default_factory=list)  # SOURCE:NATIVE_ID


def remaining_evidence(conn: psycopg.Connection) -> Evidence:
    """After the closure: the evidence of the forgotten memories that stays (it holds the text
    those memories were distilled from)."""
    segments = [
        (str(r[0]), r[1])
        for r in conn.execute(
            f"SELECT id, title FROM memories WHERE id IN ({_EVIDENCE_SEGMENTS})"
            " AND id NOT IN (SELECT id FROM forget_m) ORDER BY created_at, id"
        )
    ]
    turns = conn.execute(
        f"SELECT count(DISTINCT turn_id) FROM ({_EVIDENCE_TURNS}) e(turn_id)"
        " WHERE turn_id NOT IN (SELECT id FROM forget_t)"
    ).fetchone()
    tasks = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT k.source || ':' || k.native_id FROM agent_turns t"
            " JOIN captured_tasks k ON k.id = t.task_id"
            f" WHERE t.id IN ({_EVIDENCE_TURNS}) AND t.id NOT IN (SELECT id FROM forget_t)"
            " ORDER BY 1"
        )
    ]
    return Evidence(segments=segments, turns=int(turns[0]) if turns else 0, tasks=tasks)
