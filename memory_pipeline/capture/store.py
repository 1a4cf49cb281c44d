"""Storing parsed tasks: monotonic append, source drift, renames, skips, privacy.

Stored turns are immutable (the database refuses updates). A refresh appends only the complete
turns that come after the last stored one; known turns that changed, vanished or moved in the
source are Source Drift: counted for the run report and otherwise ignored, with no extra state.
Everything a user typed or an agent answered is redacted before it is written, and each turn keeps
the sha256 of its stored text.

**Storable text.** PostgreSQL refuses NUL in text and `\\u0000` in jsonb, and a lone surrogate
(`\\ud800`, valid in a Python str, produced by JSON escapes) cannot be encoded at all. Every text
written here (prompts, outcomes, titles, ids, speakers, paths, every string and key of the JSONB
native context and evidence, skip details) goes through `storable()` first: NUL and lone
surrogates become U+FFFD, counted in the run report (`unstorable_chars_replaced`). A path's
undecodable bytes (surrogate escapes) are written as `\\xNN` instead, so two such paths stay apart.

**Unanswered turns** (chat imports, see `chat_import.py`). A last prompt nobody answered is stored
once its conversation went quiet, with an empty outcome and `unanswered = true`. When the source
later shows that turn answered (or with more prompt-side messages), the stored turn is not
rewritten: the complete turn is appended as a new turn that repeats the question, with
`continues_ordinal` naming the stored turn it completes. The answer is then searchable next to its
question in one turn, and the question alone stays what it was. A stored turn that was continued
is represented by its continuation when a refresh is aligned with the source (`_current`), so the
pair counts as the one turn the source holds, and nothing is drift.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.capture.confirmations import with_confirmation
from memory_pipeline.capture.models import ParsedTask, ParsedTurn, ParseIssue, TaskTitle
from memory_pipeline.capture.redact import Redactions, redact
from memory_pipeline.capture.report import CaptureReport
from memory_pipeline.forget.privacy import CaptureRules, Rule
from memory_pipeline.forget.tombstones import (
    forgotten_turns,
    source_turn_key,
    task_forgotten,
    tombstone_key,
)
from memory_pipeline.settings import Settings
from memory_pipeline.tuning import (
    CAPTURE_JSON_MAX_DEPTH,
    CAPTURE_SKIP_KEY_MAX_CHARS,
    DERIVED_TITLE_MAX_CHARS,
)

# File problems that describe a moment, not the file: a live transcript's half-written last line
# is complete on the next run. They go to run metadata only, never to capture_skips.
TRANSIENT_ISSUES = frozenset({"truncated_line", "changed_while_reading"})
TASK_CONFLICT = "task_conflict"  # capture_skips reason (kind 'task'): two files claim one task


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_TOO_DEEP = "[nested too deep]"


def storable(text: str) -> tuple[str, int]:
    """The text with NUL and lone surrogates replaced by U+FFFD, and how many were replaced."""
    return _UNSTORABLE.subn("\ufffd", text)


def path_text(path: str) -> tuple[str, int]:
    """A file path as storable text, and how many characters were replaced.

    A name that is not UTF-8 comes from the OS as surrogate escapes; its bytes are written as
    `\\xNN` (distinct paths stay distinct). The same for every use, so it is the key of a file
    wherever one is stored (`source_files.path`, `captured_tasks.source_path`, skips). A UTF-8
    path is returned unchanged.
    """
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        return storable(path)
    decoded = raw.decode("utf-8", "backslashreplace")
    escaped = sum(1 for ch in path if "\udc80" <= ch <= "\udcff") if decoded != path else 0
    cleaned, n = storable(decoded)
    return cleaned, escaped + n


@dataclass
class Storable:
    """Makes values storable and counts what it replaced (one per task or turn written)."""

    replaced: int = 0

    def text(self, value: str) -> str:
        cleaned, n = storable(value)
        self.replaced += n
        return cleaned

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def path(self, value: str) -> str:
        cleaned, n = path_text(value)
        self.replaced += n
        return cleaned

    def json(self, value: object, redacted: bool = False, depth: int = 0) -> object:
        """A JSON-serialisable copy PostgreSQL's jsonb accepts: storable strings and keys, no NaN
        or infinity (not JSON), bounded depth; optionally with secrets redacted."""
        if isinstance(value, str):
            cleaned = self.text(value)
            return redact(cleaned)[0] if redacted else cleaned
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if depth >= CAPTURE_JSON_MAX_DEPTH:
            return _TOO_DEEP
        if isinstance(value, dict):
            return {self.text(str(k)): self.json(v, redacted, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.json(v, redacted, depth + 1) for v in value]
        return self.text(str(value))


def skip_key(value: str) -> str:
    """`value` short enough to be a key of a recorded skip (head + sha256 when too long)."""
    if len(value) <= CAPTURE_SKIP_KEY_MAX_CHARS:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:16]
    return f"{value[: CAPTURE_SKIP_KEY_MAX_CHARS - 20]}...sha256:{digest}"


@dataclass(frozen=True)
class StoredTurn:
    ordinal: int
    native_turn_id: str | None
    content_sha256: str
    unanswered: bool = False
    continues_ordinal: int | None = None
    prompt: str | None = None  # loaded for unanswered turns only: their answer is matched by it


@dataclass(frozen=True)
class CleanTurn:
    """A parsed turn after redaction and made storable, ready to store."""

    turn: ParsedTurn
    prompt: str
    outcome: str
    content_sha256: str
    redactions: Redactions
    # HMAC of the source text before redaction (sql/028): a tombstone new rules cannot dodge.
    source_key: str | None = None
    native_turn_id: str | None = None
    native_message_ids: list[str] = field(default_factory=list)
    prompt_speaker: str | None = None
    outcome_speaker: str | None = None
    unstorable_replaced: int = 0


@dataclass(frozen=True)
class Append:
    """A turn to append; `continues_ordinal` when it completes a stored unanswered turn."""

    turn: CleanTurn
    continues_ordinal: int | None = None


def task_day(task: ParsedTask) -> date:
    return task.started_at.astimezone(UTC).date()


def clean_turn(turn: ParsedTurn, key: bytes | None = None) -> CleanTurn:
    fix = Storable()
    source_prompt, source_outcome = fix.text(turn.prompt), fix.text(turn.outcome)
    prompt, r1 = redact(source_prompt)
    outcome, r2 = redact(source_outcome)
    r1.add(r2)
    digest = hashlib.sha256(f"{prompt}\x1f{outcome}".encode()).hexdigest()
    source = f"{source_prompt}\x1f{source_outcome}".encode("utf-8", "surrogatepass")
    return CleanTurn(
        turn,
        prompt,
        outcome,
        digest,
        r1,
        source_key=source_turn_key(key, source) if key else None,
        native_turn_id=fix.optional(turn.native_turn_id),
        native_message_ids=[fix.text(m) for m in turn.native_message_ids],
        prompt_speaker=fix.optional(turn.prompt_speaker),
        outcome_speaker=fix.optional(turn.outcome_speaker),
        unstorable_replaced=fix.replaced,
    )


def _keys(items: list[tuple[str | None, str]]) -> list[str]:
    # Identity by native turn id, else by content; the occurrence number keeps two identical
    # turns ("continue" twice) apart.
    seen: dict[str, int] = {}
    out = []
    for native_id, digest in items:
        base = f"id:{native_id}" if native_id else f"sha:{digest}"
        seen[base] = seen.get(base, 0) + 1
        out.append(f"{base}#{seen[base]}")
    return out


def _current(stored: list[StoredTurn]) -> list[StoredTurn]:
    """The stored turns as the source holds them: a continued unanswered turn is represented by
    its latest continuation, at the unanswered turn's position."""
    current: list[StoredTurn] = []
    position: dict[int, int] = {}
    for s in stored:
        at = position.get(s.continues_ordinal) if s.continues_ordinal is not None else None
        if at is None:
            position[s.ordinal] = len(current)
            current.append(s)
        else:
            current[at] = s
            position[s.ordinal] = at
    return current


