"""What the agents send a hook on stdin, and what a hook prints to add context (stdlib only).

Claude Code (https://code.claude.com/docs/en/hooks, "Hook input" and "SessionStart" /
"UserPromptSubmit"): every event carries `session_id`, `transcript_path`, `cwd`,
`permission_mode` and `hook_event_name`; SessionStart adds `source` (`startup`, `resume`,
`clear`, `compact`) and `model`; UserPromptSubmit adds `prompt`. Newer versions add fields
(`prompt_id`, `effort`, `agent_id`, ...), so unknown fields are ignored.

Codex (https://developers.openai.com/codex/hooks.md; schemas in openai/codex
`codex-rs/hooks/schema/generated/user-prompt-submit.command.input.schema.json` and
`session-start.command.output.schema.json`): the same wire format; UserPromptSubmit carries
`session_id`, `turn_id`, `transcript_path` (may be null), `cwd`, `hook_event_name`, `model`,
`permission_mode` and `prompt`; SessionStart carries `source` (`startup`, `resume`, `clear`).

Kiro CLI (aws/amazon-q-developer-cli `crates/chat-cli/src/cli/chat/cli/hooks.rs`,
`run_hook`): `{"hook_event_name": "agentSpawn"|"userPromptSubmit", "cwd": ..., "prompt": ...}`
(the prompt on userPromptSubmit only); whatever the command prints is added to the model's
context as it is, so the answer to Kiro is the plain text (`HookEvent.form` PLAIN).

Output, the same for Claude Code and Codex: exit 0 with
`{"hookSpecificOutput": {"hookEventName": "<event>", "additionalContext": "<text>"}}` on stdout
adds the text to the model's context; printing nothing adds nothing.

Gemini CLI (google-gemini/gemini-cli `docs/hooks/reference.md`, `packages/core/src/hooks/`):
every event carries `session_id`, `transcript_path`, `cwd`, `hook_event_name` and `timestamp`;
`SessionStart` adds `source` (`startup`, `resume`, `clear`), `BeforeAgent` (a submitted prompt)
adds `prompt`. The answer is the same JSON `hookSpecificOutput.additionalContext`, named by
Gemini's event (`BeforeAgent`; Gemini reads only `additionalContext`).

Cursor (hooks in `~/.cursor/hooks.json`; payloads captured from Cursor 3.17/3.18 in
fusengine/harness `test/fixtures/cursor/`): every event carries `conversation_id`,
`generation_id`, `model`, `hook_event_name` (`sessionStart`, `beforeSubmitPrompt`, ...),
`cursor_version`, `workspace_roots` (the open folders; the cwd is the first) and
`transcript_path`; `sessionStart` adds `session_id`, `is_background_agent`, `composer_mode`.
Only `sessionStart` can add context: it prints `{"additional_context": "<text>"}` (its other
output is `env`); `beforeSubmitPrompt` answers only `continue` / `user_message`, so a Cursor
prompt gets memory through MCP, not a hook. The command names the agent (`--agent cursor`).
"""

from __future__ import annotations

import json

SESSION_START = "SessionStart"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
# The CLI's subcommand -> the event it answers.
EVENTS = {"session-start": SESSION_START, "prompt": USER_PROMPT_SUBMIT}
# How the answer is written: JSON `hookSpecificOutput` (Claude Code, Codex; Gemini CLI's names its
# own event), the text itself (Kiro CLI), or Cursor's `{"additional_context": ...}`.
JSON, PLAIN, CURSOR, GEMINI = "json", "plain", "cursor", "gemini"
AGENTS = ("claude-code", "codex", "kiro", CURSOR)  # the --agent values (Cursor's is installed)
# Other agents' event names -> (our event, the answer's form).
_NAMED = {
    "agentSpawn": (SESSION_START, PLAIN),  # Kiro CLI (camelCase `HookTrigger`)
    "userPromptSubmit": (USER_PROMPT_SUBMIT, PLAIN),
    "sessionStart": (SESSION_START, CURSOR),
    "beforeSubmitPrompt": (USER_PROMPT_SUBMIT, CURSOR),
    "BeforeAgent": (USER_PROMPT_SUBMIT, GEMINI),  # Gemini CLI (its SessionStart is Claude's)
}
# The event name a Gemini CLI answer gives (hookSpecificOutput.hookEventName).
_GEMINI_EVENTS = {SESSION_START: "SessionStart", USER_PROMPT_SUBMIT: "BeforeAgent"}


class PayloadError(ValueError):
    """Stdin is not a hook payload (not a JSON object)."""


class HookEvent:
    """One hook call. A plain class: `dataclasses` imports `inspect` and more, a cost the
    per-prompt client pays on every prompt."""

    __slots__ = ("cwd", "event", "form", "prompt", "session_id", "source")

    def __init__(
        self,
        event: str,  # SESSION_START or USER_PROMPT_SUBMIT
        prompt: str,  # "" at session start
        cwd: str | None,
        source: str | None,  # session start: startup, resume, clear, compact
        session_id: str | None,
        form: str = JSON,  # how the agent reads the answer (JSON, PLAIN, CURSOR, GEMINI)
    ) -> None:
        self.form = form
        self.event = event
        self.prompt = prompt
        self.cwd = cwd
        self.source = source
        self.session_id = session_id


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse(raw: str | bytes, command_event: str) -> HookEvent:
    """The event in `raw` (stdin). `command_event` is the event the command was installed for;
    a payload naming the other known event wins (the output must name the event that ran)."""
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise PayloadError(f"stdin is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise PayloadError("stdin is not a JSON object")
    named = _text(data.get("hook_event_name"))
    named, form = _NAMED.get(named or "", (named, JSON))
    event = named if named in (SESSION_START, USER_PROMPT_SUBMIT) else command_event
    roots = data.get("workspace_roots")
    first_root = roots[0] if isinstance(roots, list) and roots else None
    return HookEvent(
        event=event,
        prompt=(_text(data.get("prompt")) or "") if event == USER_PROMPT_SUBMIT else "",
        cwd=_text(data.get("cwd")) or _text(first_root) or None,
        source=_text(data.get("source")),
        session_id=_text(data.get("session_id")) or _text(data.get("conversation_id")),
        form=form,
    )


def output(event: str, text: str, form: str = JSON) -> str:
    """The stdout that adds `text` to the model's context, in the agent's `form`."""
    if form == PLAIN:
        return text if text.endswith("\n") else text + "\n"
    if form == CURSOR:
        return json.dumps({"additional_context": text})
    if form == GEMINI:
        event = _GEMINI_EVENTS.get(event, event)
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
