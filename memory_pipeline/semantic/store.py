"""Reading a task revision for the semantic pass, and storing one pass atomically.

`store_pass` writes everything a pass produced (segments, their memories, distilled memories,
correction episodes, provenance, diagnostics) and moves the task's Semantic Processing Cursor,
all in the caller's single transaction: any failure stores nothing and leaves the cursor where
it was, so the next run retries the whole unprocessed tail.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.semantic import classify
from memory_pipeline.semantic.models import PassInput, PassResult, Segment, TurnInput
from memory_pipeline.tuning import SEGMENT_CONTENT_MAX_CHARS


@dataclass(frozen=True)
class TaskRevision:
    """A captured task whose cursor is behind its last turn."""

    id: UUID
    source: str
    native_id: str
    title: str | None
    partition_day: date
    cursor: int  # last processed ordinal, -1 when none


@dataclass(frozen=True)
class StoredTurnRow:
    id: UUID
    ordinal: int
    prompt: str
    outcome: str
    prompt_speaker: str | None
    outcome_speaker: str | None
    started_at: datetime | None
    completed_at: datetime | None


@dataclass(frozen=True)
class PassContext:
    """What the pass sees, plus what storage needs to link results back to turns."""

    task: TaskRevision
    pass_input: PassInput
    turns: dict[int, StoredTurnRow]  # tail and new turns by ordinal
    tail_segment_id: UUID | None
    tail_memory_id: UUID | None
    tail_first_ordinal: int | None


def pending_revisions(
    conn: psycopg.Connection, start: date, end: date, quiet_before: datetime
) -> tuple[list[TaskRevision], int]:
    """Tasks of the window whose cursor is behind and that have been quiet since `quiet_before`.

    Returns them and how many more are behind but still active (they wait for a later run).
    """
    rows = conn.execute(
        "SELECT t.id, t.source, t.native_id, t.title, t.partition_day,"
        " coalesce(c.last_ordinal, -1), t.last_turn_appended_at <= %s"
        " FROM captured_tasks t LEFT JOIN semantic_cursors c ON c.task_id = t.id"
        " WHERE t.partition_day >= %s AND t.partition_day < %s"
        " AND coalesce(c.last_ordinal, -1) < t.turn_count - 1"
        " ORDER BY t.started_at, t.id",
        [quiet_before, start, end],
    ).fetchall()
    ready = [TaskRevision(*r[:6]) for r in rows if r[6]]
    return ready, len(rows) - len(ready)


def days_with_pending_passes(conn: psycopg.Connection) -> set[date]:
    """Partition days holding a task whose cursor is behind its last turn."""
    rows = conn.execute(
        "SELECT DISTINCT t.partition_day FROM captured_tasks t"
        " LEFT JOIN semantic_cursors c ON c.task_id = t.id"
        " WHERE coalesce(c.last_ordinal, -1) < t.turn_count - 1"
    ).fetchall()
    return {r[0] for r in rows}


def ready_revisions(
    conn: psycopg.Connection, quiet_before: datetime
) -> list[tuple[date, UUID, int]]:
    """(partition day, task id, turn count) of every task a pass would process now: cursor
    behind and quiet since `quiet_before`, the rule of `pending_revisions` over all days. The
    semantic pass sensor requests their days as soon as the quiet period has elapsed."""
    rows = conn.execute(
        "SELECT t.partition_day, t.id, t.turn_count FROM captured_tasks t"
        " LEFT JOIN semantic_cursors c ON c.task_id = t.id"
        " WHERE coalesce(c.last_ordinal, -1) < t.turn_count - 1"
        " AND t.last_turn_appended_at <= %s ORDER BY t.partition_day, t.id",
        [quiet_before],
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def claim(conn: psycopg.Connection, task: TaskRevision) -> bool:
    """Lock the task for storing a pass, if its cursor is still where the pass started.

    Two runs over the same partition at once (a backfill overlapping the sensor) may both compute
    a pass; the first to store wins, the second finds the cursor moved and stores nothing.
    """
    if conn.execute("SELECT 1 FROM captured_tasks WHERE id = %s FOR UPDATE", [task.id]).fetchone():
        # A separate statement, so it reads what a run that held the lock before us committed.
        row = conn.execute(
            "SELECT last_ordinal FROM semantic_cursors WHERE task_id = %s", [task.id]
        ).fetchone()
        return (row[0] if row else -1) == task.cursor
    return False


def load_context(conn: psycopg.Connection, task: TaskRevision) -> PassContext:
    """The prior tail segment's turns (context only) plus the turns after the cursor."""
    tail = conn.execute(
        "SELECT id, memory_id, first_ordinal, last_ordinal FROM topic_segments"
        " WHERE task_id = %s ORDER BY first_ordinal DESC LIMIT 1",
        [task.id],
    ).fetchone()
    first = tail[2] if tail else task.cursor + 1
    rows = conn.execute(
        "SELECT id, ordinal, prompt, outcome, prompt_speaker, outcome_speaker, started_at,"
        " completed_at FROM agent_turns WHERE task_id = %s AND ordinal >= %s ORDER BY ordinal",
        [task.id, first],
    ).fetchall()
    turns = {r[1]: StoredTurnRow(*r) for r in rows}

    def as_input(t: StoredTurnRow) -> TurnInput:
        return TurnInput(
            ordinal=t.ordinal,
            prompt=t.prompt,
            outcome=t.outcome,
            started_at=t.started_at,
            prompt_speaker=t.prompt_speaker,
            outcome_speaker=t.outcome_speaker,
        )

    rule = conn.execute(
        "SELECT native_context ->> 'turn_rule' FROM captured_tasks WHERE id = %s", [task.id]
    ).fetchone()
    pass_input = PassInput(
        task_title=task.title,
        source=task.source,
        between_people=bool(rule and rule[0] == "speakers"),
        tail_context=[as_input(t) for o, t in turns.items() if o <= task.cursor],
        new_turns=[as_input(t) for o, t in turns.items() if o > task.cursor],
    )
    return PassContext(
        task=task,
        pass_input=pass_input,
        turns=turns,
        tail_segment_id=tail[0] if tail else None,
        tail_memory_id=tail[1] if tail else None,
        tail_first_ordinal=tail[2] if tail else None,
    )