def _continuation(
    open_turn: StoredTurn, key: str, at: int, parsed: list[CleanTurn], position: dict[str, int]
) -> int | None:
    """Where the parsed turns hold the stored unanswered turn `open_turn` (at position `at`)
    with an answer or more of its question, if they do.

    Same native turn id: that turn, whatever it now says. Without ids: the parsed turn at the
    same position whose prompt starts with the stored prompt.
    """
    i = position.get(key)
    if i is not None:
        if parsed[i].content_sha256 == open_turn.content_sha256:
            return None  # still the same unanswered question
        return i if open_turn.native_turn_id else None
    if at < len(parsed) and open_turn.prompt and parsed[at].prompt.startswith(open_turn.prompt):
        return at
    return None


def plan_append(stored: list[StoredTurn], parsed: list[CleanTurn]) -> tuple[list[Append], int]:
    """Which parsed turns are new, and how many known turns drifted.

    The parsed list is aligned on the last stored turn (by native turn id, else by content hash);
    everything after it is new. Without an anchor, position decides. Known turns that changed,
    vanished or moved count as drift; a known turn never comes back as a new one. The one
    exception is a stored unanswered last turn: the parsed turn that answers it (or extends its
    question) is appended as its continuation, and it is not drift; while the source still waits
    (no parsed turn at its place), it is not drift either.
    """
    if not stored:
        return [Append(c) for c in parsed], 0
    current = _current(stored)
    parsed_keys = _keys([(c.native_turn_id, c.content_sha256) for c in parsed])
    stored_keys = _keys([(s.native_turn_id, s.content_sha256) for s in current])
    position = {k: i for i, k in enumerate(parsed_keys)}
    last = len(current) - 1
    tail = current[last]
    continued = (
        _continuation(tail, stored_keys[last], last, parsed, position) if tail.unanswered else None
    )
    waiting = tail.unanswered and stored_keys[last] not in position and last >= len(parsed)

    drift = 0
    for at, (s, k) in enumerate(zip(current, stored_keys, strict=True)):
        if at == last and (continued is not None or waiting):
            continue
        i = position.get(k)
        if i is None or i != at or parsed[i].content_sha256 != s.content_sha256:
            drift += 1  # vanished, moved, or changed in place
    if continued is not None:
        first = continued
    else:
        anchor = position.get(stored_keys[-1])
        first = anchor + 1 if anchor is not None else len(current)
    known = set(stored_keys)
    new = []
    for i in range(first, len(parsed)):
        if i == continued:
            new.append(Append(parsed[i], continues_ordinal=tail.ordinal))
        elif parsed_keys[i] not in known:
            new.append(Append(parsed[i]))
    return new, drift


