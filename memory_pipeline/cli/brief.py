"""`memory-pipeline brief`: the latest briefing, composing one now, and feedback on items.

Feedback changes what later briefings deliver (mutes filter, ratings re-rank), never what the
pipeline synthesizes. It is written as the owner role: it is the user's own instruction.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated

import typer

from memory_pipeline.cli.app import app, say
from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

FORMATS = ("markdown", "plain", "html")


def _day(value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UserError(f"--day {value!r} is not a date; write it as YYYY-MM-DD") from None


@app.command("brief")
def brief(
    compose: Annotated[
        bool, typer.Option("--compose", help="Compose today's briefing now, then print it.")
    ] = False,
    useful: Annotated[
        int | None, typer.Option("--useful", metavar="ID", help="Rate item ID useful.")
    ] = None,
    less: Annotated[
        int | None, typer.Option("--less", metavar="ID", help="Show less like item ID.")
    ] = None,
    mute: Annotated[
        str | None,
        typer.Option("--mute", metavar="TOPIC|KIND", help="Leave a topic or kind out."),
    ] = None,
    unmute: Annotated[
        str | None,
        typer.Option("--unmute", metavar="TOPIC|KIND", help="Deliver a muted topic or kind."),
    ] = None,
    push: Annotated[
        bool, typer.Option("--push", help="E-mail the briefing now if it has news worth it.")
    ] = False,
    day: Annotated[
        str | None, typer.Option("--day", help="The briefing of this day (YYYY-MM-DD).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="markdown, plain or html.")] = "markdown",
) -> None:
    """Print the latest briefing; compose one, push it, or tell it what you want more or less of."""
    from memory_pipeline.db import connect, ensure_ready
    from memory_pipeline.express import feedback, render
    from memory_pipeline.express.store import load_briefing

    verbs = [v for v in (useful, less, mute, unmute) if v is not None]
    if len(verbs) > 1:
        raise UserError("give one of --useful, --less, --mute, --unmute at a time")
    if fmt not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}")
    settings = Settings.from_env()
    when = _day(day)
    with connect(ensure_ready(settings).app, autocommit=True) as conn:
        if useful is not None or less is not None:
            verb = "useful" if useful is not None else "less"
            item = useful if useful is not None else less
            assert item is not None
            kind, topic = feedback.rate(conn, item, verb)
            direction = "more" if verb == "useful" else "less"
            say(f"noted: {direction} like item {item} ({kind}, {topic}) in later briefings")
            return
        if mute is not None or unmute is not None:
            verb = "mute" if mute is not None else "unmute"
            target_kind, target = feedback.mute(conn, mute or unmute or "", verb)
            state = "left out of" if verb == "mute" else "delivered again in"
            say(f"{target_kind} {target!r} is {state} later briefings")
            return
        if compose:
            from memory_pipeline.express.briefing import EditorChoice, make_briefing

            report = make_briefing(
                conn,
                when or datetime.now(UTC).date(),
                editor=EditorChoice(
                    settings.brief_model, settings.ollama_host, settings.ollama_timeout_s
                ),
                digest_weekday=settings.brief_digest_weekday,
            )
            note = f"; {report.editor_note}" if report.editor_note else ""
            say(
                f"composed the briefing for {report.day}: {report.items} items, "
                f"{len(report.filtered)} muted, editor {report.editor}{note}"
            )
            when = report.day
        if push:
            from memory_pipeline.express.push import SmtpConfig, push_briefing

            config = SmtpConfig.from_values(
                settings.smtp_host,
                settings.smtp_port,
                settings.smtp_security,
                settings.smtp_user,
                settings.smtp_from,
                settings.smtp_to,
            )
            outcome = push_briefing(conn, config, when, settings.brief_memory_url)
            say(f"{'pushed' if outcome.sent else 'not pushed'}: {outcome.reason}")
            return
        stored = load_briefing(conn, when)
    if stored is None:
        raise UserError(
            "no briefing yet; compose one with `memory-pipeline brief --compose`"
            if when is None
            else f"no briefing for {when}; compose it with `memory-pipeline brief --compose "
            f"--day {when}`"
        )
    page = {"markdown": render.markdown, "plain": render.plain, "html": render.html_page}[fmt]
    typer.echo(page(stored, settings.brief_memory_url), nl=False)
