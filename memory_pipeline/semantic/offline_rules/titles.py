"""Segment titles from the prompts of a segment (or the task title)."""

from __future__ import annotations

import re

from memory_pipeline import tuning as T
from memory_pipeline.models.sources import SOURCES
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
from memory_pipeline.semantic.offline_rules.scaffolding import is_scaffolding_sentence
from memory_pipeline.semantic.text import (
    capitalize_first,
    content_terms,
    split_sentences,
    trim_words,
)

_SOURCE_NAMES = {s.name: s.title_prefix for s in SOURCES}


def segment_title(members: list[RuleTurn], task_title: str | None, source: str = "") -> str:
    """The first usable prompt's subject (scaffolding removed, scaffolding.py); else the heading
    of the first answer (status words dropped); else the task title; else, when the turns state
    no subject at all (pure template text), a title that says so."""
    for m in members:
        if len(m.prompt_terms) < T.SEGMENT_MIN_PROMPT_TERMS and m is not members[-1]:
            continue
        title = _title_from_prompt(m.subject)
        if _usable(title):
            return title
    for m in members[:2]:
        title = _title_from_outcome(m.turn.outcome)
        if _usable(title):
            return title
    if task_title and task_title.strip() and _usable(task_title):
        return trim_words(task_title, T.SEGMENT_TITLE_MAX_CHARS)
    name = _SOURCE_NAMES.get(source, "Agent")
    return f"{name} turns {members[0].ordinal + 1}-{members[-1].ordinal + 1} with no stated subject"


def _usable(title: str) -> bool:
    """Not empty, not scaffolding, and naming something (two content words or three words)."""
    return bool(title) and not is_scaffolding_sentence(title) and len(content_terms(title)) >= 1


_STATUS_WORDS = re.compile(
    r"\s*(?:[-–—:]\s*)?\b(?:complete|completed|done|implemented|finished|ready|summary"
    r"|successful(?:ly)?|confirmed(?: feasible)?)\b\W*$",
    re.I,
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)
# A line that is bold as a whole stands for a heading ("**Epic: Unified transcript
# visualization**" under "All done. Here's a summary:").
_BOLD_LINE = re.compile(r"^\s{0,3}\*\*([^*\n]{6,120})\*\*\s*$", re.M)


def _title_from_outcome(outcome: str) -> str:
    """The first heading of an answer (else its first line in bold alone) that names something
    once its status word is gone ("## Phase 0 Investigation Complete" -> "Phase 0
    Investigation")."""
    for heading in [*_HEADING.findall(outcome)[:3], *_BOLD_LINE.findall(outcome)[:3]]:
        text = _STATUS_WORDS.sub("", clean(_EMOJI.sub("", heading))).strip(" :-–—")
        if len(content_terms(text)) >= 2 and not is_scaffolding_sentence(text):
            return capitalize_first(trim_words(text, T.SEGMENT_TITLE_MAX_CHARS))
    return ""


_EMOJI = re.compile(r"[\u2190-\u2bff\u2700-\u27bf\U0001F000-\U0001FAFF\ufe0f]")
# "I am running Claude Code on wsl and I would like to X" -> "I would like to X".
_CONTEXT_LEAD = re.compile(
    r"^i(?:'m| am) (?:running|using|on|working (?:on|in|with))\b[^.;]*?(?:,|\band)\s+"
    r"(?=i(?:'d| would) like|i (?:want|need))",
    re.I,
)


def _title_from_prompt(prompt: str) -> str:
    """A segment title from a prompt: its first sentence when short; else its question when it
    asks one; else the head of the first sentence before a colon or dash."""
    sentences = []
    for sentence in split_sentences(prompt)[:4]:
        s = clean(sentence)
        s = SHIFT_PREAMBLE.sub("", s)
        s = TITLE_OPENERS.sub("", _CONTEXT_LEAD.sub("", GREETING.sub("", s)))
        s = strip_end(TITLE_TAIL.split(s, maxsplit=1)[0])
        if _announces_only(s):
            continue  # "Add a new feature." names nothing: the next sentence does
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
            head, *rest = re.split(r"\s*(?:[:;]|\s[–—-])\s", first, maxsplit=1)
            if _announces_only(head) and rest:
                first = TITLE_OPENERS.sub("", rest[0])  # "One more change: X" -> "X"
            elif len(head.split()) >= 3:
                first = head
    return capitalize_first(trim_words(first, T.SEGMENT_TITLE_MAX_CHARS))


_ANNOUNCE = frozenset(content_terms(T.SEGMENT_TITLE_ANNOUNCE_WORDS))


def _announces_only(sentence: str) -> bool:
    """Only announcement words ("One more thing", "let's add a new feature"), at most
    SEGMENT_TITLE_ANNOUNCE_MAX_WORDS words."""
    words = sentence.split()
    return 0 < len(words) <= T.SEGMENT_TITLE_ANNOUNCE_MAX_WORDS and all(
        t in _ANNOUNCE for t in content_terms(sentence)
    )
