"""The second backend: Ollama proposes the nodes a memory names; the store's staged precheck
decides which become mentions (store.precheck). Used only when the semantic pass's model is
reachable (`backend_for`); the offline extraction runs either way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import ollama
from pydantic import BaseModel, Field, ValidationError

from memory_pipeline import tuning
from memory_pipeline.entities.models import Item, Proposal, Proposals
from memory_pipeline.ollama_chat import OllamaCallFailed, chat_json, ollama_model_available

EntityType = Literal[
    "person", "project", "repository", "package", "file", "host", "tool", "place", "organisation"
]

SYSTEM_PROMPT = (
    "You list the specific things each memory names: people, projects, repositories, packages "
    "and libraries, files and paths, services and hosts, tools and commands, places, "
    "organisations. Use only these types; leave out anything else (topics, feelings, events). "
    "Write each name exactly as the memory writes it. Give a confidence from 0 to 1. "
    'Answer JSON: {"entities": [{"memory": <number>, "type": ..., "name": ..., '
    '"confidence": ...}]}.'
)


class _Entity(BaseModel):
    memory: int = Field(ge=0)
    type: EntityType
    name: str = Field(min_length=1, max_length=200)
    confidence: float = Field(ge=0, le=1)


class _Answer(BaseModel):
    entities: list[_Entity]


def render(batch: Sequence[Item]) -> str:
    return "\n\n".join(
        f"=== memory {i} ===\n{m.text[: tuning.ENTITY_OLLAMA_MEMORY_CHARS]}"
        for i, m in enumerate(batch)
    )


class OllamaEntities:
    def __init__(self, host: str, model: str, timeout_s: float) -> None:
        self.host, self.model, self.timeout_s = host, model, timeout_s
        self.name = f"ollama:{model}"

    def propose(self, memories: Sequence[Item]) -> Proposals:
        out = Proposals()
        size = tuning.ENTITY_OLLAMA_BATCH
        with ollama.Client(host=self.host, timeout=self.timeout_s) as client:
            for start in range(0, len(memories), size):
                batch = list(memories[start : start + size])
                try:
                    out.proposals.extend(self._batch(client, batch))
                except _BatchError as exc:
                    out.failures.append(f"{len(batch)} memories: {exc}")
                    out.failed.update(m.id for m in batch)
        return out

    def _batch(self, client: ollama.Client, batch: list[Item]) -> list[Proposal]:
        try:
            response = chat_json(
                client,
                host=self.host,
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": render(batch)},
                ],
                schema=_Answer.model_json_schema(),
                options={
                    "temperature": tuning.ENTITY_OLLAMA_TEMPERATURE,
                    "num_ctx": tuning.ENTITY_OLLAMA_NUM_CTX,
                },
                timeout_s=self.timeout_s,
            )
        except OllamaCallFailed as exc:
            raise _BatchError(str(exc)) from exc
        try:
            answer = _Answer.model_validate_json(response.message.content or "")
        except ValidationError as exc:
            raise _BatchError(f"answer violates the schema: {exc.errors()[0]['msg']}") from exc
        return [
            Proposal(batch[e.memory].id, e.type, e.name.strip(), e.confidence)
            for e in answer.entities
            if e.memory < len(batch)
        ]


class _BatchError(Exception):
    """One batch got no usable answer; its memories are asked again by the next run."""


def backend_for(host: str, model: str | None, timeout_s: float) -> OllamaEntities | None:
    if model and ollama_model_available(host, model, timeout_s=5):
        return OllamaEntities(host, model, timeout_s)
    return None
