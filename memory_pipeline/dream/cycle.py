"""One dream run, step by step: feedback -> Explorer -> precheck -> Thinker -> precheck ->
Consensus Panel -> Storage (one transaction) -> digest file.

A plain function over a connection, so the asset, the CLI (`dream run`) and tests share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import psycopg

from memory_pipeline.dream import feedback as feedback_step
from memory_pipeline.dream import precheck as precheck_step
from memory_pipeline.dream.digest import digest_path, render
from memory_pipeline.dream.explorer import explore
from memory_pipeline.dream.models import RUN_TYPES, Candidate
from memory_pipeline.dream.panel import OfflinePanel, OllamaPanel, tally
from memory_pipeline.dream.store import (
    CYCLE_LOCK,
    fail_interrupted_runs,
    fail_run,
    pending_deferrals,
    previous_deferral,
    save_run,
    start_run,
)
from memory_pipeline.dream.thinker_offline import OfflineThinker
from memory_pipeline.dream.thinker_ollama import DreamOllama, OllamaThinker
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.errors import UserError


@dataclass
class DreamConfig:
    memory_home: Path
    hold_for_approval: bool = False
    ollama: DreamOllama | None = None  # None: offline rules


@dataclass
class DreamReport:
    run_id: str
    run_type: str
    backend: str
    slices: int = 0
    strategy_counts: dict[str, int] = field(default_factory=dict)
    precheck_removed: int = 0
    corroborated: int = 0
    feedback_items: int = 0
    candidates: int = 0
    accepted: int = 0
    deferred: int = 0
    rejected: int = 0
    created: int = 0
    superseded: int = 0
    held: int = 0
    calls: int = 0
    tokens: int = 0
    digest: str = ""
    digest_path: str | None = None
    errors: list[str] = field(default_factory=list)
    interrupted_runs: list[str] = field(default_factory=list)  # earlier runs found dead, failed

    def line(self) -> str:
        return (
            f"dream cycle ({self.run_type}, {self.backend}): {self.slices} slices, "
            f"{self.candidates} candidates, {self.accepted} accepted, {self.deferred} deferred, "
            f"{self.rejected} rejected; {self.created} new memories, {self.superseded} "
            f"superseded" + (f", {self.held} held for approval" if self.held else "")
        )


def run_dream_cycle(
    conn: psycopg.Connection,
    *,
    run_type: str,
    day: date,
    embedder: Embedder,
    config: DreamConfig,
    progress: Callable[[str], None] = lambda _: None,
) -> DreamReport:
    if run_type not in RUN_TYPES:
        raise UserError(f"unknown dream run type {run_type!r}; use one of {', '.join(RUN_TYPES)}")
    if config.ollama is not None:
        thinker: OfflineThinker | OllamaThinker = OllamaThinker(config.ollama)
        panel: OfflinePanel | OllamaPanel = OllamaPanel(conn, config.ollama)
    else:
        thinker, panel = OfflineThinker(), OfflinePanel(conn)
    backend = thinker.name
    # One cycle at a time, whoever starts it (schedule, sensor, CLI): two at once would propose
    # and store the same candidates twice.
    if not conn.execute("SELECT pg_try_advisory_lock(%s)", (CYCLE_LOCK,)).fetchone()[0]:
        raise UserError(
            "another dream cycle is running on this database; wait for it to finish "
            "(`memory-pipeline dream list` shows it) and run this one again"
        )
    try:
        # Runs left 'running' by a process that died: no cycle but this one runs now.
        interrupted = fail_interrupted_runs(conn)
        for dead in interrupted:
            progress(
                f"dream run {dead[:8]} was left running by a process that ended: marked failed"
            )
        run_id = start_run(conn, run_type, day, backend)
        report = DreamReport(
            run_id=run_id, run_type=run_type, backend=backend, interrupted_runs=interrupted
        )
        try:
            _run(conn, report, day, embedder, config, thinker, panel, progress)
        except BaseException as exc:
            fail_run(conn, run_id, f"{type(exc).__name__}: {exc}")
            raise
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (CYCLE_LOCK,))
    return report


def _run(
    conn: psycopg.Connection,
    report: DreamReport,
    day: date,
    embedder: Embedder,
    config: DreamConfig,
    thinker: OfflineThinker | OllamaThinker,
    panel: OfflinePanel | OllamaPanel,
    progress: Callable[[str], None],
) -> None:
    fb = feedback_step.gather(conn)
    report.feedback_items = len(fb.items)
    found, report.strategy_counts = explore(conn, progress=progress)
    checks = precheck_step.PrecheckReport()
    kept = precheck_step.slices(conn, found, checks)
    report.slices = len(kept)

    proposed: list[Candidate] = []
    for s in kept:
        if config.ollama is not None and config.ollama.left <= 0:
            checks.removed["slice_over_call_budget"] += 1
            continue
        proposed.extend(thinker.think(conn, s, fb))
    # Deferred proposals of earlier runs come back for another vote.
    for draft, strategy, reason in pending_deferrals(conn):
        proposed.append(Candidate(draft=draft, strategy=strategy, slice_reason=reason))
    candidates = precheck_step.candidates(conn, proposed, fb, checks)
    if isinstance(thinker, OllamaThinker):
        report.errors.extend(thinker.errors)

    for c in candidates:
        c.verdicts = panel.evaluate(c)
        earlier = previous_deferral(conn, c.fingerprint)
        if earlier:
            c.deferred_from = earlier[0]
        votes = [v.verdict for v in c.verdicts.values()]
        c.final, c.defer_count, c.deferred_twice_rejected = tally(
            votes, earlier[1] if earlier else 0
        )
    report.candidates = len(candidates)
    report.accepted = sum(c.final == "ACCEPTED" for c in candidates)
    report.deferred = sum(c.final == "DEFERRED" for c in candidates)
    report.rejected = sum(c.final == "REJECTED" for c in candidates)
    report.precheck_removed = sum(checks.removed.values())
    if config.ollama is not None:
        report.calls, report.tokens = config.ollama.calls, config.ollama.tokens
    path = digest_path(config.memory_home, day, report.run_id)

    def digest() -> str:
        report.digest = render(
            conn,
            run_id=report.run_id,
            run_type=report.run_type,
            backend=report.backend,
            day=day,
            slices=report.slices,
            strategy_counts=report.strategy_counts,
            precheck=checks,
            candidates=candidates,
            feedback_items=report.feedback_items,
            hold=config.hold_for_approval,
            calls=report.calls,
            tokens=report.tokens,
        )
        return report.digest

    counts = save_run(
        conn,
        run_id=report.run_id,
        day=day,
        candidates=candidates,
        precheck=checks,
        feedback_json=fb.as_json(),
        feedback_text=fb.text(),
        explorer_output={
            "strategies": report.strategy_counts,
            "slices": [
                {"strategy": s.strategy, "reason": s.reason, "memories": list(s.memory_ids)}
                for s in kept
            ],
        },
        embedder=embedder,
        hold=config.hold_for_approval,
        calls=report.calls,
        tokens=report.tokens,
        digest=digest,
        digest_path=str(path),
    )
    report.corroborated = checks.corroborations  # new evidence only (save_run kept those)
    report.created, report.superseded, report.held = (
        counts["created"],
        counts["superseded"],
        counts["held"],
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.digest, encoding="utf-8")
    report.digest_path = str(path)
    progress(report.line())
