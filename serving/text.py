"""Query and memory tokens for the overlap terms of the rerank."""

from __future__ import annotations

import functools
import re
import string
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


# Everything outside [a-z0-9_.-] ends a token, so tokens are found within maximal runs of
# those characters. After NFKC and lower(), every non-ASCII character is such a boundary:
# encoding with "replace" turns it into "?", and one C-level translate turns every non-token
# byte into a space, so a split yields the runs (no regex over the whole text).
_TOKEN_CHARS = frozenset((string.ascii_lowercase + string.digits + "_.-").encode())
_BOUNDARIES = bytes(b if b in _TOKEN_CHARS else 0x20 for b in range(256))


@functools.lru_cache(maxsize=1 << 16)
def _run_stems(run: bytes) -> tuple[str, ...]:
    """The stems one run of token characters contributes: a plain word is one token; a run
    with separators is cut into tokens by _TOKEN, each adding its parts. Runs repeat across
    texts far more than whole texts do, so this cache is what makes tokenizing cheap."""
    word = run.decode()
    if word.isalnum():
        return (_stem(word),) if len(word) >= 2 and word not in _STOPWORDS else ()
    out: set[str] = set()
    for tok in _TOKEN.findall(word):
        for part in (tok, *_PART_SEPARATOR.split(tok)):
            if len(part) >= 2 and part not in _STOPWORDS:
                out.add(_stem(part))
    return tuple(out)


@functools.lru_cache(maxsize=1 << 12)
def tokens(text: str) -> frozenset[str]:
    """Stemmed content tokens; identifiers also contribute their parts (retry_policy -> retry).

    Cached by text: a long-lived server reranks the same memories' texts search after search,
    and tokenizing about 160 candidates per search was a third of the full pipeline's time at
    100K memories. Each distinct run of token characters is split and stemmed once per
    process (_run_stems), which made a text not seen before about 1.8 times cheaper
    (issue 12). NFKC leaves ASCII text as it is, so only other text is normalized."""
    folded = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).lower()
    runs = folded.encode("ascii", "replace").translate(_BOUNDARIES).split()
    return frozenset().union(*map(_run_stems, set(runs)))


def overlap(query_tokens: frozenset[str], text_tokens: frozenset[str]) -> float:
    """Share of the query's tokens the text contains (0..1)."""
    if not query_tokens:
        return 0.0
    return len(query_tokens & text_tokens) / len(query_tokens)
