"""Storage: a run's candidates, its new memories, edges, supersedes and vectors, atomically.

`save_run` writes everything of one run in one transaction, including the vectors and passages
of the new memories (embedding/store.py), so what the run accepted is searchable when it
commits (BM25's corpus statistics included), and a failure anywhere stores none of the run's
candidates. The run's own row is written apart (`start_run`, `fail_run`), so a failed run is
still listed with its error.

Conventions (README, "Agreed data conventions"): a dream memory has source_type 'dream_cycle',
the tag 'dream-cycle', metadata.dream_cycle = true, metadata.dream_run_id, metadata.cross_project
when it rests on two or more projects, and `derived_from` edges to what it rests on; it also
inherits their turn provenance (role 'supports'), so search results lead back to native turns.
A SUPERSEDE sets the older memory's status to 'superseded' with a live `superseded_by` edge to its
successor (the newer memory). An UPDATE is stored as a new dream memory that `extends` its
target (captured memories are never rewritten). `reject_memory` undoes one: the dream memory
becomes 'user_rejected', its edges expire, and what it superseded is active again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import ValidationError

from memory_pipeline.dream.models import Candidate, CandidateDraft, Verdict
from memory_pipeline.dream.precheck import PrecheckReport
from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.errors import UserError

DREAM_TAG = "dream-cycle"
VERDICT_COLUMNS = {
    "skeptic": "a",
    "user_advocate": "b",
    "epistemologist": "c",
    "methodologist": "d",
}
SYMMETRIC = {"related_to"}


# pg advisory lock key of the dream cycle ("dreamcyc" in ASCII). A cycle holds it in its session
# for as long as it runs, so a run left 'running' while nobody holds it is one whose process died.
CYCLE_LOCK = 0x647265616D637963
INTERRUPTED = (
    "interrupted: its process ended before the run finished (found and marked failed at the "
    "next start); nothing of the run was stored, the next run does its work"
)


def fail_interrupted_runs(conn: psycopg.Connection) -> list[str]:
    """Mark failed every run left 'running' by a process that died (SIGKILL, the OOM killer, a
    reboot); returns their ids. Nothing is touched while a cycle runs (it holds CYCLE_LOCK):
    its own row is rightly 'running', and that cycle fails the others when it starts. The
    caller may hold the lock itself (the cycle does, before it records its own run)."""
    got = conn.execute("SELECT pg_try_advisory_lock(%s)", (CYCLE_LOCK,)).fetchone()
    if not (got and got[0]):
        return []
    try:
        rows = conn.execute(
            "UPDATE dream_cycle_runs SET status = 'failed', completed_at = now(), error = %s"
            " WHERE status = 'running' RETURNING id::text",
            [INTERRUPTED],
        ).fetchall()
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (CYCLE_LOCK,))
    return [r[0] for r in rows]


def start_run(conn: psycopg.Connection, run_type: str, day: date, backend: str) -> str:
    row = conn.execute(
        "INSERT INTO dream_cycle_runs (run_type, status, partition_day, backend, memories_seen)"
        " VALUES (%s, 'running', %s, %s, (SELECT count(*) FROM memories"
        " WHERE source_type IS DISTINCT FROM 'dream_cycle')) RETURNING id::text",
        [run_type, day, backend],
    ).fetchone()
    assert row
    return str(row[0])


def fail_run(conn: psycopg.Connection, run_id: str, error: str) -> None:
    conn.execute(
        "UPDATE dream_cycle_runs SET status = 'failed', completed_at = now(), error = %s"
        " WHERE id = %s",
        [error[:2000], run_id],
    )


def new_memories_since_last_run(conn: psycopg.Connection) -> tuple[int, str | None]:
    """Memories (not the cycle's own) added since the last run started, and that run's id."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM memories WHERE source_type IS DISTINCT FROM 'dream_cycle')"
        " - coalesce(r.memories_seen, 0), r.id::text FROM (SELECT 1) one LEFT JOIN LATERAL ("
        " SELECT memories_seen, id FROM dream_cycle_runs ORDER BY started_at DESC LIMIT 1) r"
        " ON true"
    ).fetchone()
    assert row
    return int(row[0]), row[1]


