"""Prompt and answer text as Codex writes it: content lists, wrappers, injected context.

"Notes §x" refers to `transcript-formats.md` section 1 (OpenAI Codex CLI). Every function here
takes whatever a record holds and never raises: a content part of the wrong shape is skipped
(the normaliser records it), the rest of the text is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Injected context that Codex writes as role:"user" ResponseItems (notes §1.5,
# CONTEXTUAL_USER_FRAGMENTS). Only consulted where no user_message events exist.
CONTEXT_PREFIXES = (
    "# agents.md instructions for",
    "<user_instructions>",
    "<environment_context>",
    "<instructions>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<subagent_commentary>",
    "<permissions instructions>",
    "<collaboration_mode>",
)
USER_MESSAGE_BEGIN = "## My request for Codex:"  # notes §1.6 (USER_MESSAGE_BEGIN)
_MEM_CITATION_RE = re.compile(r"<oai-mem-citation>.*?</oai-mem-citation>", re.S)
_IMAGE_PARTS = ("image", "local_image", "input_image")


def strip_user_prefix(text: str) -> str:
    """Drop the legacy `## My request for Codex:` wrapper (state/src/extract.rs)."""
    idx = text.find(USER_MESSAGE_BEGIN)
    if idx >= 0:
        return text[idx + len(USER_MESSAGE_BEGIN) :].strip()
    return text.strip()


def is_context_text(text: str) -> bool:
    return text.lstrip().lower().startswith(CONTEXT_PREFIXES)


def clean_outcome(text: str) -> str:
    return _MEM_CITATION_RE.sub("", text).strip()


def content_problem(content: Any) -> str | None:
    """Why a ResponseItem/TurnItem content value is malformed, or None when it is fine.

    A string, null or a list of objects with a string `type` (and a string `text` if any) is
    fine; anything else is reported once per line while the usable parts are still read.
    """
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"content is a JSON {type(content).__name__}, not a list"
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            return f"content[{i}] is a JSON {type(part).__name__}, not an object"
        if not isinstance(part.get("type"), str):
            return f"content[{i}].type is not a string"
        if "text" in part and part["text"] is not None and not isinstance(part["text"], str):
            return f"content[{i}].text is not a string"
    return None


def content_text(content: Any, types: Iterable[str]) -> str:
    """Join the text parts of a ResponseItem/TurnItem content list (malformed parts skipped)."""
    wanted = tuple(types)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for part in content:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            continue
        if part["type"] in wanted:
            text = part.get("text")
            if isinstance(text, str) and text:
                parts.append(text)
    return "\n".join(parts)


def image_count(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(
        1
        for part in content
        if isinstance(part, dict)
        and isinstance(part.get("type"), str)
        and part["type"] in _IMAGE_PARTS
    )


def list_len(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def prompt_text(text: str, images: int) -> str:
    """A prompt's text; an image-only message becomes `[image]` markers so it is not empty."""
    text = strip_user_prefix(text)
    if text or images <= 0:
        return text
    return " ".join(["[image]"] * images)


def norm_space(text: str) -> str:
    return " ".join(text.split())


def is_prompt_copy(title: str, prompts: Iterable[str | None]) -> bool:
    """True when `title` is just (a truncation of) the first prompt."""
    t = norm_space(strip_user_prefix(title))
    if not t:
        return True
    for prompt in prompts:
        if not prompt:
            continue
        p = norm_space(strip_user_prefix(prompt))
        if t == p or (p.startswith(t.rstrip(".…").rstrip()) and len(t) >= 8):
            return True
    return False
