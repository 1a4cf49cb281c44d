"""Segment titles from the prompts of a segment (or the task title)."""

from __future__ import annotations

import re

from memory_pipeline import tuning as T
from memory_pipeline.semantic.offline_rules.features import RuleTurn
from memory_pipeline.semantic.offline_rules.patterns import (
    GREETING,
    QUESTION_WORD,
    SHIFT_PREAMBLE,
    TITLE_OPENERS,
    TITLE_TAIL,
    clean,
    strip_end,
)
from memory_pipeline.semantic.text import (
    capitalize_first,
    content_terms,
    split_sentences,
    trim_words,
)


def segment_title(members: list[RuleTurn], task_title: str | None) -> str:
    for m in members:
        if len(m.prompt_terms) < T.SEGMENT_MIN_PROMPT_TERMS and m is not members[-1]:
            continue
        title = _title_from_prompt(m.turn.prompt)
        if title:
            return title
    if task_title and task_title.strip():
        return trim_words(task_title, T.SEGMENT_TITLE_MAX_CHARS)
    return f"Turns {members[0].ordinal}-{members[-1].ordinal}"


def _title_from_prompt(prompt: str) -> str:
    """A segment title from a prompt: its first sentence when short; else its question when it
    asks one; else the head of the first sentence before a colon or dash."""
    sentences = []
    for sentence in split_sentences(prompt)[:4]:
        s = clean(sentence)
        s = SHIFT_PREAMBLE.sub("", s)
        s = TITLE_OPENERS.sub("", GREETING.sub("", s))
        s = strip_end(TITLE_TAIL.split(s, maxsplit=1)[0])
        if len(content_terms(s)) >= 2 or (s and len(s.split()) >= 3):
            sentences.append(s)
    if not sentences:
        return ""
    first = sentences[0]
    if len(first) > T.SEGMENT_TITLE_SHORT_CHARS:
        questions = [
            s
            for s in sentences[1:]
            if QUESTION_WORD.match(s)
            and len(s) <= T.SEGMENT_TITLE_MAX_CHARS
            and len(content_terms(s)) >= 3
        ]
        if questions:
            first = questions[0]
        else:
            head = re.split(r"\s*(?:[:;]|\s[–—-])\s", first, maxsplit=1)[0]
            if len(head.split()) >= 3:
                first = head
    return capitalize_first(trim_words(first, T.SEGMENT_TITLE_MAX_CHARS))