_ALL_ORDINALS = (0, 2**31 - 1)
# How far past a batch's last ordinal a stored turn may sit (each continuation of an unanswered
# turn shifts the later ones by one); those are known turns, never appended again.
_BATCH_SLACK = 64


def _batch_window(task: ParsedTask) -> tuple[tuple[int, int], int]:
    """The stored ordinals a task's turns are aligned with: all of them, or for one batch of a
    long task (`partial`) the batch's own ordinals; and where the slack after them ends."""
    if not task.partial or not task.turns:
        return _ALL_ORDINALS, 0
    low, high = task.turns[0].ordinal, task.turns[-1].ordinal + 1
    return (low, high), high + _BATCH_SLACK


def _not_stored_after(
    conn: psycopg.Connection, task_id: int, later: int, new: list[Append]
) -> list[Append]:
    """`new` without the turns already stored in the slack after a batch's window."""
    if not new or not later:
        return new
    known = {
        r[0]
        for r in conn.execute(
            "SELECT content_sha256 FROM agent_turns WHERE task_id = %s"
            " AND ordinal >= %s AND ordinal < %s",
            [task_id, later - _BATCH_SLACK, later],
        ).fetchall()
    }
    return [a for a in new if a.turn.content_sha256 not in known]


def _next_ordinal(conn: psycopg.Connection, task_id: int) -> int:
    row = conn.execute(
        "SELECT coalesce(max(ordinal) + 1, 0) FROM agent_turns WHERE task_id = %s", [task_id]
    ).fetchone()
    return int(row[0]) if row else 0


