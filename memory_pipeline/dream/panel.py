"""The Consensus Panel: four independent evaluators and the tally.

Offline, the evaluators are four distinct checks:
- Skeptic (evidence strength): a SUPERSEDE needs a live `contradicts` edge from the newer to the
  older memory; a connection needs cosine >= DREAM_CONNECTION_MIN_COSINE (deferred between
  DREAM_CONNECTION_DEFER_COSINE and that); a procedural insight needs
  DREAM_CORRECTION_MIN_EPISODES correction episodes; anything else at least two memories.
- User Advocate (relevance): the memories belong to a project active within
  DREAM_ACTIVE_PROJECT_DAYS of the newest memory (or are themselves that recent); a SUPERSEDE
  always matters (it keeps decisions current).
- Epistemologist (support): every memory cited exists and is active, and every quote appears
  verbatim in the memories it rests on; a candidate with no quote is not supported.
- Methodologist (form and novelty): the fields fit the operation, edges name only the new memory
  and what it rests on, and no active memory has the same title or content.
With Ollama each evaluator is one chat call per candidate answering `Verdict`'s JSON schema.

Tally: ACCEPTED with at least DREAM_ACCEPT_VOTES (3) accepts of four. Otherwise DEFERRED when some
evaluator deferred and the deferrals could still make three accepts (accepts + defers >= 3),
else REJECTED. A candidate deferred for the DREAM_MAX_DEFERRALS-th time (2) is REJECTED for good.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg

from memory_pipeline import tuning
from memory_pipeline.dream.memories import load, normalize
from memory_pipeline.dream.models import EVALUATORS, Candidate, MemoryView, Verdict
from memory_pipeline.dream.precheck import is_quoted
from memory_pipeline.dream.thinker_ollama import (
    BudgetExhausted,
    CallFailed,
    DreamOllama,
    describe_candidate,
)

NAMES = {
    "skeptic": "Skeptic",
    "user_advocate": "User Advocate",
    "epistemologist": "Epistemologist",
    "methodologist": "Methodologist",
}


def tally(verdicts: list[str], previous_deferrals: int = 0) -> tuple[str, int, bool]:
    """(final verdict, deferrals so far, rejected for good) from four votes."""
    accepts = verdicts.count("accept")
    defers = verdicts.count("defer")
    if accepts >= tuning.DREAM_ACCEPT_VOTES:
        return "ACCEPTED", previous_deferrals, False
    if defers and accepts + defers >= tuning.DREAM_ACCEPT_VOTES:
        count = previous_deferrals + 1
        if count >= tuning.DREAM_MAX_DEFERRALS:
            return "REJECTED", count, True
        return "DEFERRED", count, False
    return "REJECTED", previous_deferrals, False


# --- offline evaluators ----------------------------------------------------------------------
def _v(verdict: str, reasoning: str) -> Verdict:
    return Verdict(verdict=verdict, reasoning=reasoning)  # type: ignore[arg-type]


class OfflinePanel:
    name = "offline-rules"

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        row = conn.execute("SELECT max(created_at) FROM memories").fetchone()
        self.reference = row[0] if row else None
        since = (
            self.reference - timedelta(days=tuning.DREAM_ACTIVE_PROJECT_DAYS)
            if self.reference
            else None
        )
        self.since = since
        self.active_projects = (
            {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT project FROM memories WHERE project IS NOT NULL"
                    " AND created_at >= %s",
                    [since],
                ).fetchall()
            }
            if since
            else set()
        )

    def evaluate(self, c: Candidate) -> dict[str, Verdict]:
        d = c.draft
        ids = [*d.rests_on, *(x for x in (d.target_memory_id, d.successor_id) if x)]
        views = load(self.conn, ids)
        return {
            "skeptic": self.skeptic(c, views),
            "user_advocate": self.user_advocate(c, views),
            "epistemologist": self.epistemologist(c, views),
            "methodologist": self.methodologist(c, views),
        }

    def skeptic(self, c: Candidate, views: dict[str, MemoryView]) -> Verdict:
        d = c.draft
        if d.operation == "SUPERSEDE":
            live = self.conn.execute(
                "SELECT 1 FROM memory_relationships WHERE source_id = %s AND target_id = %s"
                " AND relation_type = 'contradicts' AND expired_at IS NULL",
                [d.successor_id, d.target_memory_id],
            ).fetchone()
            new, old = views.get(d.successor_id or ""), views.get(d.target_memory_id or "")
            if live and new and old and new.created_at > old.created_at:
                return _v("accept", "a live contradicts edge runs from the newer to the older")
            return _v("reject", "no live contradicts edge from a newer to the older memory")
        if d.operation == "UPDATE" and c.strategy == "contradiction_hunt":
            live = self.conn.execute(
                "SELECT 1 FROM memory_relationships WHERE source_id = ANY(%s::uuid[])"
                " AND target_id = %s AND relation_type = 'contradicts' AND expired_at IS NULL",
                [d.rests_on, d.target_memory_id],
            ).fetchone()
            if live:
                return _v("accept", "a live contradicts edge runs to the updated memory")
            return _v("reject", "nothing newer contradicts the memory it would update")
        if c.strategy == "cross_project_collision":
            if c.score >= tuning.DREAM_CONNECTION_MIN_COSINE:
                return _v("accept", f"the memories are highly similar (cosine {c.score:.2f})")
            if c.score >= tuning.DREAM_CONNECTION_DEFER_COSINE:
                return _v("defer", f"similar, but not strongly (cosine {c.score:.2f})")
            return _v("reject", f"too weakly similar (cosine {c.score:.2f})")
        if c.strategy == "correction_pattern":
            n = sum(1 for i in d.rests_on if views.get(i) and views[i].type == "correction_episode")
            if n >= tuning.DREAM_CORRECTION_MIN_EPISODES:
                return _v("accept", f"{n} correction episodes support the pattern")
            return _v("reject", f"only {n} correction episodes")
        if len(set(d.rests_on)) >= 2:
            return _v("accept", f"rests on {len(set(d.rests_on))} memories")
        return _v("reject", "a single memory is no evidence of a new insight")

    def user_advocate(self, c: Candidate, views: dict[str, MemoryView]) -> Verdict:
        if c.draft.operation == "SUPERSEDE" or c.strategy == "contradiction_hunt":
            return _v("accept", "marking a reversed decision keeps the user's memory current")
        rested = [views[i] for i in c.draft.rests_on if i in views]
        active = sorted({v.project for v in rested if v.project in self.active_projects})
        if active:
            return _v("accept", f"about active project(s): {', '.join(active)}")
        if self.since and any(v.created_at >= self.since for v in rested):
            return _v("accept", "rests on recent memories")
        return _v(
            "reject",
            f"nothing it rests on was active in the last {tuning.DREAM_ACTIVE_PROJECT_DAYS} days",
        )

    def epistemologist(self, c: Candidate, views: dict[str, MemoryView]) -> Verdict:
        d = c.draft
        missing = [i for i in d.rests_on if i not in views or views[i].status != "active"]
        if missing:
            return _v("reject", f"cites {len(missing)} memory(ies) that are missing or inactive")
        if not d.quotes:
            return _v("reject", "no quoted evidence for its claims")
        texts = [f"{views[i].title}\n{views[i].content}" for i in d.rests_on]
        unsupported = [q for q in d.quotes if not is_quoted(q, texts)]
        if unsupported:
            return _v("reject", f'quote not found in the cited memories: "{unsupported[0][:80]}"')
        absent = [q for q in d.quotes if normalize(q) not in normalize(d.content)]
        if absent:
            return _v("defer", "a quote is cited but not used in the content")
        return _v("accept", f"all {len(d.quotes)} quotes appear verbatim in the cited memories")

    def methodologist(self, c: Candidate, views: dict[str, MemoryView]) -> Verdict:
        d = c.draft
        if len(d.title.strip()) < 5 or len(d.content.strip()) < 40:
            return _v("reject", "title or content too short to stand on its own")
        if d.operation == "SUPERSEDE":
            if not d.target_memory_id or not d.successor_id or d.target_memory_id == d.successor_id:
                return _v("reject", "a SUPERSEDE needs a distinct target and successor")
        elif d.operation == "UPDATE" and not d.target_memory_id:
            return _v("reject", "an UPDATE needs its target memory")
        elif d.operation == "CREATE" and d.target_memory_id:
            return _v("reject", "a CREATE has no target memory")
        allowed = {"new", *d.rests_on}
        stray = [e for e in d.edges if e.source not in allowed or e.target not in allowed]
        if stray or any(e.source == e.target for e in d.edges):
            return _v("reject", "an edge names a memory outside the candidate")
        same = self.conn.execute(
            "SELECT 1 FROM memories WHERE status = 'active' AND (lower(title) = lower(%s)"
            " OR content = %s) LIMIT 1",
            [d.title.strip(), d.content.strip()],
        ).fetchone()
        if same:
            return _v("reject", "an active memory already says this")
        return _v("accept", "well-formed and new")


# --- Ollama evaluators -----------------------------------------------------------------------
ROLES = {
    "skeptic": "the Skeptic: is the evidence strong enough? Reject what the memories do not "
    "clearly show; defer when more evidence could decide.",
    "user_advocate": "the User Advocate: would this developer want this remembered? Reject "
    "what is irrelevant to their work.",
    "epistemologist": "the Epistemologist: is every claim supported by the quoted memory text? "
    "Reject any claim the cited memories do not state.",
    "methodologist": "the Methodologist: is the candidate well-formed (operation, target, "
    "edges, schema_operation) and new? Reject malformed or redundant candidates.",
}


class OllamaPanel:
    def __init__(self, conn: psycopg.Connection, client: DreamOllama) -> None:
        self.conn = conn
        self.client = client
        self.name = f"ollama:{client.model}"

    def evaluate(self, c: Candidate) -> dict[str, Verdict]:
        views = load(self.conn, c.draft.rests_on)
        text = describe_candidate(c, views)
        out: dict[str, Verdict] = {}
        for key in EVALUATORS:
            system = (
                f"You are {ROLES[key]} You sit on a panel of four evaluators judging one "
                "candidate memory independently. Answer with one JSON object: verdict "
                '("accept", "reject" or "defer") and reasoning (one or two sentences).'
            )
            try:
                out[key] = self.client.ask(system, text, Verdict)
            except BudgetExhausted:
                out[key] = _v("defer", "no model call left in this run's budget")
            except CallFailed as exc:
                out[key] = _v("defer", f"evaluator call failed: {exc}")
        return out
