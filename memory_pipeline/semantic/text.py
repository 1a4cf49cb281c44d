"""Small, dependency-free text helpers shared by the offline semantic pass and the classifier.

Everything here is deterministic and language-light (English-first): sentence splitting that
survives markdown and code, content-word tokenization with a stopword list and a light suffix
stemmer, and trimming to a word boundary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Abbreviations whose trailing period does not end a sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "cf.", "mr.", "mrs.", "dr.")
_ABBREVIATION = re.compile(
    r"(?<![A-Za-z])(?:" + "|".join(re.escape(a) for a in _ABBREVIATIONS) + ")", re.IGNORECASE
)
_CODE_SPAN = re.compile(r"`[^`\n]+`")
# A sentence ends at . ! ? followed by space and a capital, digit, quote or code span - or, since
# chat prompts are often typed in lower case, by a lower-case word after a word character.
_SENTENCE_END = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[`*\x01]*[A-Z0-9`\"'(\[*\x01])"
    r"|(?<=[A-Za-z0-9)\]`\x02][.!?])\s+(?=[a-z])"
)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)]|#{1,6})\s+")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_WS = re.compile(r"\s+")
_BOLD = re.compile(r"(?<![\w*])\*\*(\S(?:.*?\S)?)\*\*(?![\w*])")  # markdown **bold**

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further get got had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've if in into is isn't it it's its itself just let let's like make me more
    most mustn't my myself need no nor not now of off on once only or other ought our ours
    ourselves out over own please same shan't she she'd she'll she's should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they they'd
    they'll they're they've this those through to too under until up us use used using very
    was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's will with won't would wouldn't yes you you'd you'll
    you're you've your yours yourself yourselves ok okay sure thanks thank hi hey hello great
    one two also just really actually maybe want wanted still already done go going lets
    something anything everything thing things way ways bit lot lots back right well good new
    first next last see look looks able add added change changed file files code run try tried
    work works working made fix fixed
    """.split()  # noqa: SIM905 - a word list reads better as text
)


_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:[.'-][A-Za-z0-9_]+)*|\d+(?:\.\d+)?")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def normalize_ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


def strip_code_blocks(text: str) -> str:
    """Replace fenced code blocks by a placeholder sentence break (code is not prose)."""
    return _FENCE.sub("\n", text)


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; bullets, headings and blank lines are hard breaks.

    Fenced code blocks are dropped: a cue phrase inside code is not a statement.
    """
    text = strip_code_blocks(text)
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            out.extend(_split_prose(" ".join(block)))
            block.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            continue
        if _BULLET.match(line):
            flush()
            line = _BULLET.sub("", line)
        block.append(line)
    flush()
    return [s for s in out if s]


def _split_prose(text: str) -> list[str]:
    """Split one block of prose; abbreviations and inline code spans never end a sentence."""
    kept: list[str] = []

    def hide(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"\x01{len(kept) - 1}\x02"

    protected = _ABBREVIATION.sub(hide, _CODE_SPAN.sub(hide, normalize_ws(text)))
    restored = []
    for part in _SENTENCE_END.split(protected):
        while "\x01" in part:  # spans can nest (an abbreviation inside restored code): loop
            part = re.sub(r"\x01(\d+)\x02", lambda m: kept[int(m.group(1))], part)
        part = _BOLD.sub(r"\1", part).strip()
        if part:
            restored.append(part)
    return restored


def stem(word: str) -> str:
    """A light suffix stemmer: enough to match decide/decided/deciding, cache/caching/caches."""
    if len(word) <= 4 or not word.isalpha():
        return word
    for suffix, repl in (
        ("ies", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("ly", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                return word
            word = word[: len(word) - len(suffix)] + repl
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    return word


def content_terms(text: str) -> list[str]:
    """Stemmed content words of `text` in order: no stopwords, no 1-2 letter tokens.

    Identifiers are kept whole and also split into their parts (snake_case, camelCase, dotted),
    so `retry_policy` matches a later "retry policy".
    """
    terms: list[str] = []
    for tok in _TOKEN.findall(text):
        parts = [tok]
        pieces = [p for p in re.split(r"[._'-]+", _CAMEL.sub("_", tok)) if p]
        if len(pieces) > 1:
            parts.extend(pieces)
        for part in parts:
            low = part.lower().strip("'")
            if low.endswith("'s"):
                low = low[:-2]
            if len(low) < 3 or low in STOPWORDS or low.isdigit():
                continue
            terms.append(stem(low))
    return terms


def trim_words(text: str, max_chars: int) -> str:
    """Cut `text` to at most `max_chars` on a word boundary, adding an ellipsis when cut."""
    text = normalize_ws(text)
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-—") + "…"


def first_sentences(text: str, max_chars: int, max_sentences: int = 2) -> str:
    """The first sentences of `text`, trimmed to `max_chars`."""
    sentences = split_sentences(text)[:max_sentences]
    return trim_words(" ".join(sentences) if sentences else text, max_chars)


def capitalize_first(text: str) -> str:
    """Upper-case the first letter, unless the text opens with an identifier (`snake_case`,
    `camelCase`, a path or code), whose case is part of its name."""
    first = text.split(" ", 1)[0]
    if not text or re.search(r"[_/`]|[a-z][A-Z]|\.\w", first):
        return text
    return text[:1].upper() + text[1:]


def ensure_period(text: str) -> str:
    text = text.rstrip()
    if not text or text[-1] in ".!?…:":
        return text
    return text + "."


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)