def store_task(conn: psycopg.Connection, task: ParsedTask, report: CaptureReport) -> None:
    """Capture one user-owned task, or record why it was skipped. Call inside a transaction."""
    day = task_day(task)
    if not (task.partial and task.turns and task.turns[0].ordinal > 0):
        report.tasks_seen += 1  # a long task's later batches are the same task
    # Forgotten (forget/tombstones.py) and excluded (MEMORY_EXCLUDE) tasks are never stored.
    if task_forgotten(conn, task.source, storable(task.native_id)[0]):
        report.count_skip(task.source, task.native_id, "forgotten")
        return
    rules = CaptureRules.from_settings()
    rule = rules.excluded_by(task.source, task.native_context)
    if rule is not None:
        record_exclusion(conn, task, day, rule)
        report.count_skip(task.source, task.native_id, "excluded")
        return
    task = with_confirmation(conn, task)  # the user's word turns an `unknown` task theirs
    if task.ownership.ownership != "user_owned":
        record_task_skip(conn, task, day)
        report.count_skip(
            task.source, task.native_id, task.ownership.reason, task.ownership.ownership
        )
        return

    fix = Storable()
    native_id = fix.text(task.native_id)
    source_path = fix.path(task.source_path)
    claimed = _claim(conn, task, native_id, source_path)
    if claimed is None:  # another file holds this task: recorded, this copy is not captured
        report.count_skip(task.source, task.native_id, TASK_CONFLICT)
        return
    if claimed != native_id:  # kept apart under its own key (a chat import)
        native_id = claimed
        if task_forgotten(conn, task.source, native_id):
            report.count_skip(task.source, native_id, "forgotten")
            return
    private = rules.is_private(task.source, task.native_context)
    title = _title(task, fix)
    # Insert-or-nothing first, then lock the row: two runs capturing the same task at once
    # (a backfill overlapping the sensor) serialise here, and the second appends nothing.
    inserted = conn.execute(
        "INSERT INTO captured_tasks (source, native_id, title, title_source,"
        " title_observed_at, started_at, partition_day, native_context, source_path,"
        " ownership_reason, ownership_evidence, private)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (source, native_id) DO NOTHING RETURNING id",
        [
            task.source,
            native_id,
            title.text if title else None,
            title.source if title else None,
            title.observed_at if title else None,
            task.started_at,
            day,
            Jsonb(fix.json(task.native_context, redacted=True)),
            source_path,
            task.ownership.reason,
            Jsonb(fix.json(task.ownership.evidence)),
            private,
        ],
    ).fetchone()
    turn_count = 0
    if inserted:
        task_id = inserted[0]
        report.tasks_captured += 1
        report.unstorable_chars_replaced += fix.replaced
    else:
        task_id, stored_title, stored_source, stored_path, turn_count, was_private = conn.execute(
            "SELECT id, title, title_source, source_path, turn_count, private FROM captured_tasks"
            " WHERE source = %s AND native_id = %s FOR UPDATE",
            [task.source, native_id],
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
        if stored_path != source_path:  # e.g. a Codex thread moved to archived_sessions
            conn.execute(
                "UPDATE captured_tasks SET source_path = %s WHERE id = %s",
                [source_path, task_id],
            )
        if was_private != private:  # a MEMORY_PRIVATE rule was added or removed (sql/019)
            conn.execute("UPDATE captured_tasks SET private = %s WHERE id = %s", [private, task_id])

    window, later = _batch_window(task)
    stored = [
        StoredTurn(*r)
        for r in conn.execute(
            "SELECT ordinal, native_turn_id, content_sha256, unanswered, continues_ordinal,"
            " CASE WHEN unanswered THEN prompt END FROM agent_turns"
            " WHERE task_id = %s AND ordinal >= %s AND ordinal < %s ORDER BY ordinal",
            [task_id, *window],
        ).fetchall()
    ]
    key = tombstone_key(Settings.from_env().memory_home)
    parsed = [clean_turn(t, key) for t in task.turns]
    gone = forgotten_turns(conn, [k for c in parsed for k in (c.content_sha256, c.source_key) if k])
    kept = [c for c in parsed if c.content_sha256 not in gone and c.source_key not in gone]
    new, drift = plan_append(stored, kept)
    if task.partial:
        # A batch: turns stored beyond its window (shifted there by a continuation) are known.
        new = _not_stored_after(conn, task_id, later, new)
        turn_count = max(turn_count, _next_ordinal(conn, task_id))
    report.drift_ignored += drift
    if task.unfinished_turn:
        report.unfinished_turns_waiting += 1
    if not new:
        return
    # Forgotten turns leave gaps: ordinals continue after every turn ever appended.
    next_ordinal = max(len(stored), turn_count, stored[-1].ordinal + 1 if stored else 0)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO agent_turns (task_id, ordinal, native_turn_id, prompt, outcome,"
            " prompt_speaker, outcome_speaker, started_at, completed_at, native_message_ids,"
            " content_sha256, source_key, redactions, unanswered, continues_ordinal)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                [
                    task_id,
                    next_ordinal + i,
                    a.turn.native_turn_id,
                    a.turn.prompt,
                    a.turn.outcome,
                    a.turn.prompt_speaker,
                    a.turn.outcome_speaker,
                    a.turn.turn.started_at,
                    a.turn.turn.completed_at,
                    a.turn.native_message_ids,
                    a.turn.content_sha256,
                    a.turn.source_key,
                    a.turn.redactions.total,
                    a.turn.turn.unanswered,
                    a.continues_ordinal,
                ]
                for i, a in enumerate(new)
            ],
        )
    for a in new:
        report.redactions.add(a.turn.redactions)
        report.unstorable_chars_replaced += a.turn.unstorable_replaced
    report.unanswered_turns += sum(1 for a in new if a.turn.turn.unanswered)
    report.answers_to_unanswered += sum(
        1 for a in new if a.continues_ordinal is not None and not a.turn.turn.unanswered
    )
    last = new[-1].turn.turn
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


