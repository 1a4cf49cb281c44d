"""What several redaction layers share.

The marker every hit becomes (`[REDACTED:<kind>]`, _MARK) and the counts of one run
(Redactions); a lower-cased copy whose positions are the text's (_lower) and the keyword scans
that find where a rule may match (_find_all, _matches_at); the token-like words of a text
(_words); the substitution of a whole pattern that leaves a marker alone (_sub_shape); and the
judges of a value used by layers (b2) and (d): a lookup or placeholder is no secret
(_is_reference), a long run of letters and digits looks random (_looks_random).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from memory_pipeline.tuning import REDACT_RANDOM_MIN_CHARS, REDACT_RANDOM_MIN_RUN

_MARK = "[REDACTED:"


@dataclass
class Redactions:
    """Counts by kind, accumulated over everything redacted in one run."""

    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def add(self, other: Redactions) -> None:
        for kind, n in other.by_kind.items():
            self.by_kind[kind] = self.by_kind.get(kind, 0) + n

    def count(self, kind: str, n: int = 1) -> None:
        if n:
            self.by_kind[kind] = self.by_kind.get(kind, 0) + n


# Punctuation that ends a sentence or an expression after a value, not part of it.
_STRIP_TAIL = ".,;:!?)]}>"

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _lower(text: str) -> str:
    """Lower case with the same length, so a position in it is one in `text` (`"İ".lower()` is
    two characters: then only ASCII letters are lowered)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _find_all(low: str, words: Iterable[str], boundary: bool = False) -> list[int]:
    """Where each word occurs in `low` (at a word start only, with `boundary`)."""
    found = []
    for word in words:
        at = low.find(word)
        while at >= 0:
            if not boundary or at == 0 or not (low[at - 1].isalnum() or low[at - 1] == "_"):
                found.append(at)
            at = low.find(word, at + 1)
    return found


def _matches_at(
    pattern: re.Pattern[str], text: str, starts: Iterable[int]
) -> Iterator[re.Match[str]]:
    end = -1
    for at in sorted(set(starts)):
        if at < end:
            continue
        match = pattern.match(text, at)
        if match is not None:
            end = match.end()
            yield match


def _in_mark(text: str, at: int) -> bool:
    """Is `at` inside a `[REDACTED:kind]` marker (so that redacting twice changes nothing)?"""
    before = text[max(0, at - 40) : at]
    i = before.rfind(_MARK)
    return i >= 0 and "]" not in before[i:]


def _splice(match: re.Match[str], group: int, token: str) -> str:
    if group == 0:
        return token
    start, end = match.span(group)
    whole_start = match.start(0)
    whole = match.group(0)
    return whole[: start - whole_start] + token + whole[end - whole_start :]


def _sub_shape(pattern: re.Pattern[str], group: int, token: str, text: str) -> tuple[str, int]:
    """Replace each match (its `group`, or all of it for 0) by `token`; return the count."""
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if _MARK in match.group(group):
            return match.group(0)  # already redacted by an earlier, more specific pattern
        count += 1
        return _splice(match, group, token)

    return pattern.sub(replace, text), count


# A word that may be a token: letters, digits and `_-.+/~`, then any `=` padding. Shorter words
# hold no provider token (the shortest format, `AKIA` and 16, is 20 characters).
_WORD = re.compile(r"[A-Za-z0-9_\-.+/~]{16,}=*")
_LONG_CHUNK = re.compile(r"\S{16,}")


def _words(text: str) -> Iterator[re.Match[str]]:
    """The token-like words of a text, looked for inside its long runs of non-space only."""
    for chunk in _LONG_CHUNK.finditer(text):
        yield from _WORD.finditer(text, chunk.start(), chunk.end())


# Words, not a literal: letters joined by `_` or `-` (`password`, `new_password`, `read-only`).
_BARE_NAME = re.compile(r"[A-Za-z_]+(?:-[A-Za-z_]+)*")

# What makes a value a lookup or a placeholder (_is_reference).
_CALL_OR_INDEX = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*[(\[]")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_BRACKETED = re.compile(r"[\[<({].*[\]>)}]")
_PLACEHOLDER = re.compile(r"\.\.\.|\u2026|\*\*|%[sd(]|\{\}|x{6,}|X{6,}|0{8,}")
_COLOR = re.compile(r"#[0-9A-Fa-f]{3,8}")
_TEMPLATE = re.compile(r"\{[A-Za-z_]")  # f-string / format placeholder: `{API_KEY}`, `{path(x)}`
_REFERENCE_PREFIXES = ("$", "%", "{{", "{%", "#{", "<", _MARK)
_PATH_PREFIXES = ("/", "~/", "./", "../")
_NOT_SECRETS = frozenset(
    [
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "redacted",
        "hidden",
        "masked",
        "required",
        "optional",
    ]
)


def _is_reference(value: str, code: bool) -> bool:
    """A lookup or a placeholder, not the secret itself."""
    if value.startswith(_REFERENCE_PREFIXES) or "://" in value:
        return True
    if value.startswith(_PATH_PREFIXES) and not _looks_random(value):
        return True  # a path (a base64 secret may start with "/" too: that one looks random)
    if _BRACKETED.fullmatch(value) or _TEMPLATE.match(value) or len(set(value)) == 1:
        return True
    if value.lower() in _NOT_SECRETS or value.lower().startswith(("your_", "your-")):
        return True
    if _PLACEHOLDER.search(value) or _COLOR.fullmatch(value):
        return True  # elided `ya29.dr.AfM...`, masked `hf_***`, `%s`, `{}`, a colour `#d8dee9`
    if not code:
        return False
    # Code: a call, a subscript, an attribute, a tuple, list or dict.
    return bool(
        value.startswith(("(", "[", "{"))
        or _CALL_OR_INDEX.match(value)
        or _ATTRIBUTE.fullmatch(value)
    )


def _looks_random(value: str) -> bool:
    """Long, letters and digits, with a long unbroken alphanumeric run (hex, base64, tokens)."""
    if len(value) < REDACT_RANDOM_MIN_CHARS or "://" in value:
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    runs = re.findall(r"[A-Za-z0-9]+", value)
    return max(map(len, runs), default=0) >= REDACT_RANDOM_MIN_RUN
