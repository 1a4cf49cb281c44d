"""Dagster definitions for the dream cycle: the asset, the noon schedule, the post_learn sensor.

The asset reads its run type from the run's `memory/dream_run_type` tag: the schedule sets
`scheduled`, the sensor `post_learn`; a run without it (the UI's Materialize, `memory-pipeline
run`) is `user_triggered`. `memory-pipeline dream run` runs the same plain function outside
Dagster (`user_triggered`, or `session_start` when an agent asks at the start of a session).
"""

import zoneinfo
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import psycopg

from memory_pipeline import tuning
from memory_pipeline.dream.cycle import DreamConfig, run_dream_cycle
from memory_pipeline.dream.store import new_memories_since_last_run
from memory_pipeline.embedding.keyword_index import refresh_for_asset
from memory_pipeline.entities.ollama_backend import backend_for
from memory_pipeline.entities.store import extract_window
from memory_pipeline.jobs import DREAM_JOB, IN_PROGRESS, WAITING
from memory_pipeline.partitions import daily
from memory_pipeline.relationships.judges import judge_for
from memory_pipeline.relationships.store import discover_window
from memory_pipeline.resources import DatabaseResource, EmbeddingResource, SemanticResource
from memory_pipeline.settings import Settings

RUN_TYPE_TAG = "memory/dream_run_type"


class DreamResource(dg.ConfigurableResource):
    """How the dream cycle thinks (Ollama model or offline rules) and what it may do."""

    memory_home: str
    ollama_host: str
    model: str | None = None
    timeout_s: float = 120.0
    call_budget: int = tuning.DREAM_CALL_BUDGET
    hold_for_approval: bool = False
    post_learn_memories: int = tuning.DREAM_POST_LEARN_MEMORIES

    @classmethod
    def from_settings(cls, settings: Settings) -> "DreamResource":
        return cls(
            memory_home=str(settings.memory_home),
            ollama_host=settings.ollama_host,
            model=settings.dream_model,
            timeout_s=settings.ollama_timeout_s,
            call_budget=settings.dream_call_budget,
            hold_for_approval=settings.dream_approval,
            post_learn_memories=settings.dream_post_learn_memories,
        )

    def config(self) -> DreamConfig:
        return dream_config(
            Path(self.memory_home),
            self.ollama_host,
            self.model,
            self.timeout_s,
            self.call_budget,
            self.hold_for_approval,
        )


def dream_config(
    memory_home: Path,
    host: str,
    model: str | None,
    timeout_s: float,
    budget: int,
    hold: bool,
) -> DreamConfig:
    """Ollama when a model is set and the server has it; otherwise the offline rules."""
    from memory_pipeline.dream.thinker_ollama import DreamOllama
    from memory_pipeline.ollama_chat import ollama_model_available

    client = None
    if model and ollama_model_available(host, model, timeout_s=5):
        client = DreamOllama(host, model, timeout_s, budget)
    return DreamConfig(memory_home=memory_home, hold_for_approval=hold, ollama=client)