def previous_deferral(conn: psycopg.Connection, fingerprint: str) -> tuple[str, int] | None:
    """The latest earlier row of this proposal, when it was deferred."""
    row = conn.execute(
        "SELECT id::text, final_verdict, defer_count FROM dream_cycle_candidates"
        " WHERE fingerprint = %s ORDER BY created_at DESC LIMIT 1",
        [fingerprint],
    ).fetchone()
    if row and row[1] == "DEFERRED":
        return str(row[0]), int(row[2])
    return None


def pending_deferrals(conn: psycopg.Connection) -> list[tuple[CandidateDraft, str, str]]:
    """Deferred proposals not decided since: (draft, strategy, slice reason)."""
    rows = conn.execute(
        "SELECT DISTINCT ON (fingerprint) fingerprint, final_verdict, candidate_json, strategy"
        " FROM dream_cycle_candidates WHERE fingerprint IS NOT NULL"
        " ORDER BY fingerprint, created_at DESC"
    ).fetchall()
    out = []
    for _, verdict, payload, strategy in rows:
        if verdict != "DEFERRED" or not isinstance(payload, dict):
            continue
        try:
            draft = CandidateDraft.model_validate(payload.get("draft", {}))
        except ValidationError:  # a row written by an older version: not worth a failed run
            continue
        out.append((draft, strategy or "deferred", str(payload.get("slice_reason", "deferred"))))
    return out


def _project(conn: psycopg.Connection, ids: list[str]) -> tuple[str | None, bool]:
    projects = {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT project FROM memories WHERE id = ANY(%s::uuid[])"
            " AND project IS NOT NULL",
            [ids],
        ).fetchall()
    }
    if len(projects) == 1:
        return next(iter(projects)), False
    return None, len(projects) >= 2


def _edge(conn: psycopg.Connection, source: str, target: str, kind: str, note: str) -> None:
    if source == target:
        return
    if kind in SYMMETRIC and target < source:
        source, target = target, source
    conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type, note)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (source_id, target_id, relation_type)"
        " DO UPDATE SET expired_at = NULL, note = EXCLUDED.note",
        [source, target, kind, note],
    )


def apply_candidate(
    conn: psycopg.Connection, c: Candidate, run_id: str, day: date
) -> tuple[str, bool]:
    """Create the candidate's memory and edges (and its supersede); returns (memory id,
    superseded something)."""
    d = c.draft
    project, cross = _project(conn, d.rests_on)
    cross = cross or c.cross_project
    accepts = sum(1 for v in c.verdicts.values() if v.verdict == "accept")
    metadata: dict[str, Any] = {
        "dream_cycle": True,
        "dream_run_id": run_id,
        "dream_fingerprint": c.fingerprint,
        "dream_operation": d.operation,
        "schema_operation": d.schema_operation,
        "strategy": c.strategy,
        "rests_on": d.rests_on,
        "quotes": d.quotes,
    }
    if cross:
        metadata["cross_project"] = True
    mem_class = "procedural" if c.strategy == "correction_pattern" else "semantic"
    row = conn.execute(
        "INSERT INTO memories (type, title, content, tags, source_type, metadata, confidence,"
        " mem_class, project, partition_day, depth_score, encoding_context)"
        " VALUES (%s, %s, %s, %s, 'dream_cycle', %s, %s, %s, %s, %s, %s, %s) RETURNING id::text",
        [
            d.type,
            d.title.strip(),
            d.content.strip(),
            [DREAM_TAG],
            Jsonb(metadata),
            max(0.0, min(1.0, accepts / 4)),
            mem_class,
            project,
            day,
            0.7,
            c.slice_reason,
        ],
    ).fetchone()
    assert row
    new_id = str(row[0])
    note = f"dream run {run_id}"
    # Provenance to the native turns of what it rests on, so every search hit (and the passages
    # quoted from it) still leads back to the user's own sessions.
    conn.execute(
        "INSERT INTO memory_provenance (memory_id, turn_id, segment_id, task_id, role)"
        " SELECT %s, p.turn_id, min(p.segment_id::text)::uuid, min(p.task_id::text)::uuid,"
        " 'supports' FROM memory_provenance p WHERE p.memory_id = ANY(%s::uuid[])"
        " GROUP BY p.turn_id ON CONFLICT DO NOTHING",
        [new_id, list(dict.fromkeys(d.rests_on))],
    )
    for mid in dict.fromkeys(d.rests_on):
        _edge(conn, new_id, mid, "derived_from", note)
    for e in d.edges:
        source = new_id if e.source == "new" else e.source
        target = new_id if e.target == "new" else e.target
        _edge(conn, source, target, e.relation_type, note)
    if d.operation == "UPDATE" and d.target_memory_id:
        _edge(conn, new_id, d.target_memory_id, "extends", note)
    superseded = False
    if d.operation == "SUPERSEDE" and d.target_memory_id and d.successor_id:
        done = conn.execute(
            "UPDATE memories SET status = 'superseded' WHERE id = %s AND status = 'active'",
            [d.target_memory_id],
        ).rowcount
        _edge(conn, d.target_memory_id, d.successor_id, "superseded_by", note)
        superseded = bool(done)
    return new_id, superseded


