"""Storing parsed tasks: monotonic append, source drift, renames, skips, privacy.

Stored turns are immutable (the database refuses updates). A refresh appends only the complete
turns that come after the last stored one; known turns that changed, vanished or moved in the
source are Source Drift: counted for the run report and otherwise ignored, with no extra state.
Everything a user typed or an agent answered is redacted before it is written, and each turn keeps
the sha256 of its stored text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.capture.models import ParsedTask, ParsedTurn, ParseIssue, TaskTitle
from memory_pipeline.capture.redact import Redactions, redact
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.tuning import DERIVED_TITLE_MAX_CHARS

# File problems that describe a moment, not the file: a live transcript's half-written last line
# is complete on the next run. They go to run metadata only, never to capture_skips.
TRANSIENT_ISSUES = frozenset({"truncated_line", "changed_while_reading"})


@dataclass(frozen=True)
class StoredTurn:
    ordinal: int
    native_turn_id: str | None
    content_sha256: str


@dataclass(frozen=True)
class CleanTurn:
    """A parsed turn after redaction, ready to store."""

    turn: ParsedTurn
    prompt: str
    outcome: str
    content_sha256: str
    redactions: Redactions


def task_day(task: ParsedTask) -> date:
    return task.started_at.astimezone(UTC).date()


def clean_turn(turn: ParsedTurn) -> CleanTurn:
    prompt, r1 = redact(turn.prompt)
    outcome, r2 = redact(turn.outcome)
    r1.add(r2)
    digest = hashlib.sha256(f"{prompt}\x1f{outcome}".encode()).hexdigest()
    return CleanTurn(turn, prompt, outcome, digest, r1)


def plan_append(stored: list[StoredTurn], parsed: list[CleanTurn]) -> tuple[list[CleanTurn], int]:
    """Which parsed turns are new, and how many known turns drifted.

    The parsed list is aligned on the last stored turn (by native turn id, else by content hash);
    everything after it is new. Without an anchor, position decides. Known turns that changed,
    vanished or moved count as drift; a known turn never comes back as a new one.
    """
    if not stored:
        return parsed, 0

    def keys(items: list[tuple[str | None, str]]) -> list[str]:
        # Identity by native turn id, else by content; the occurrence number keeps two identical
        # turns ("continue" twice) apart.
        seen: dict[str, int] = {}
        out = []
        for native_id, digest in items:
            base = f"id:{native_id}" if native_id else f"sha:{digest}"
            seen[base] = seen.get(base, 0) + 1
            out.append(f"{base}#{seen[base]}")
        return out

    parsed_keys = keys([(c.turn.native_turn_id, c.content_sha256) for c in parsed])
    stored_keys = keys([(s.native_turn_id, s.content_sha256) for s in stored])
    position = {k: i for i, k in enumerate(parsed_keys)}

    drift = 0
    for s, k in zip(stored, stored_keys, strict=True):
        i = position.get(k)
        if i is None or i != s.ordinal or parsed[i].content_sha256 != s.content_sha256:
            drift += 1  # vanished, moved, or changed in place
    anchor = position.get(stored_keys[-1])
    first = anchor + 1 if anchor is not None else len(stored)
    known = set(stored_keys)
    new = [c for c, k in zip(parsed[first:], parsed_keys[first:], strict=True) if k not in known]
    return new, drift


def store_task(conn: psycopg.Connection, task: ParsedTask, report: CaptureReport) -> None:
    """Capture one user-owned task, or record why it was skipped. Call inside a transaction."""
    day = task_day(task)
    report.tasks_seen += 1
    if task.ownership.ownership != "user_owned":
        record_task_skip(conn, task, day)
        report.count_skip(task.source, task.native_id, task.ownership.reason)
        return

    title = _title(task)
    # Insert-or-nothing first, then lock the row: two runs capturing the same task at once
    # (a backfill overlapping the sensor) serialise here, and the second appends nothing.
    inserted = conn.execute(
        "INSERT INTO captured_tasks (source, native_id, title, title_source,"
        " title_observed_at, started_at, partition_day, native_context, source_path,"
        " ownership_reason, ownership_evidence)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (source, native_id) DO NOTHING RETURNING id",
        [
            task.source,
            task.native_id,
            title.text if title else None,
            title.source if title else None,
            title.observed_at if title else None,
            task.started_at,
            day,
            Jsonb(_redacted_context(task.native_context)),
            task.source_path,
            task.ownership.reason,
            Jsonb(task.ownership.evidence),
        ],
    ).fetchone()
    if inserted:
        task_id = inserted[0]
        report.tasks_captured += 1
    else:
        task_id, stored_title, stored_source, stored_path = conn.execute(
            "SELECT id, title, title_source, source_path FROM captured_tasks"
            " WHERE source = %s AND native_id = %s FOR UPDATE",
            [task.source, task.native_id],
        ).fetchone()  # type: ignore[misc]
        if title and _is_rename(stored_title, stored_source, title):
            # A rename refreshes presentation only: turns, cursor, memories and the inactivity
            # clock stay as they are.
            conn.execute(
                "UPDATE captured_tasks SET title = %s, title_source = %s, title_observed_at = %s,"
                " title_updated_at = now() WHERE id = %s",
                [title.text, title.source, title.observed_at, task_id],
            )
            report.renames += 1
        if stored_path != task.source_path:  # e.g. a Codex thread moved to archived_sessions
            conn.execute(
                "UPDATE captured_tasks SET source_path = %s WHERE id = %s",
                [task.source_path, task_id],
            )

    stored = [
        StoredTurn(*r)
        for r in conn.execute(
            "SELECT ordinal, native_turn_id, content_sha256 FROM agent_turns"
            " WHERE task_id = %s ORDER BY ordinal",
            [task_id],
        ).fetchall()
    ]
    new, drift = plan_append(stored, [clean_turn(t) for t in task.turns])
    report.drift_ignored += drift
    if task.unfinished_turn:
        report.unfinished_turns_waiting += 1
    if not new:
        return
    next_ordinal = len(stored)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO agent_turns (task_id, ordinal, native_turn_id, prompt, outcome,"
            " prompt_speaker, outcome_speaker, started_at, completed_at, native_message_ids,"
            " content_sha256, redactions) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                [
                    task_id,
                    next_ordinal + i,
                    c.turn.native_turn_id,
                    c.prompt,
                    c.outcome,
                    c.turn.prompt_speaker,
                    c.turn.outcome_speaker,
                    c.turn.started_at,
                    c.turn.completed_at,
                    c.turn.native_message_ids,
                    c.content_sha256,
                    c.redactions.total,
                ]
                for i, c in enumerate(new)
            ],
        )
    for c in new:
        report.redactions.add(c.redactions)
    last = new[-1].turn
    # The inactivity clock: when the last appended turn happened in the source (capture time
    # only when the source has no timestamp), so history imported late is not held back.
    clock = last.completed_at or last.started_at or datetime.now(UTC)
    conn.execute(
        "UPDATE captured_tasks SET turn_count = turn_count + %s,"
        " last_turn_appended_at = greatest(last_turn_appended_at, %s) WHERE id = %s",
        [len(new), clock, task_id],
    )
    report.turns_appended += len(new)
    report.tasks_with_new_turns += 1


def record_task_skip(conn: psycopg.Connection, task: ParsedTask, day: date) -> None:
    conn.execute(
        "INSERT INTO capture_skips (kind, source, native_id, path, reason, detail, ownership,"
        " evidence, partition_day) VALUES ('task', %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (kind, source, native_id, path, line, reason) DO UPDATE"
        " SET evidence = EXCLUDED.evidence"
        " WHERE capture_skips.evidence IS DISTINCT FROM EXCLUDED.evidence",
        [
            task.source,
            task.native_id,
            task.source_path,
            task.ownership.reason,
            f"{task.ownership.ownership} task",
            task.ownership.ownership,
            Jsonb(task.ownership.evidence),
            day,
        ],
    )


def record_file_issue(
    conn: psycopg.Connection, source: str, issue: ParseIssue, report: CaptureReport
) -> None:
    report.count_file_issue(issue.reason)
    if issue.reason in TRANSIENT_ISSUES:
        return
    conn.execute(
        "INSERT INTO capture_skips (kind, source, path, line, reason, detail)"
        " VALUES ('file', %s, %s, %s, %s, %s)"
        " ON CONFLICT (kind, source, native_id, path, line, reason) DO NOTHING",
        [source, issue.path, issue.line or 0, issue.reason, issue.detail[:500]],
    )


def _redacted_context(value: object) -> object:
    """Native context is provenance, but a repository URL can carry a token: redact it too."""
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, dict):
        return {k: _redacted_context(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted_context(v) for v in value]
    return value


def _title(task: ParsedTask) -> TaskTitle | None:
    if task.title:
        text, _ = redact(task.title.text)
        return task.title.model_copy(update={"text": text})
    if task.turns:
        # No native name yet: the first prompt's first line stands in until one appears.
        first_line = redact(task.turns[0].prompt)[0].strip().splitlines()
        if first_line:
            text = first_line[0][:DERIVED_TITLE_MAX_CHARS].strip()
            return TaskTitle(text=text, source="derived:first_prompt")
    return None


def _is_rename(stored_title: str | None, stored_source: str | None, title: TaskTitle) -> bool:
    if stored_title == title.text:
        return False
    if title.source.startswith("derived:"):
        # A derived title never replaces one: not a native one, and not an earlier derived one
        # (the first prompt does not change).
        return stored_title is None
    return True