def apart_id(task: ParsedTask) -> str:
    """The key a chat import conversation is kept under when another file already holds its
    `task_id`: the id and the import file it came from."""
    where = task.native_context.get("import_file") or task.source_path
    return f"{task.native_id} @ {where}"


def _claim(
    conn: psycopg.Connection, task: ParsedTask, native_id: str, source_path: str
) -> str | None:
    """The native id this file's copy of the task is stored under, or None when it is not
    stored because another file holds the same task (both recorded as `task_conflict`).

    A task already stored from another file that still exists is a conflict; a stored file that
    is gone was moved (a Codex thread archived, an export renamed): not a conflict. A chat import
    conversation is kept apart under `apart_id` (two exports that reuse an id are two different
    conversations); a Codex or Claude Code copy (the same session id: the same session, e.g. a
    copy in both sessions/ and archived_sessions/) is not captured. The first file stored keeps
    the task, so every later run decides the same.
    """
    if task.source == "chat_import":
        apart = storable(apart_id(task))[0]
        row = conn.execute(
            "SELECT 1 FROM captured_tasks WHERE source = %s AND native_id = %s",
            [task.source, apart],
        ).fetchone()
        if row is not None:
            return apart
    row = conn.execute(
        "SELECT source_path FROM captured_tasks WHERE source = %s AND native_id = %s",
        [task.source, native_id],
    ).fetchone()
    if row is None or row[0] == source_path or not _file_exists(row[0]):
        return native_id
    other = row[0]
    if task.source == "chat_import":
        kept = f"kept apart as {apart!r}"
        record_conflict(conn, task, other, kept, apart)
        return apart
    record_conflict(conn, task, other, "this copy is not captured", None)
    return None