def _insert_candidate(conn: psycopg.Connection, run_id: str, c: Candidate, held: bool) -> str:
    d = c.draft
    cols: dict[str, Any] = {
        "run_id": run_id,
        "candidate_json": Jsonb(
            {
                "draft": d.model_dump(),
                "slice_reason": c.slice_reason,
                "score": c.score,
                "cross_project": c.cross_project,
            }
        ),
        "operation": d.operation,
        "target_memory_id": d.target_memory_id,
        "successor_id": d.successor_id,
        "schema_operation": d.schema_operation,
        "final_verdict": c.final,
        "deferred_twice_rejected": c.deferred_twice_rejected,
        "fingerprint": c.fingerprint,
        "strategy": c.strategy,
        "deferred_from": c.deferred_from,
        "defer_count": c.defer_count,
        "approval": "held" if held else None,
        "created_memory_id": c.created_memory_id,
        "stored_at": None,
    }
    for key, letter in VERDICT_COLUMNS.items():
        v = c.verdicts.get(key)
        cols[f"evaluator_{letter}_verdict"] = v.verdict if v else None
        cols[f"evaluator_{letter}_reasoning"] = v.reasoning if v else None
    names = ", ".join(cols)
    marks = ", ".join(["%s"] * len(cols))
    row = conn.execute(
        f"INSERT INTO dream_cycle_candidates ({names}) VALUES ({marks}) RETURNING id::text",
        list(cols.values()),
    ).fetchone()
    assert row
    cid = str(row[0])
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO dream_candidate_memories (candidate_id, memory_id) VALUES (%s, %s)"
            " ON CONFLICT DO NOTHING",
            [(cid, m) for m in dict.fromkeys(d.rests_on)],
        )
    return cid


def _store_accepted(
    conn: psycopg.Connection, c: Candidate, run_id: str, day: date
) -> tuple[bool, bool]:
    """Apply one accepted candidate whose row exists; returns (created, superseded)."""
    memory_id, superseded = apply_candidate(conn, c, run_id, day)
    c.created_memory_id = memory_id
    conn.execute(
        "UPDATE dream_cycle_candidates SET created_memory_id = %s, stored_at = now() WHERE id = %s",
        [memory_id, c.row_id],
    )
    return True, superseded


def record_corroborations(
    conn: psycopg.Connection, precheck: PrecheckReport
) -> dict[str, set[str]]:
    """Add each memory's corroborating evidence keys it does not hold yet to
    `metadata.dream_corroborated_by`, with `metadata.dream_corroborations` their number; a
    memory that gains no new key is not written. Returns the keys that were new, per memory."""
    fresh: dict[str, set[str]] = {}
    for memory_id, keys in precheck.corroborated.items():
        row = conn.execute(
            "SELECT metadata -> 'dream_corroborated_by' FROM memories WHERE id = %s FOR UPDATE",
            [memory_id],
        ).fetchone()
        if row is None:
            continue
        held = set(row[0]) if isinstance(row[0], list) else set()
        new = keys - held
        if not new:
            continue
        every = sorted(held | new)
        conn.execute(
            "UPDATE memories SET metadata = metadata || jsonb_build_object("
            "'dream_corroborated_by', %s::jsonb, 'dream_corroborations', %s::int) WHERE id = %s",
            [Jsonb(every), len(every), memory_id],
        )
        fresh[memory_id] = new
    return fresh


