"""Delivery preferences (`express_feedback`, migration 006): what the user said about items.

  useful ID / less ID   a soft re-rank of later briefings: items of the rated item's topic move
                        up (down) by EXPRESS_FEEDBACK_TOPIC_WEIGHT, items of its kind by
                        EXPRESS_FEEDBACK_KIND_WEIGHT, per vote, capped at EXPRESS_FEEDBACK_MAX_SHIFT
  mute X / unmute X     a hard filter on a kind (one of KINDS) or a topic (anything else,
                        compared case-insensitively); the latest mute or unmute of X wins

A rating is stored against the item's key (kind + memories), not its row id: composing a day
again renumbers items, the finding stays the same. It changes delivery only, never synthesis.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from memory_pipeline import tuning
from memory_pipeline.errors import UserError
from memory_pipeline.express.models import KINDS, EditedItem, Filtered


@dataclass(frozen=True)
class Preferences:
    muted_kinds: frozenset[str]
    muted_topics: frozenset[str]
    # (kind, topic, +1 useful / -1 less) for every rating whose item still exists
    ratings: tuple[tuple[str, str, int], ...]


def target_of(value: str) -> tuple[str, str]:
    """('kind', k) when `value` names an item kind, else ('topic', normalized topic)."""
    text = " ".join(value.split()).lower()
    if not text:
        raise UserError("name a topic or one of the kinds: " + ", ".join(KINDS))
    return ("kind", text) if text in KINDS else ("topic", text)


def rate(conn: psycopg.Connection, item_id: int, verb: str) -> tuple[str, str]:
    """Record `useful` or `less` for a briefing item; returns its (kind, topic)."""
    if verb not in ("useful", "less"):
        raise ValueError(verb)
    row = conn.execute(
        "SELECT item_key, kind, topic FROM briefing_items WHERE id = %s", [item_id]
    ).fetchone()
    if row is None:
        raise UserError(
            f"no briefing item {item_id}; `memory-pipeline brief` lists the items with their ids"
        )
    conn.execute(
        "INSERT INTO express_feedback (verb, target_kind, target, note)"
        " VALUES (%s, 'item', %s, %s)",
        [verb, row[0], f"item {item_id}"],
    )
    return row[1], row[2]


def mute(conn: psycopg.Connection, value: str, verb: str = "mute") -> tuple[str, str]:
    """Record `mute` or `unmute` of a kind or topic; returns (target_kind, target)."""
    if verb not in ("mute", "unmute"):
        raise ValueError(verb)
    kind, target = target_of(value)
    conn.execute(
        "INSERT INTO express_feedback (verb, target_kind, target) VALUES (%s, %s, %s)",
        [verb, kind, target],
    )
    return kind, target


def load(conn: psycopg.Connection) -> Preferences:
    latest = conn.execute(
        """
        SELECT DISTINCT ON (target_kind, target) target_kind, target, verb
        FROM express_feedback WHERE verb IN ('mute', 'unmute') AND target_kind IN ('kind', 'topic')
        ORDER BY target_kind, target, created_at DESC, id DESC
        """
    ).fetchall()
    muted = {(k, t) for k, t, verb in latest if verb == "mute"}
    ratings = conn.execute(
        """
        SELECT DISTINCT ON (f.id) i.kind, i.topic, f.verb
        FROM express_feedback f JOIN briefing_items i ON i.item_key = f.target
        WHERE f.target_kind = 'item' AND f.verb IN ('useful', 'less')
        ORDER BY f.id
        """
    ).fetchall()
    return Preferences(
        muted_kinds=frozenset(t for k, t in muted if k == "kind"),
        muted_topics=frozenset(t for k, t in muted if k == "topic"),
        ratings=tuple((k, t.lower(), 1 if v == "useful" else -1) for k, t, v in ratings),
    )


def muted_by(prefs: Preferences, kind: str, topic: str) -> str | None:
    """The rule that mutes an item of this kind and topic, or None."""
    if kind in prefs.muted_kinds:
        return f"kind:{kind}"
    if topic.lower() in prefs.muted_topics:
        return f"topic:{topic.lower()}"
    return None


def shift(prefs: Preferences, kind: str, topic: str) -> float:
    total = 0.0
    for r_kind, r_topic, sign in prefs.ratings:
        if r_topic == topic.lower():
            total += sign * tuning.EXPRESS_FEEDBACK_TOPIC_WEIGHT
        if r_kind == kind:
            total += sign * tuning.EXPRESS_FEEDBACK_KIND_WEIGHT
    cap = tuning.EXPRESS_FEEDBACK_MAX_SHIFT
    return max(-cap, min(cap, total))


def split_muted(prefs: Preferences, candidates: list) -> tuple[list, list[Filtered]]:
    """Candidates still delivered, and what the mutes left out (before any editing)."""
    kept, filtered = [], []
    for c in candidates:
        rule = muted_by(prefs, c.kind, c.topic)
        if rule:
            filtered.append(Filtered(c.kind, c.topic, rule))
        else:
            kept.append(c)
    return kept, filtered


def rerank(prefs: Preferences, items: list[EditedItem]) -> list[EditedItem]:
    """The editor's order shifted by ratings; a stable sort keeps the editor's ties."""
    shifted = [
        EditedItem(
            i.candidate,
            i.headline,
            i.detail,
            round(i.score + shift(prefs, i.candidate.kind, i.candidate.topic), 4),
        )
        for i in items
    ]
    return sorted(shifted, key=lambda i: -i.score)
