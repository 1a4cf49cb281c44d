"""The Ollama Thinker (one chat call per slice) and the budgeted client the panel shares.

Every call goes through `DreamOllama`, which enforces the run's call budget
(MEMORY_DREAM_CALL_BUDGET), constrains the answer to a JSON schema through Ollama's `format`
field and counts calls and tokens for the run's metadata. A failed call (transport, HTTP, a
reply that does not match the schema) costs its budget and yields nothing: the slice gets no
candidates, an evaluator's vote becomes a deferral. The Dagster asset runs in the `llm` pool.
"""

from __future__ import annotations

import json
from typing import TypeVar

import ollama
import psycopg
from pydantic import BaseModel, ValidationError

from memory_pipeline import tuning
from memory_pipeline.dream.feedback import Feedback
from memory_pipeline.dream.memories import load, quote
from memory_pipeline.dream.models import Candidate, MemoryView, Slice, ThinkerOutput
from memory_pipeline.ollama_chat import OllamaCallFailed, chat_json

M = TypeVar("M", bound=BaseModel)


class BudgetExhausted(Exception):
    pass


class CallFailed(Exception):
    pass


class DreamOllama:
    def __init__(self, host: str, model: str, timeout_s: float, budget: int) -> None:
        self.host, self.model, self.budget, self.timeout_s = host, model, budget, timeout_s
        self.client = ollama.Client(host=host, timeout=timeout_s)
        self.calls = 0
        self.tokens = 0
        self.failures = 0

    @property
    def left(self) -> int:
        return self.budget - self.calls

    def ask(self, system: str, user: str, schema: type[M]) -> M:
        if self.calls >= self.budget:
            raise BudgetExhausted(f"call budget of {self.budget} used up")
        self.calls += 1
        try:
            response = chat_json(
                self.client,
                host=self.host,
                model=self.model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                schema=schema.model_json_schema(),
                options={
                    "temperature": tuning.DREAM_OLLAMA_TEMPERATURE,
                    "num_ctx": tuning.DREAM_OLLAMA_NUM_CTX,
                },
                timeout_s=self.timeout_s,
            )
            self.tokens += (response.prompt_eval_count or 0) + (response.eval_count or 0)
            return schema.model_validate_json(response.message.content or "")
        except (OllamaCallFailed, ValidationError) as exc:
            self.failures += 1
            raise CallFailed(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from exc


THINKER_SYSTEM = """\
You are the Thinker of a personal memory system for a software developer. You receive a slice \
of their memories (decisions, insights, corrections, connections), each with an id, and why \
the slice was assembled. Propose at most a few candidates, only what the memories support:
- CREATE: a new synthesis, insight or connection across the memories.
- UPDATE: an existing memory (target_memory_id) needs a refinement; say it in full.
- SUPERSEDE: an older memory (target_memory_id) was replaced by a newer one (successor_id).
Each candidate names "schema_operation": "assimilation" (fits what is known) or \
"accommodation" (changes what is known), "rests_on" (ids of the slice's memories it rests on), \
"quotes" (verbatim excerpts of those memories that support every claim) and typed "edges" \
("new" stands for the memory the candidate creates). Proposing nothing is fine. Reply with one \
JSON object matching the schema, nothing else."""


def render_slice(s: Slice, views: dict[str, MemoryView], feedback: Feedback) -> str:
    lines = [f"Strategy: {s.strategy}", f"Why this slice: {s.reason}", "", "Memories:"]
    for mid in s.memory_ids:
        v = views.get(mid)
        if v is None:
            continue
        lines.append(
            f"[id {v.id}] {v.type} | project {v.project or '-'} | "
            f"{v.created_at:%Y-%m-%d} | {v.title}\n"  # type: ignore[str-format]
            f"{quote(v.content, tuning.DREAM_OLLAMA_MEMORY_CHARS)}"
        )
    if feedback.items:
        lines += [
            "",
            "Feedback on earlier proposals (do not repeat these mistakes):",
            feedback.text(),
        ]
    return "\n".join(lines)


class OllamaThinker:
    def __init__(self, client: DreamOllama) -> None:
        self.client = client
        self.name = f"ollama:{client.model}"
        self.errors: list[str] = []

    def think(self, conn: psycopg.Connection, s: Slice, feedback: Feedback) -> list[Candidate]:
        views = load(conn, s.memory_ids)
        try:
            out = self.client.ask(THINKER_SYSTEM, render_slice(s, views, feedback), ThinkerOutput)
        except CallFailed as exc:
            self.errors.append(f"{s.strategy}: {exc}")
            return []
        allowed = set(s.memory_ids)
        found: list[Candidate] = []
        for draft in out.candidates:
            ids = {*draft.rests_on, *(x for x in (draft.target_memory_id, draft.successor_id) if x)}
            if not ids <= allowed:
                self.errors.append(f"{s.strategy}: a candidate cites memories outside its slice")
                continue
            projects = {views[i].project for i in draft.rests_on if i in views and views[i].project}
            found.append(
                Candidate(
                    draft=draft,
                    strategy=s.strategy,
                    slice_reason=s.reason,
                    score=s.score,
                    cross_project=len(projects) >= 2,
                )
            )
        return found


def describe_candidate(c: Candidate, views: dict[str, MemoryView]) -> str:
    d = c.draft
    cited = "\n".join(
        f"[id {v.id}] {v.type} | project {v.project or '-'} | {v.title}\n"
        f"{quote(v.content, tuning.DREAM_OLLAMA_MEMORY_CHARS)}"
        for v in (views.get(i) for i in d.rests_on)
        if v is not None
    )
    return (
        f"Candidate ({d.operation}, {d.schema_operation}, type {d.type}):\n"
        + json.dumps(d.model_dump(exclude={"rationale"}), indent=1)
        + f"\n\nWhy the slice was assembled: {c.slice_reason}\n\nThe memories it rests on:\n{cited}"
    )