def render_turns(turns: list[StoredTurnRow]) -> str:
    """A segment memory's content: the turns as a readable exchange."""
    parts = [
        f"{t.prompt_speaker or 'User'}: {t.prompt}\n{t.outcome_speaker or 'Agent'}: {t.outcome}"
        for t in turns
    ]
    text = "\n\n".join(parts)
    return text if len(text) <= SEGMENT_CONTENT_MAX_CHARS else text[:SEGMENT_CONTENT_MAX_CHARS]


def store_pass(
    conn: psycopg.Connection,
    ctx: PassContext,
    result: PassResult,
    backend: str,
    duration_ms: int,
) -> dict[str, int]:
    """Write one validated pass. Call inside a transaction; returns memory counts by type."""
    counts = {"segment": 0, "decision": 0, "insight": 0, "correction_episode": 0}
    segment_ids: list[tuple[Segment, UUID]] = []
    for seg in result.segments:
        if seg.continues_tail:
            segment_id = _extend_tail(conn, ctx, seg)
        else:
            segment_id = _new_segment(conn, ctx, seg)
            counts["segment"] += 1
        segment_ids.append((seg, segment_id))
        for mem in seg.memories:
            text = f"{mem.title}. {mem.content}"
            memory_id = _insert_memory(
                conn,
                ctx,
                type_=mem.type,
                title=mem.title,
                content=mem.content,
                project=seg.project,
                segment_title=seg.title,
                classify_text=text,
                happened_at=_time_of(ctx, max(mem.supporting_ordinals)),
                metadata={"questions": mem.questions} if mem.questions else {},
                tags=[],
            )
            _link(conn, ctx, memory_id, segment_id, mem.supporting_ordinals, "supports")
            counts[mem.type] += 1

    for corr in result.corrections:
        segment_id = next(
            sid
            for seg, sid in segment_ids
            if seg.first_ordinal <= corr.correcting_ordinal <= seg.last_ordinal
        )
        seg = next(s for s, sid in segment_ids if sid == segment_id)
        content = f"Agent did: {corr.agent_did}\nUser expected instead: {corr.user_expected}"
        memory_id = _insert_memory(
            conn,
            ctx,
            type_="correction_episode",
            title=corr.title,
            content=content,
            project=seg.project,
            segment_title=seg.title,
            classify_text=content,
            happened_at=_time_of(ctx, corr.correcting_ordinal),
            # Evidence of what the user wanted, never a rule to steer by: steering context and
            # Express delivery exclude this type.
            metadata={"attributed_to": "user", "steering_rule": False},
            tags=["correction"],
        )
        _link(conn, ctx, memory_id, segment_id, [corr.corrected_ordinal], "corrected")
        _link(conn, ctx, memory_id, segment_id, [corr.correcting_ordinal], "correcting")
        counts["correction_episode"] += 1

    last = ctx.pass_input.new_turns[-1].ordinal
    conn.execute(
        "INSERT INTO semantic_cursors (task_id, last_ordinal) VALUES (%s, %s)"
        " ON CONFLICT (task_id) DO UPDATE SET last_ordinal = EXCLUDED.last_ordinal,"
        " updated_at = now()",
        [ctx.task.id, last],
    )
    conn.execute(
        "INSERT INTO semantic_pass_runs (task_id, backend, first_ordinal, last_ordinal,"
        " input_sha256, output_sha256, duration_ms, memory_counts)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        [
            ctx.task.id,
            backend,
            ctx.pass_input.new_turns[0].ordinal,
            last,
            _sha(ctx.pass_input.model_dump_json()),
            _sha(result.model_dump_json()),
            duration_ms,
            Jsonb(counts),
        ],
    )
    return counts