@dg.asset(
    partitions_def=daily,
    deps=[dg.AssetKey("memory_relationships")],
    group_name="dream",
    kinds={"postgres"},
    pool="llm",
    description=(
        "The dream cycle: the Explorer's 11 strategies assemble memory slices, a deterministic "
        "precheck drops what needs no thought, the Thinker proposes CREATE / UPDATE / SUPERSEDE "
        "candidates, four evaluators vote (3 of 4 accept), and accepted candidates become "
        "'dream-cycle' memories, embedded and searchable, in one transaction per run; a "
        "SUPERSEDE retires a reversed decision. Writes a Markdown digest under "
        "MEMORY_HOME/dream/. Ollama (MEMORY_DREAM_MODEL) or offline rules. Its new memories "
        "get their entities and edges (entity and relationship discovery over the day) in the "
        "same step, so a second run "
        "finds nothing left to do."
    ),
)
def dream_cycle(
    context: dg.AssetExecutionContext,
    db: DatabaseResource,
    embedding: EmbeddingResource,
    dream: DreamResource,
    semantic: SemanticResource,
) -> dg.MaterializeResult:
    run_type = context.run.tags.get(RUN_TYPE_TAG, "user_triggered")
    day = datetime.fromisoformat(context.partition_key).date()
    with db.connection() as conn:
        report = run_dream_cycle(
            conn,
            run_type=run_type,
            day=day,
            embedder=embedding.embedder(),
            config=dream.config(),
            progress=context.log.info,
        )
        # Its new memories' entities and edges now, not in the next run's steps (idempotence).
        end = day + timedelta(days=1)
        host, model, timeout_s = semantic.ollama_host, semantic.model, semantic.timeout_s
        extract_window(conn, day, end, backend_for(host, model, timeout_s), context.log.info)
        judge = judge_for(host, model, timeout_s)
        linked = discover_window(conn, judge, day, end, context.log.info)
        keywords = refresh_for_asset(conn, context.log)  # its new memories' passages
    return dg.MaterializeResult(
        metadata={
            **keywords,
            "run_type": run_type,
            "backend": report.backend,
            "dream_run_id": report.run_id,
            "slices": report.slices,
            "precheck_removed": report.precheck_removed,
            "corroborated": report.corroborated,
            "feedback_injected": report.feedback_items,
            "candidates": report.candidates,
            "accepted": report.accepted,
            "deferred": report.deferred,
            "rejected": report.rejected,
            "memories_created": report.created,
            "memories_superseded": report.superseded,
            "held_for_approval": report.held,
            "llm_calls": report.calls,
            "llm_tokens": report.tokens,
            "model_failures": len(report.errors),
            "interrupted_runs_failed": len(report.interrupted_runs),
            # The digest quotes memories: it stays in MEMORY_HOME/dream/ and dream_cycle_runs,
            # where `forget` reaches it, never in Dagster's event log (counts and ids only).
            "digest_path": report.digest_path or "",
            "relationships_scanned": linked.scanned,
            "relationship_edges_added": sum(linked.added.values()),
        }
    )


def _zone(name: str) -> str:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return name


def noon_schedule(timezone: str) -> dg.ScheduleDefinition:
    zone = _zone(timezone)

    @dg.schedule(
        name="daily_dream",
        cron_schedule="0 12 * * *",
        job_name=DREAM_JOB,
        execution_timezone=zone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"The daily dream cycle at 12:00 {zone} (MEMORY_TIMEZONE).",
    )
    def daily_dream(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        when = context.scheduled_execution_time.astimezone(UTC)
        return dg.RunRequest(
            run_key=f"dream:{when.isoformat()}",
            partition_key=when.date().isoformat(),
            tags={RUN_TYPE_TAG: "scheduled"},
        )

    return daily_dream


def post_learn_request(
    conn: psycopg.Connection, instance: dg.DagsterInstance, threshold: int, now: datetime
) -> dg.RunRequest | str:
    """A post_learn run once `threshold` memories arrived since the last run, or why not."""
    new, last_run = new_memories_since_last_run(conn)
    if new < threshold:
        return f"{new} new memories since the last dream run; waiting for {threshold}"
    busy = instance.get_runs(
        filters=dg.RunsFilter(job_name=DREAM_JOB, statuses=[*WAITING, *IN_PROGRESS]), limit=1
    )
    if busy:
        return "a dream run is already queued or running"
    return dg.RunRequest(
        run_key=f"post_learn:{last_run or 'first'}",
        partition_key=now.astimezone(UTC).date().isoformat(),
        tags={RUN_TYPE_TAG: "post_learn"},
    )


@dg.sensor(
    job_name=DREAM_JOB,
    minimum_interval_seconds=tuning.DREAM_SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Starts a post_learn dream run once MEMORY_DREAM_POST_LEARN new memories arrived since "
        "the last dream run (of any type)."
    ),
)
def post_learn_sensor(
    context: dg.SensorEvaluationContext, db: DatabaseResource, dream: DreamResource
) -> dg.RunRequest | dg.SkipReason:
    with db.connection() as conn:
        outcome = post_learn_request(
            conn, context.instance, dream.post_learn_memories, datetime.now(UTC)
        )
    return dg.SkipReason(outcome) if isinstance(outcome, str) else outcome


def build_defs(settings: Settings) -> dg.Definitions:
    return dg.Definitions(
        assets=[dream_cycle],
        schedules=[noon_schedule(settings.dream_timezone)],
        sensors=[post_learn_sensor],
    )
