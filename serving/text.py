"""Query and memory tokens for the overlap terms of the rerank."""

from __future__ import annotations

import functools
import re
import unicodedata

from memory_pipeline.semantic.text import stem

# Function words only: in a query, words like "fix", "run" or "error" carry meaning.
_STOPWORDS = frozenset(
    """
    a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my no not of on or our so than that the their them then there these they
    this those to was we were what when where which who why will with would you your about
    after again all also any because before between both each few just more most other out over
    own same should some such too very via vs while
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_TOKEN = re.compile(r"[a-z0-9]+(?:[_.-][a-z0-9]+)*")
_PART_SEPARATOR = re.compile(r"[_.-]")
# The rerank tokenizes every candidate's whole text on each search: stemming the same words
# again and again was most of the full pipeline's time at 10K memories (issue 12).
_stem = functools.lru_cache(maxsize=1 << 16)(stem)


@functools.lru_cache(maxsize=1 << 12)
def tokens(text: str) -> frozenset[str]:
    """Stemmed content tokens; identifiers also contribute their parts (retry_policy -> retry).

    Cached by text: a long-lived server reranks the same memories' texts search after search,
    and tokenizing about 160 candidates per search was a third of the full pipeline's time at
    100K memories. Each distinct word is split and stemmed once per text."""
    out: set[str] = set()
    for tok in set(_TOKEN.findall(unicodedata.normalize("NFKC", text).lower())):
        for part in (tok, *_PART_SEPARATOR.split(tok)):
            if len(part) >= 2 and part not in _STOPWORDS:
                out.add(_stem(part))
    return frozenset(out)


def overlap(query_tokens: frozenset[str], text_tokens: frozenset[str]) -> float:
    """Share of the query's tokens the text contains (0..1)."""
    if not query_tokens:
        return 0.0
    return len(query_tokens & text_tokens) / len(query_tokens)