def _new_segment(conn: psycopg.Connection, ctx: PassContext, seg: Segment) -> UUID:
    turns = [ctx.turns[o] for o in range(seg.first_ordinal, seg.last_ordinal + 1)]
    content = render_turns(turns)
    memory_id = _insert_memory(
        conn,
        ctx,
        type_="segment",
        title=seg.title,
        content=content,
        project=seg.project,
        segment_title=seg.title,
        classify_text=content,
        happened_at=_time_of(ctx, seg.last_ordinal),
        metadata={"task_title": ctx.task.title} if ctx.task.title else {},
        tags=[],
    )
    segment_id = conn.execute(
        "INSERT INTO topic_segments (task_id, first_ordinal, last_ordinal, title, memory_id)"
        " VALUES (%s, %s, %s, %s, %s) RETURNING id",
        [ctx.task.id, seg.first_ordinal, seg.last_ordinal, seg.title, memory_id],
    ).fetchone()[0]  # type: ignore[index]
    _link(conn, ctx, memory_id, segment_id, [t.ordinal for t in turns], "segment")
    return segment_id


def _extend_tail(conn: psycopg.Connection, ctx: PassContext, seg: Segment) -> UUID:
    """The new turns continue the prior tail segment: grow it and its memory."""
    assert ctx.tail_segment_id and ctx.tail_memory_id and ctx.tail_first_ordinal is not None
    turns = [ctx.turns[o] for o in range(ctx.tail_first_ordinal, seg.last_ordinal + 1)]
    conn.execute(
        "UPDATE topic_segments SET last_ordinal = %s, updated_at = now() WHERE id = %s",
        [seg.last_ordinal, ctx.tail_segment_id],
    )
    conn.execute(
        "UPDATE memories SET content = %s, depth_score = %s WHERE id = %s",
        [
            render_turns(turns),
            classify.depth_score("segment", render_turns(turns)),
            ctx.tail_memory_id,
        ],
    )
    new = [t.ordinal for t in turns if t.ordinal > ctx.task.cursor]
    _link(conn, ctx, ctx.tail_memory_id, ctx.tail_segment_id, new, "segment")
    return ctx.tail_segment_id


def _insert_memory(
    conn: psycopg.Connection,
    ctx: PassContext,
    *,
    type_: str,
    title: str,
    content: str,
    project: str | None,
    segment_title: str,
    classify_text: str,
    happened_at: datetime,
    metadata: dict[str, object],
    tags: list[str],
) -> UUID:
    row = conn.execute(
        "INSERT INTO memories (type, title, content, tags, source_type, metadata, mem_class,"
        " project, encoding_context, depth_score, partition_day, created_at, updated_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        [
            type_,
            title,
            content,
            tags,
            ctx.task.source,
            Jsonb(metadata),
            classify.mem_class(type_, classify_text),
            project,
            classify.encoding_context(ctx.task.source, ctx.task.title, segment_title, project),
            classify.depth_score(type_, classify_text),
            ctx.task.partition_day,
            happened_at,
            happened_at,
        ],
    ).fetchone()
    return row[0]  # type: ignore[index]


def _link(
    conn: psycopg.Connection,
    ctx: PassContext,
    memory_id: UUID,
    segment_id: UUID,
    ordinals: list[int],
    role: str,
) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [[memory_id, ctx.turns[o].id, segment_id, ctx.task.id, role] for o in ordinals],
        )


def _time_of(ctx: PassContext, ordinal: int) -> datetime:
    """When the turn happened in the source: memories are dated by their evidence, not by us."""
    t = ctx.turns[ordinal]
    when = t.completed_at or t.started_at
    if when is None:
        return datetime.combine(ctx.task.partition_day, time(), tzinfo=UTC)
    return when


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
