"""The Ollama judge: typed relations between candidate pairs, several pairs per chat call.

One call per batch of JUDGE_OLLAMA_BATCH_PAIRS pairs, the answer constrained by Ollama's
`format` field to the JSON schema of `Verdicts`, then parsed by pydantic. A batch whose call
fails (timeout, connection, HTTP status, malformed JSON, schema violation, a verdict for a pair
it was not given) yields no edges and is recorded as a failure; its memories are not marked
scanned, so the next run asks again. Other batches of the same run are kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import ollama
from pydantic import BaseModel, ValidationError

from memory_pipeline import tuning
from memory_pipeline.ollama_chat import OllamaCallFailed, chat_json
from memory_pipeline.relationships.models import (
    Edge,
    JudgeFailure,
    Judgement,
    Memory,
    Pair,
    Verdict,
)

SYSTEM_PROMPT = """\
You compare pairs of memories a developer's coding agents stored (decisions, insights, \
corrections, topic segments of conversations). For each pair, A was stated AFTER B. Say how A \
relates to B, using exactly one relation:
- "contradicts": A and B cannot both hold now; in particular A reverses or replaces a decision \
B made (e.g. B chose X, A drops X or switches away from X).
- "supports": A gives evidence or reasons for B (or B for A).
- "extends": A builds on B, adding detail or a next step to the same subject.
- "requires": A depends on B being in place (or B on A).
- "blocks": A prevents or stops B from happening (or B A).
- "inspires": A gave the idea for B across different subjects (or B for A).
- "none": none of these clearly holds. Prefer "none" when unsure.
"direction" is "newer_to_older" when the relation reads "A <relation> B", "older_to_newer" when \
it reads "B <relation> A" ("contradicts" is always newer_to_older). "evidence" quotes the few \
words of A or B that show the relation. "confidence" is your confidence from 0 to 1. Reply with \
one JSON object matching the schema, with exactly one verdict per pair, "pair" being its index.
"""


class Verdicts(BaseModel):
    verdicts: list[Verdict]


def _clip(text: str) -> str:
    text = text.strip()
    limit = tuning.JUDGE_OLLAMA_MEMORY_CHARS
    return text if len(text) <= limit else text[:limit].rstrip() + " […]"


def _side(label: str, m: Memory) -> str:
    project = f", project {m.project}" if m.project else ""
    return (
        f"{label} ({m.type}, {m.created_at.date().isoformat()}{project}): {m.title}\n"
        f"{_clip(m.content)}"
    )


def render_pairs(pairs: Sequence[Pair]) -> str:
    blocks = [
        f"=== pair {i} ===\n{_side('A', p.newer)}\n{_side('B', p.older)}"
        for i, p in enumerate(pairs)
    ]
    return "\n\n".join(blocks) + f"\n\nAnswer with {len(pairs)} verdicts, pairs 0-{len(pairs) - 1}."


class OllamaJudge:
    """Batched pair judgements through Ollama; failures are per batch, never per run."""

    def __init__(self, host: str, model: str, timeout_s: float) -> None:
        self.host = host
        self.model = model
        self.timeout_s = timeout_s
        self.name = f"ollama:{model}"

    def judge(self, pairs: Sequence[Pair]) -> Judgement:
        out = Judgement()
        size = tuning.JUDGE_OLLAMA_BATCH_PAIRS
        with ollama.Client(host=self.host, timeout=self.timeout_s) as client:
            for start in range(0, len(pairs), size):
                batch = list(pairs[start : start + size])
                try:
                    out.edges.extend(self._batch(client, batch))
                except JudgeError as exc:
                    out.failures.append(
                        JudgeFailure(backend=self.name, pairs=len(batch), reason=str(exc))
                    )
                    out.failed_memories.update(i for p in batch for i in (p.newer.id, p.older.id))
        return out

    def _batch(self, client: ollama.Client, batch: list[Pair]) -> list[Edge]:
        content = self._chat(client, batch)
        try:
            verdicts = Verdicts.model_validate_json(content).verdicts
        except ValidationError as exc:
            malformed = any(e["type"] == "json_invalid" for e in exc.errors())
            kind = "malformed JSON" if malformed else "answer violates the verdict schema"
            raise JudgeError(f"{kind}: {exc.errors()[0]['msg']}") from exc
        if any(v.pair >= len(batch) for v in verdicts):
            raise JudgeError("a verdict names a pair that was not asked about")
        edges = []
        seen: set[int] = set()
        for v in verdicts:
            if v.pair in seen or v.relation == "none":
                continue
            seen.add(v.pair)
            if v.confidence < tuning.JUDGE_OLLAMA_MIN_CONFIDENCE:
                continue
            pair = batch[v.pair]
            source, target = pair.newer, pair.older
            if v.direction == "older_to_newer" and v.relation != "contradicts":
                source, target = target, source
            edges.append(
                Edge(
                    source.id,
                    target.id,
                    v.relation,
                    similarity=round(pair.similarity, 4),
                    evidence=v.evidence[: tuning.RELATIONSHIP_EVIDENCE_CHARS] or None,
                    backend=self.name,
                    confidence=v.confidence,
                )
            )
        return edges

    def _chat(self, client: ollama.Client, batch: list[Pair]) -> str:
        try:
            response = chat_json(
                client,
                host=self.host,
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": render_pairs(batch)},
                ],
                schema=Verdicts.model_json_schema(),
                options={
                    "temperature": tuning.JUDGE_OLLAMA_TEMPERATURE,
                    "num_ctx": tuning.JUDGE_OLLAMA_NUM_CTX,
                },
                timeout_s=self.timeout_s,
            )
        except OllamaCallFailed as exc:
            raise JudgeError(str(exc)) from exc
        return response.message.content or ""


class JudgeError(Exception):
    """One batch could not be judged; the run goes on."""
