"""One forget, in one transaction, as the pipeline's role (the only writer).

Order inside the transaction: seed the selection, grow it to its closure (cascade.py), list what
will go (and the evidence of forgotten memories that stays), write the audit entry and the
tombstones, delete with the cascade, drop the forgotten tasks' capture skips, scrub dream
digests that quoted them (digests.py), refresh the BM25 statistics (their lexemes would
otherwise outlive the text), fill in the audit counts. A dry run does all of it and rolls back,
so the counts it prints are exact and nothing changes. A failure anywhere rolls everything back.

After the commit: the digest files go, the keyword index is rebuilt, and wipe.py rewrites the
touched tables so the deleted rows' bytes and statistics are gone from the server's files.
"""

from __future__ import annotations

import psycopg
from pydantic import BaseModel, Field

from memory_pipeline.embedding.bm25_stats import refresh_bm25_statistics
from memory_pipeline.embedding.keyword_index import rebuild_keyword_index
from memory_pipeline.entities.store import prune_orphans
from memory_pipeline.forget import audit, cascade, digests, tombstones, wipe
from memory_pipeline.forget.select import Evidence, Selector, remaining_evidence, seed
from memory_pipeline.forget.wipe import WipeReport
from memory_pipeline.settings import Settings


class ForgottenMemory(BaseModel):
    id: str
    type: str
    title: str
    private: bool


class ForgottenTask(BaseModel):
    source: str
    native_id: str
    title: str | None
    captured: bool = True


class ForgottenTurn(BaseModel):
    id: str
    task: str  # SOURCE:NATIVE_ID
    ordinal: int


class ForgetReport(BaseModel):
    dry_run: bool
    audit_id: str | None = None
    memories: list[ForgottenMemory] = Field(default_factory=list)
    tasks: list[ForgottenTask] = Field(default_factory=list)
    turns: int = 0
    turn_list: list[ForgottenTurn] = Field(default_factory=list)
    # Evidence of the forgotten memories that stays (forget it too with `--with-evidence`).
    evidence: Evidence = Field(default_factory=Evidence)
    counts: dict[str, int] = Field(default_factory=dict)
    missing_ids: list[str] = Field(default_factory=list)
    tombstoned_tasks: int = 0
    tombstoned_turns: int = 0
    digest_files_removed: int = 0
    wiped: WipeReport | None = None

    @property
    def nothing(self) -> bool:
        return not (self.memories or self.tasks or self.turns)


def forget(
    conn: psycopg.Connection,
    selector: Selector,
    *,
    dry_run: bool = False,
    audit_key: bytes | None = None,
) -> ForgetReport:
    """Forget what the selector names and everything resting only on it (see cascade.py).

    `audit_key` keys the query's hash in the audit (default: the home's, audit.audit_key). The
    wipe after the commit needs an autocommit connection; on another it is left out
    (report.wiped is None)."""
    home = Settings.from_env().memory_home
    key = audit_key if audit_key is not None else audit.audit_key(home)
    report = ForgetReport(dry_run=dry_run)
    with conn.transaction() as tx:
        cascade.create_sets(conn)
        report.missing_ids = seed(conn, selector)
        # A capture storing one of these tasks right now finishes first, so its turns are seen.
        conn.execute(
            "SELECT 1 FROM captured_tasks WHERE id IN (SELECT id FROM forget_k) FOR UPDATE"
        ).fetchall()
        closure = cascade.close(conn)
        report.turns = closure.turns
        report.turn_list = [
            ForgottenTurn(id=str(r[0]), task=r[1], ordinal=r[2])
            for r in conn.execute(
                "SELECT t.id, k.source || ':' || k.native_id, t.ordinal FROM agent_turns t"
                " JOIN captured_tasks k ON k.id = t.task_id"
                " WHERE t.id IN (SELECT id FROM forget_t) ORDER BY k.started_at, k.id, t.ordinal"
            )
        ]
        report.evidence = remaining_evidence(conn)
        report.memories = [
            ForgottenMemory(id=str(r[0]), type=r[1], title=r[2], private=r[3])
            for r in conn.execute(
                "SELECT id, type, title, private FROM memories"
                " WHERE id IN (SELECT id FROM forget_m) ORDER BY created_at, id"
            )
        ]
        report.tasks = [
            ForgottenTask(source=r[0], native_id=r[1], title=r[2])
            for r in conn.execute(
                "SELECT source, native_id, title FROM captured_tasks"
                " WHERE id IN (SELECT id FROM forget_k) ORDER BY started_at, id"
            )
        ]
        captured = {(t.source, t.native_id) for t in report.tasks}
        report.tasks += [
            ForgottenTask(source=s, native_id=n, title=None, captured=False)
            for s, n in dict.fromkeys(selector.tasks)
            if (s, n) not in captured
        ]
        task_keys = [(t.source, t.native_id) for t in report.tasks]

        audit_id = audit.open_entry(conn, selector.audit(key))
        report.tombstoned_tasks, report.tombstoned_turns = tombstones.bury(
            conn, audit_id, task_keys, closure.turn_hashes
        )
        dream_runs = digests.touched_runs(conn)
        counts = cascade.delete(conn)
        if scrubbed := digests.scrub(conn, dream_runs):
            counts["dream_cycle_runs.digest"] = scrubbed
        # A node whose last mention went is forgotten with it (its names and identifiers came
        # from the forgotten text); one still mentioned by a turn or memory that stays is kept.
        if pruned := prune_orphans(conn):
            counts["entities (no mention left)"] = pruned
        if task_keys:
            skips = conn.execute(
                "DELETE FROM capture_skips WHERE kind = 'task'"
                " AND (source, native_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                [[s for s, _ in task_keys], [n for _, n in task_keys]],
            ).rowcount
            if skips:
                counts["capture_skips"] = skips
        refresh_bm25_statistics(conn)
        audit.close_entry(
            conn, audit_id, counts, len(report.memories), closure.turns, closure.tasks
        )
        report.counts = dict(sorted(counts.items()))
        touched = wipe.touched_tables(conn, counts)
        if dry_run:
            raise psycopg.Rollback(tx)
        report.audit_id = audit_id
    if not dry_run:  # committed: the digest files may go
        report.digest_files_removed = digests.remove_files(dream_runs)
        # and the forgotten passages' lexemes leave the keyword index's files (a full rebuild
        # into a new directory, the old one deleted: tantivy keeps deleted documents in its
        # segments until they are merged).
        rebuild_keyword_index(conn, home)
        if conn.autocommit:
            report.wiped = wipe.wipe(conn, touched)
    return report
