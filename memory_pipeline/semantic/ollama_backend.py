"""The production semantic-pass backend: one Ollama chat call per task revision.

The model gets system instructions (what segments, decisions, insights and corrections are, and
the rules they follow) and one user message rendering the tail context and the new turns with
their ordinals. The answer is constrained by Ollama's `format` field to the JSON schema of
`PassResult`, then parsed by pydantic and checked by `validate_result`.

Any failure - transport (timeout, connection, HTTP status), malformed JSON, a schema violation, a
structural violation, a truncated answer - fails the whole pass with `SemanticPassError`. There are
no partial results and no internal retries: the pipeline retries the revision as a unit.
"""

from __future__ import annotations

import threading
from typing import Any

import ollama
from pydantic import ValidationError

from memory_pipeline import tuning
from memory_pipeline.ollama_chat import OllamaCallFailed, chat_json
from memory_pipeline.semantic.errors import SemanticPassError
from memory_pipeline.semantic.models import (
    InvalidPassOutput,
    PassInput,
    PassResult,
    TurnInput,
    validate_result,
)

SYSTEM_PROMPT = """\
You turn one coding-agent task (a conversation between a user and an AI coding agent) into \
long-term memory. You receive complete turns, each with an ordinal: the user's prompt and the \
agent's final visible outcome. Reply with one JSON object that matches the given schema, \
nothing else.

TOPIC SEGMENTS ("segments")
- Cut the NEW turns into topic segments: contiguous runs of complete turns that share one \
distinct purpose, hang together, and would be worth finding or distilling on their own. Start a \
new segment only when the purpose really changes (a new problem, feature or question); \
follow-ups, fixes, retries and corrections of the same work stay in the same segment. Avoid \
one-turn segments unless that turn is a genuinely separate topic.
- Segments cover every new turn exactly once, in order, without gaps: the first segment starts \
at the first new ordinal (or at the tail's first ordinal, see below), each next segment starts \
right after the previous one ends, and the last ends at the last new ordinal.
- Every segment gets a short, specific "title" (at most about 8 words) naming its subject, e.g. \
"Flaky login test caused by token clock skew" - not "Debugging" or "Follow-up".
- TAIL CONTEXT: when turns of the prior tail segment are shown, they were already processed and \
are context only. If the first new turns continue that same topic, set "continues_tail": true \
on the first segment and set its "first_ordinal" to the tail's first ordinal. Otherwise leave \
"continues_tail" false and start at the first new ordinal. Never set "continues_tail" on any \
other segment.

DECISIONS AND INSIGHTS ("memories" of a segment)
- A "decision" is a choice the user or the agent settled on (a tool, design, approach, \
convention, something dropped). An "insight" is something learned (a root cause, how something \
really behaves, a gotcha, a lesson).
- Only record what the turns actually support; zero memories is fine. Never invent reasons.
- "content" is one or two standalone sentences stating what was decided or learned AND WHY. A \
reader who never saw the conversation must understand it: name the thing (the library, file, \
function, service, setting) instead of writing "it", "this" or "the issue".
- "title" is a short head of the content (at most about 10 words).
- "supporting_ordinals" lists the turn ordinals inside the same segment that support the \
memory; at least one must be a NEW turn. Never distil a memory from tail-context turns alone.
- "questions" (optional, at most 3): natural questions a developer might later ask that this \
memory answers.

CORRECTIONS ("corrections")
- Record a correction episode only when the user's prompt specifically corrects a prior visible \
outcome of the agent (e.g. "no, that's wrong", "that's not what I asked", "I said X", "you \
changed the wrong file"). A polite follow-up or a new request ("thanks, now also add X") is NOT \
a correction.
- "correcting_ordinal" is the NEW turn whose prompt corrects; "corrected_ordinal" is the \
earlier turn whose outcome was corrected. "agent_did" says what the agent did; "user_expected" \
says what the user wanted instead, attributed to the user. "title" is a short head.

PROJECT
- Set a segment's "project" only when the turn text itself clearly establishes which project or \
product the work is about (e.g. "in the Acme billing service", "for the memory-pipeline \
project"). Then "project_evidence" must quote the exact words from the turns that establish it. \
A working directory, a repository path or a guess never count: otherwise leave both null.
"""


