"""Cutting a document's sections into passages: at headings (the sections), then paragraphs.

A section that fits INBOX_PASSAGE_MAX_CHARS is one passage. A longer one is cut at paragraph
breaks (blank lines), a paragraph too long at sentence ends, a sentence too long at words; the
pieces of one section keep its position. Cue groups of a video are already short (readers.py).
`iter_passages` cuts them as the sections come (a large document is never held whole).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from memory_pipeline import tuning
from memory_pipeline.inbox.readers import Section

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Passage:
    ordinal: int
    position: str
    heading: str
    text: str


def passages(sections: list[Section], limit: int = tuning.INBOX_PASSAGE_MAX_CHARS) -> list[Passage]:
    return list(iter_passages(sections, limit))


def iter_passages(
    sections: Iterable[Section], limit: int = tuning.INBOX_PASSAGE_MAX_CHARS
) -> Iterator[Passage]:
    ordinal = 0
    for section in sections:
        for piece in _pack(section.text, limit):
            yield Passage(ordinal, section.position, section.heading, piece)
            ordinal += 1


def _pack(text: str, limit: int) -> list[str]:
    text = text.strip()
    if not text:
        return []
    if len(text) <= limit:
        return [text]
    units: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = para.strip()
        if not para:
            continue
        if len(para) <= limit:
            units.append(para)
            continue
        for sentence in _SENTENCE.split(para):
            while len(sentence) > limit:  # a sentence longer than a passage: at a word
                cut = sentence.rfind(" ", 0, limit)
                cut = cut if cut > 0 else limit
                units.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                units.append(sentence)
    pieces: list[str] = []
    current = ""
    for unit in units:
        joined = f"{current}\n\n{unit}" if current else unit
        if len(joined) <= limit:
            current = joined
        else:
            pieces.append(current)
            current = unit
    if current:
        pieces.append(current)
    return pieces
