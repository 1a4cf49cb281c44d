"""The Ollama editor: one chat call ranks the day's candidates and writes a headline for each.

The answer is constrained by Ollama's `format` field to `EditorAnswer`'s JSON schema and then
checked: every candidate ranked exactly once, every headline one plain line (no JSON, no markup)
within EXPRESS_HEADLINE_MAX_CHARS. Any failure - no server, a timeout, an answer that breaks a
rule - raises `EditorError`, and the caller falls back to the offline editor for the whole
briefing (a briefing is never half-edited).
"""

from __future__ import annotations

import json

import ollama
from pydantic import BaseModel, Field, ValidationError

from memory_pipeline import tuning
from memory_pipeline.express.edit_offline import clean, detail
from memory_pipeline.express.models import Candidate, EditedItem
from memory_pipeline.ollama_chat import OllamaCallFailed, chat_json

SYSTEM_PROMPT = """\
You are the editor of a short daily briefing for a software developer about their own project \
memory: decisions, insights, contradictions and open questions found in their past work with \
coding agents. You get numbered candidate items. Reply with one JSON object matching the schema: \
"items" lists EVERY candidate exactly once by its "index", most important first, each with a \
"headline": one plain sentence (at most 20 words, no markdown, no quotes around it, no JSON) that \
tells the developer what is new and why it matters, naming the concrete thing (library, file, \
service, decision). Contradictions and cross-project insights usually matter most. Never invent \
facts that are not in the candidate.\
"""


class EditorError(Exception):
    """The Ollama editor could not produce a usable edit; the offline editor takes over."""


class RankedHeadline(BaseModel):
    index: int
    headline: str = Field(min_length=1)


class EditorAnswer(BaseModel):
    items: list[RankedHeadline]


def render_candidates(candidates: list[Candidate]) -> str:
    blocks = []
    for i, c in enumerate(candidates):
        facts = {
            k: (clean(v)[: tuning.EXPRESS_OLLAMA_MAX_MEMORY_CHARS] if isinstance(v, str) else v)
            for k, v in c.facts.items()
        }
        blocks.append(
            json.dumps(
                {
                    "index": i,
                    "kind": c.kind,
                    "topic": c.topic,
                    "cross_project": c.cross_project,
                    "facts": facts,
                    "memories": [m.title for m in c.memories[:6]],
                },
                ensure_ascii=False,
                default=str,
            )
        )
    return "Candidates, one JSON object per line:\n" + "\n".join(blocks)


def _valid_headline(text: str) -> str:
    line = clean(text)
    if not line or line[0] in "{[<#*`" or len(line) > tuning.EXPRESS_HEADLINE_MAX_CHARS:
        raise EditorError(f"unusable headline: {line[:60]!r}")
    return line


def parse_answer(content: str, candidates: list[Candidate]) -> list[EditedItem]:
    """The model's answer as edited items, ranked; `EditorError` if it breaks any rule."""
    try:
        answer = EditorAnswer.model_validate_json(content)
    except ValidationError as exc:
        raise EditorError(f"answer does not match the schema ({exc.error_count()} errors)") from exc
    indexes = [r.index for r in answer.items]
    if sorted(indexes) != list(range(len(candidates))):
        raise EditorError("answer does not rank every candidate exactly once")
    n = len(candidates)
    return [
        EditedItem(
            candidates[r.index],
            _valid_headline(r.headline),
            detail(candidates[r.index]),
            # Rank 1 of n scores 1.0, the last 1/n: feedback shifts then apply on the same scale.
            round((n - rank) / n, 4),
        )
        for rank, r in enumerate(answer.items)
    ]


def edit(candidates: list[Candidate], host: str, model: str, timeout_s: float) -> list[EditedItem]:
    if not candidates:
        return []
    try:
        with ollama.Client(host=host, timeout=timeout_s) as client:
            response = chat_json(
                client,
                host=host,
                model=model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": render_candidates(candidates)},
                ],
                schema=EditorAnswer.model_json_schema(),
                options={"temperature": tuning.EXPRESS_OLLAMA_TEMPERATURE},
                timeout_s=timeout_s,
            )
    except OllamaCallFailed as exc:
        raise EditorError(str(exc)) from exc
    return parse_answer(response.message.content or "", candidates)
