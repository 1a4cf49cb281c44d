"""One day's briefing, end to end: compose -> mutes -> edit -> feedback re-rank -> store.

Plain function over a connection: the Dagster asset and `memory-pipeline brief --compose` call it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime

import psycopg

from memory_pipeline import tuning
from memory_pipeline.express import compose, edit_offline, feedback
from memory_pipeline.express.models import Filtered
from memory_pipeline.express.store import store_briefing


@dataclass(frozen=True)
class EditorChoice:
    """Which editor to try: Ollama with `model` (if set and available), else offline."""

    model: str | None = None
    ollama_host: str = "http://127.0.0.1:11434"
    timeout_s: float = 120.0


@dataclass(frozen=True)
class BriefingReport:
    briefing_id: str
    day: date
    window: tuple[datetime, datetime]
    candidates: int
    items: int
    editor: str
    editor_note: str | None
    filtered: list[Filtered] = field(default_factory=list)
    by_kind: dict[str, int] = field(default_factory=dict)
    dropped_over_limit: int = 0


def _edit(candidates: list, choice: EditorChoice) -> tuple[list, str, str | None]:
    if not choice.model or not candidates:
        return edit_offline.edit(candidates), edit_offline.EDITOR, None
    from memory_pipeline.express import edit_ollama
    from memory_pipeline.ollama_chat import ollama_model_available

    if not ollama_model_available(choice.ollama_host, choice.model, timeout_s=5):
        note = f"Ollama model {choice.model} not available at {choice.ollama_host}"
        return edit_offline.edit(candidates), edit_offline.EDITOR, note
    try:
        items = edit_ollama.edit(candidates, choice.ollama_host, choice.model, choice.timeout_s)
    except edit_ollama.EditorError as exc:
        return edit_offline.edit(candidates), edit_offline.EDITOR, f"Ollama editor failed: {exc}"
    return items, f"ollama:{choice.model}", None


def make_briefing(
    conn: psycopg.Connection,
    day: date,
    *,
    editor: EditorChoice | None = None,
    digest_weekday: str = "monday",
    now: datetime | None = None,
) -> BriefingReport:
    """Compose, edit and store `day`'s briefing (replacing one already stored for the day)."""
    window = compose.briefing_window(conn, day, now)
    candidates = compose.compose(conn, day, window, digest_weekday)
    prefs = feedback.load(conn)
    kept, filtered = feedback.split_muted(prefs, candidates)
    edited, editor_name, note = _edit(kept, editor or EditorChoice())
    ranked = feedback.rerank(prefs, edited)
    shown = ranked[: tuning.EXPRESS_MAX_ITEMS]
    briefing_id = store_briefing(conn, day, window, editor_name, shown, filtered)
    return BriefingReport(
        briefing_id=briefing_id,
        day=day,
        window=window,
        candidates=len(candidates),
        items=len(shown),
        editor=editor_name,
        editor_note=note,
        filtered=filtered,
        by_kind=dict(Counter(i.candidate.kind for i in shown)),
        dropped_over_limit=len(ranked) - len(shown),
    )
