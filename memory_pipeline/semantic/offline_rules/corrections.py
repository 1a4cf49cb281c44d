"""Rule 3: a prompt that corrects the previous outcome, and what the user expected instead."""

from __future__ import annotations

import re

from memory_pipeline import tuning as T
from memory_pipeline.semantic.offline_rules.patterns import (
    ACK,
    CORRECTION,
    LEADING_NO,
    NEGATION_CLAUSE,
    NEGATION_ONLY_WORDS,
    clean,
)
from memory_pipeline.semantic.text import (
    capitalize_first,
    split_sentences,
    trim_words,
)


def is_correction(prompt: str) -> bool:
    head = prompt.strip()[: T.CORRECTION_SCAN_CHARS]
    if CORRECTION.search(head):
        return True
    return bool(LEADING_NO.search(head)) and not ACK.search(head)


def user_expected(prompt: str) -> str:
    """The correcting prompt without sentences that only negate ("No, that's wrong.")."""
    sentences = [clean(s) for s in split_sentences(prompt)]
    kept = []
    for s in sentences:
        words = re.findall(r"[a-z']+", s.lower())
        if kept or any(w not in NEGATION_ONLY_WORDS for w in words):
            kept.append(s)
    text = " ".join(kept) if kept else clean(prompt)
    text = NEGATION_CLAUSE.sub("", text) or text
    return trim_words(capitalize_first(text), T.CORRECTION_MAX_USER_EXPECTED_CHARS)