def _clip(text: str, max_chars: int) -> str:
    text = text.strip()
    if len(text) <= max_chars:
        return text
    return text[:max_chars].rstrip() + " […truncated]"


def _render_turn(turn: TurnInput, max_chars: int) -> str:
    return (
        f"[turn {turn.ordinal}]\n"
        f"USER PROMPT:\n{_clip(turn.prompt, max_chars)}\n"
        f"AGENT OUTCOME:\n{_clip(turn.outcome, max_chars)}"
    )


def render_user_message(pass_input: PassInput) -> str:
    """The task as the model sees it: title, tail context (marked), new turns, coverage rules."""
    new = pass_input.new_turns
    lines = [f"Source: {pass_input.source}"]
    if pass_input.task_title:
        lines.append(f"Task title: {pass_input.task_title}")
    lines.append("")
    if pass_input.tail_context:
        tail = pass_input.tail_context
        lines.append(
            f"=== PRIOR TAIL SEGMENT (turns {tail[0].ordinal}-{tail[-1].ordinal}): context only, "
            "already processed - do not distil memories or corrections from these turns ==="
        )
        lines.extend(_render_turn(t, tuning.SEMANTIC_OLLAMA_MAX_TAIL_CHARS) for t in tail)
        lines.append("")
    span = f"{new[0].ordinal}-{new[-1].ordinal}"
    lines.append(f"=== NEW TURNS (turns {span}): segment and distil ===")
    lines.extend(_render_turn(t, tuning.SEMANTIC_OLLAMA_MAX_TURN_CHARS) for t in new)
    lines.append("")
    rule = f"Segments must cover turns {new[0].ordinal}-{new[-1].ordinal} contiguously"
    if pass_input.tail_context:
        rule += (
            f"; the first segment may instead continue the tail (continues_tail=true, "
            f"first_ordinal={pass_input.tail_context[0].ordinal})"
        )
    lines.append(rule + ".")
    return "\n\n".join(lines)


def pass_result_schema() -> dict[str, Any]:
    """The JSON schema sent in Ollama's `format` field."""
    return PassResult.model_json_schema()


class OllamaBackend:
    """One Ollama chat call per task revision; any failure raises `SemanticPassError`."""

    def __init__(self, host: str, model: str, timeout_s: float) -> None:
        self.host = host
        self.model = model
        self.timeout_s = timeout_s
        self.name = f"ollama:{model}"
        self._client: ollama.Client | None = None
        self._lock = threading.Lock()

    def _get_client(self) -> ollama.Client:
        with self._lock:
            if self._client is None:
                self._client = ollama.Client(host=self.host, timeout=self.timeout_s)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def messages(self, pass_input: PassInput) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_user_message(pass_input)},
        ]

    def run(self, pass_input: PassInput) -> PassResult:
        if not pass_input.new_turns:
            raise SemanticPassError(self.name, "pass has no new turns")
        content = self._chat(pass_input)
        try:
            result = PassResult.model_validate_json(content)
        except ValidationError as exc:
            kind = (
                "malformed JSON"
                if any(e["type"] == "json_invalid" for e in exc.errors())
                else "output violates the PassResult schema"
            )
            raise SemanticPassError(self.name, f"{kind}: {_short(exc)}", exc) from exc
        try:
            return validate_result(pass_input, result)
        except InvalidPassOutput as exc:
            raise SemanticPassError(self.name, f"structurally invalid output: {exc}", exc) from exc

    def _chat(self, pass_input: PassInput) -> str:
        try:
            response = chat_json(
                self._get_client(),
                host=self.host,
                model=self.model,
                messages=self.messages(pass_input),
                schema=pass_result_schema(),
                options={
                    "temperature": tuning.SEMANTIC_OLLAMA_TEMPERATURE,
                    "num_ctx": tuning.SEMANTIC_OLLAMA_NUM_CTX,
                },
                timeout_s=self.timeout_s,
            )
        except OllamaCallFailed as exc:
            raise SemanticPassError(self.name, str(exc), exc) from exc
        return response.message.content or ""


def _short(exc: ValidationError, limit: int = 5) -> str:
    errors = exc.errors()
    parts = [
        f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in errors[:limit]
    ]
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more