def _file_exists(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def record_conflict(
    conn: psycopg.Connection, task: ParsedTask, other: str, outcome: str, kept_as: str | None
) -> None:
    """Two files claim one task: a task skip `task_conflict` on the second file, naming both."""
    fix = Storable()
    this = fix.path(task.source_path)
    detail = f"task {fix.text(task.native_id)[:100]!r} of {this} is also in {other}; {outcome}"
    try:
        day: date | None = task_day(task)
    except (OverflowError, ValueError):
        day = None
    conn.execute(
        "INSERT INTO capture_skips (kind, source, native_id, path, reason, detail, ownership,"
        " evidence, partition_day) VALUES ('task', %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (kind, source, native_id, path, line, reason) DO UPDATE"
        " SET detail = EXCLUDED.detail, evidence = EXCLUDED.evidence"
        " WHERE capture_skips.detail IS DISTINCT FROM EXCLUDED.detail"
        " OR capture_skips.evidence IS DISTINCT FROM EXCLUDED.evidence",
        [
            task.source,
            skip_key(fix.text(task.native_id)),
            skip_key(this),
            TASK_CONFLICT,
            fix.text(detail)[:500],
            task.ownership.ownership,
            Jsonb({"paths": [other, this], "kept_as": kept_as}),
            day,
        ],
    )


def record_task_skip(conn: psycopg.Connection, task: ParsedTask, day: date) -> None:
    fix = Storable()
    conn.execute(
        "INSERT INTO capture_skips (kind, source, native_id, path, reason, detail, ownership,"
        " evidence, partition_day) VALUES ('task', %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (kind, source, native_id, path, line, reason) DO UPDATE"
        " SET evidence = EXCLUDED.evidence"
        " WHERE capture_skips.evidence IS DISTINCT FROM EXCLUDED.evidence",
        [
            task.source,
            skip_key(fix.text(task.native_id)),
            skip_key(fix.path(task.source_path)),
            fix.text(task.ownership.reason),
            f"{task.ownership.ownership} task",
            task.ownership.ownership,
            Jsonb(fix.json(task.ownership.evidence)),
            day,
        ],
    )


def record_exclusion(conn: psycopg.Connection, task: ParsedTask, day: date, rule: Rule) -> None:
    """A task a MEMORY_EXCLUDE rule matched: recorded with the rule, nothing of it stored."""
    fix = Storable()
    conn.execute(
        "INSERT INTO capture_skips (kind, source, native_id, path, reason, detail, ownership,"
        " evidence, partition_day) VALUES ('task', %s, %s, %s, 'excluded', %s, %s, %s, %s)"
        " ON CONFLICT (kind, source, native_id, path, line, reason) DO UPDATE"
        " SET detail = EXCLUDED.detail, evidence = EXCLUDED.evidence",
        [
            task.source,
            skip_key(fix.text(task.native_id)),
            skip_key(fix.path(task.source_path)),
            fix.text(f"MEMORY_EXCLUDE rule {rule}")[:500],
            task.ownership.ownership,
            Jsonb({"rule": fix.text(str(rule))}),
            day,
        ],
    )


def record_store_failure(conn: psycopg.Connection, task: ParsedTask, detail: str) -> None:
    """A task whose storing failed (a bug or a value the database refuses): recorded as a task
    skip `store_failed`, so the user sees it; its file is read again by a later run."""
    fix = Storable()
    try:
        day: date | None = task_day(task)
    except (OverflowError, ValueError):
        day = None
    conn.execute(
        "INSERT INTO capture_skips (kind, source, native_id, path, reason, detail, ownership,"
        " partition_day) VALUES ('task', %s, %s, %s, 'store_failed', %s, %s, %s)"
        " ON CONFLICT (kind, source, native_id, path, line, reason) DO UPDATE"
        " SET detail = EXCLUDED.detail",
        [
            task.source,
            skip_key(fix.text(task.native_id)),
            skip_key(fix.path(task.source_path)),
            fix.text(detail)[:500],
            task.ownership.ownership,
            day,
        ],
    )


def clear_store_failure(conn: psycopg.Connection, task: ParsedTask) -> None:
    """The task was stored after all (a later run): its `store_failed` skip no longer holds."""
    fix = Storable()
    conn.execute(
        "DELETE FROM capture_skips WHERE kind = 'task' AND reason = 'store_failed'"
        " AND source = %s AND native_id = %s",
        [task.source, skip_key(fix.text(task.native_id))],
    )


def record_file_issue(
    conn: psycopg.Connection, source: str, issue: ParseIssue, report: CaptureReport
) -> None:
    report.count_file_issue(issue.reason)
    if issue.reason in TRANSIENT_ISSUES:
        return
    fix = Storable()
    conn.execute(
        "INSERT INTO capture_skips (kind, source, path, line, reason, detail)"
        " VALUES ('file', %s, %s, %s, %s, %s)"
        " ON CONFLICT (kind, source, native_id, path, line, reason) DO NOTHING",
        [
            source,
            skip_key(fix.path(issue.path)),
            issue.line or 0,
            fix.text(issue.reason),
            fix.text(issue.detail[:500]),
        ],
    )


def unrecorded_file_issues(
    conn: psycopg.Connection, source: str, issues: list[ParseIssue]
) -> list[ParseIssue]:
    """The file-level issues (no line) not yet in `capture_skips`: a special file is recorded
    and reported once, not on every run or sensor look."""
    if not issues:
        return []
    keys = [skip_key(path_text(i.path)[0]) for i in issues]
    known = set(
        conn.execute(
            "SELECT path, reason FROM capture_skips WHERE kind = 'file' AND source = %s"
            " AND line = 0 AND path = ANY(%s)",
            [source, keys],
        ).fetchall()
    )
    return [i for i, key in zip(issues, keys, strict=True) if (key, i.reason) not in known]


def _title(task: ParsedTask, fix: Storable) -> TaskTitle | None:
    if task.title:
        text, _ = redact(fix.text(task.title.text))
        return task.title.model_copy(update={"text": text, "source": fix.text(task.title.source)})
    if task.turns:
        # No native name yet: the first prompt's first line stands in until one appears.
        first_line = redact(fix.text(task.turns[0].prompt))[0].strip().splitlines()
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