def embed_day(conn: psycopg.Connection, embedder: Embedder, day: date) -> None:
    embed_window(conn, embedder, day, day + timedelta(days=1))


def save_run(
    conn: psycopg.Connection,
    *,
    run_id: str,
    day: date,
    candidates: list[Candidate],
    precheck: PrecheckReport,
    feedback_json: dict[str, Any],
    feedback_text: str,
    explorer_output: dict[str, Any],
    embedder: Embedder,
    hold: bool,
    calls: int,
    tokens: int,
    digest: Callable[[], str],
    digest_path: str | None,
) -> dict[str, int]:
    """Everything of the run in one transaction; returns the run's counts."""
    counts = {"created": 0, "superseded": 0, "held": 0}
    with conn.transaction():
        for c in candidates:
            held = hold and c.final == "ACCEPTED"
            c.row_id = _insert_candidate(conn, run_id, c, held)
            if c.final == "ACCEPTED" and not held:
                created, superseded = _store_accepted(conn, c, run_id, day)
                counts["created"] += int(created)
                counts["superseded"] += int(superseded)
            counts["held"] += int(held)
        # Only evidence not recorded before: the run's record and digest say what was new.
        fresh = record_corroborations(conn, precheck)
        precheck.corroborated.clear()
        precheck.corroborated.update(fresh)
        if counts["created"]:
            embed_day(conn, embedder, day)
            # The run's memories and passages count in BM25's statistics from the moment they
            # are searchable (`run` refreshed them before the dream job; they would be stale).
            refresh_bm25_statistics(conn)
        verdicts = [c.final for c in candidates]
        conn.execute(
            "UPDATE dream_cycle_runs SET status = 'completed', completed_at = now(),"
            " explorer_output = %s, explorer_feedback_injected = %s, feedback = %s,"
            " precheck = %s, candidates_generated = %s, candidates_accepted = %s,"
            " candidates_deferred = %s, candidates_rejected = %s, memories_created = %s,"
            " memories_superseded = %s, candidates_held = %s, llm_calls = %s, llm_tokens = %s,"
            " digest_path = %s WHERE id = %s",
            [
                Jsonb(explorer_output),
                feedback_text or None,
                Jsonb(feedback_json),
                Jsonb(precheck.as_json()),
                len(candidates),
                verdicts.count("ACCEPTED"),
                verdicts.count("DEFERRED"),
                verdicts.count("REJECTED"),
                counts["created"],
                counts["superseded"],
                counts["held"],
                calls,
                tokens,
                digest_path,
                run_id,
            ],
        )
        conn.execute("UPDATE dream_cycle_runs SET digest = %s WHERE id = %s", [digest(), run_id])
    return counts


# --- review: reject and approve --------------------------------------------------------------
def _candidate_of(conn: psycopg.Connection, memory_id: str) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT c.id::text, c.created_memory_id::text, c.operation, c.target_memory_id::text,"
        " c.successor_id::text, c.restored_at, c.user_rejected_at"
        " FROM dream_cycle_candidates c WHERE c.stored_at IS NOT NULL"
        " AND (c.created_memory_id = %s OR (c.operation = 'SUPERSEDE'"
        " AND c.target_memory_id = %s))"
        " ORDER BY (c.created_memory_id = %s) DESC, c.created_at DESC LIMIT 1",
        [memory_id, memory_id, memory_id],
    ).fetchone()
    if row is None:
        raise UserError(
            f"memory {memory_id} was not made or superseded by the dream cycle; see "
            "`memory-pipeline dream list` and `dream show <run>` for what it changed"
        )
    return row


