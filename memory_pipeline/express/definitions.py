"""Dagster definitions for Express: the daily briefing, then its gated e-mail push.

Two steps on purpose: the briefing is stored by the first, so a broken SMTP server fails only the
push step and the stored briefing stays (the next run pushes it).
"""

from datetime import date

import dagster as dg

from memory_pipeline.errors import UserError
from memory_pipeline.express.briefing import make_briefing
from memory_pipeline.express.push import push_briefing
from memory_pipeline.express.resource import ExpressResource
from memory_pipeline.partitions import daily
from memory_pipeline.resources import DatabaseResource

# The briefing tells what the day's dream cycle found, so it runs after it (in `dream_job`).
BRIEFING_UPSTREAM = [dg.AssetKey("dream_cycle")]


@dg.asset(
    partitions_def=daily,
    deps=BRIEFING_UPSTREAM,
    group_name="express",
    kinds={"postgres"},
    description=(
        "The day's briefing: new dream-cycle syntheses (cross-project ones flagged), new "
        "contradictions and superseded memories, deep memories unread for long, the weekly "
        "digest and open questions; muted kinds and topics left out, ranked and headlined "
        "(Ollama editor or the offline one), stored in `briefings`. Composing a day again "
        "replaces it when anything changed, else keeps it row for row (item ids too). Never "
        "includes correction episodes."
    ),
)
def briefing(
    context: dg.AssetExecutionContext, db: DatabaseResource, express: ExpressResource
) -> dg.MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    try:
        with db.connection() as conn:
            report = make_briefing(
                conn, day, editor=express.editor(), digest_weekday=express.digest_weekday
            )
    except UserError as exc:
        raise dg.Failure(description=str(exc)) from None
    if report.editor_note:
        context.log.warning(f"briefing edited offline: {report.editor_note}")
    filtered = [f"{f.kind} / {f.topic} ({f.rule})" for f in report.filtered]
    return dg.MaterializeResult(
        metadata={
            "items": report.items,
            "candidates": report.candidates,
            "filtered_by_feedback": len(report.filtered),
            "filtered": dg.MetadataValue.json(filtered),
            "by_kind": dg.MetadataValue.json(report.by_kind),
            "editor": report.editor,
            "window_from": report.window[0].isoformat(),
            "window_to": report.window[1].isoformat(),
        }
    )


@dg.asset(
    partitions_def=daily,
    deps=[briefing],
    group_name="express",
    kinds={"email"},
    description=(
        "E-mails the day's briefing over SMTP (MEMORY_SMTP_*) only when it has a new "
        "cross-project synthesis or a new contradiction, with only the items never pushed "
        "before; every attempt is logged in `express_pushes`. No push is configured by default."
    ),
)
def briefing_push(
    context: dg.AssetExecutionContext, db: DatabaseResource, express: ExpressResource
) -> dg.MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    try:
        with db.connection() as conn:
            outcome = push_briefing(conn, express.smtp(), day, express.memory_url)
    except UserError as exc:  # PushError included: the briefing stays stored
        raise dg.Failure(description=str(exc)) from None
    return dg.MaterializeResult(
        metadata={"pushed": outcome.sent, "reason": outcome.reason, "items_sent": outcome.items}
    )


defs = dg.Definitions(assets=[briefing, briefing_push])