def reject_memory(conn: psycopg.Connection, memory_id: str, reason: str) -> dict[str, Any]:
    """Undo what the dream cycle did with this memory (the dream memory itself, or a memory it
    superseded): the dream memory becomes user_rejected, its edges expire, a superseded memory
    is active again. Recorded on the candidate, and fed back into later runs."""
    with conn.transaction():
        cid, created, op, target, successor, restored, rejected = _candidate_of(conn, memory_id)
        if rejected is not None:
            raise UserError(f"memory {memory_id} was already rejected; nothing to undo")
        conn.execute(
            "UPDATE dream_cycle_candidates SET user_rejected_at = now(),"
            " user_rejection_reason = %s WHERE id = %s",
            [reason, cid],
        )
        conn.execute("UPDATE memories SET status = 'user_rejected' WHERE id = %s", [created])
        conn.execute(
            "UPDATE memory_relationships SET expired_at = now() WHERE expired_at IS NULL"
            " AND (source_id = %s OR target_id = %s)",
            [created, created],
        )
        restored_ids: list[str] = []
        if op == "SUPERSEDE" and target and restored is None:
            conn.execute(
                "UPDATE memory_relationships SET expired_at = now() WHERE source_id = %s"
                " AND target_id = %s AND relation_type = 'superseded_by' AND expired_at IS NULL",
                [target, successor],
            )
            still = conn.execute(
                "SELECT 1 FROM memory_relationships WHERE source_id = %s"
                " AND relation_type = 'superseded_by' AND expired_at IS NULL",
                [target],
            ).fetchone()
            if not still:
                conn.execute(
                    "UPDATE memories SET status = 'active' WHERE id = %s AND status = 'superseded'",
                    [target],
                )
                restored_ids.append(target)
            conn.execute(
                "UPDATE dream_cycle_candidates SET restored_at = now() WHERE id = %s", [cid]
            )
    return {"candidate": cid, "rejected_memory": created, "restored": restored_ids}


def held_candidates(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT c.id::text, c.run_id::text, c.operation, c.candidate_json -> 'draft' ->> 'title',"
        " c.created_at FROM dream_cycle_candidates c WHERE c.approval = 'held'"
        " ORDER BY c.created_at"
    ).fetchall()


def approve(
    conn: psycopg.Connection, candidate_ids: Iterable[str] | None, embedder: Embedder
) -> list[tuple[str, str]]:
    """Store held candidates (all of them with None) in one transaction, embedded; returns
    (candidate id, new memory id) pairs."""
    out: list[tuple[str, str]] = []
    with conn.transaction():
        query = (
            "SELECT c.id::text, c.run_id::text, c.candidate_json, c.strategy, r.partition_day"
            " FROM dream_cycle_candidates c JOIN dream_cycle_runs r ON r.id = c.run_id"
            " WHERE c.approval = 'held'"
        )
        params: list[Any] = []
        if candidate_ids is not None:
            ids = list(candidate_ids)
            query += " AND c.id::text LIKE ANY(%s)"
            params.append([f"{i}%" for i in ids])
        rows = conn.execute(query + " ORDER BY c.created_at FOR UPDATE OF c", params).fetchall()
        days: set[date] = set()
        for cid, run_id, payload, strategy, day in rows:
            c = Candidate(
                draft=CandidateDraft.model_validate(payload["draft"]),
                strategy=strategy or "",
                slice_reason=str(payload.get("slice_reason", "")),
                score=float(payload.get("score", 0.0)),
                cross_project=bool(payload.get("cross_project", False)),
                row_id=cid,
            )
            votes = conn.execute(
                "SELECT evaluator_a_verdict, evaluator_b_verdict, evaluator_c_verdict,"
                " evaluator_d_verdict FROM dream_cycle_candidates WHERE id = %s",
                [cid],
            ).fetchone()
            c.verdicts = {
                k: Verdict(verdict=v, reasoning="")  # type: ignore[arg-type]
                for k, v in zip(VERDICT_COLUMNS, votes or (), strict=False)
                if v
            }
            day = day or date.today()
            _, superseded = _store_accepted(conn, c, run_id, day)
            conn.execute(
                "UPDATE dream_cycle_candidates SET approval = 'approved' WHERE id = %s", [cid]
            )
            conn.execute(
                "UPDATE dream_cycle_runs SET memories_created = memories_created + 1,"
                " memories_superseded = memories_superseded + %s,"
                " candidates_held = candidates_held - 1 WHERE id = %s",
                [int(superseded), run_id],
            )
            days.add(day)
            out.append((cid, str(c.created_memory_id)))
        for day in sorted(days):
            embed_day(conn, embedder, day)
        if days:
            refresh_bm25_statistics(conn)
    return out
