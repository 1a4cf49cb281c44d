"""serving.text.tokens reads runs of token characters (a translate + split for ASCII text)
instead of one regex over the whole text (issue 12: the rerank tokenizes ~190 candidates per
search). The rerank's overlaps, and so every ranking, depend on its exact output: it must equal
the regex definition it replaced on every kind of text."""

from __future__ import annotations

import random
import re
import unicodedata

from serving import text as T

_TOKEN = re.compile(r"[a-z0-9]+(?:[_.-][a-z0-9]+)*")
_SEP = re.compile(r"[_.-]")


def reference_tokens(text: str) -> frozenset[str]:
    """The definition: NFKC, lower case, _TOKEN over the whole text, identifiers' parts too."""
    out: set[str] = set()
    for tok in set(_TOKEN.findall(unicodedata.normalize("NFKC", text).lower())):
        for part in (tok, *_SEP.split(tok)):
            if len(part) >= 2 and part not in T._STOPWORDS:
                out.add(T._stem(part))
    return frozenset(out)


CASES = [
    "",
    "Use retry_policy.max_attempts=3 in api-gateway v2.1.0 (see RFC-42)!",
    "..leading and trailing.. -dash- __under__ a.b. x--y a..b 1.2.3-rc.4",
    "Running happily: the runner's runs ran; HAPPY happiness",
    "Ünïcödé café naïve résumé straße ﬁle İstanbul \u212aelvin x²",
    "tab\tnew\nline\r\ncarriage\x00nul and emoji \U0001f600 done",
    "The and of to a in is it for on with as was be by at",
    "path/to/file.py:12 --flag=value key=val foo@bar.com http://x.y/z?q=1&r=2",
    "lone \ud800surrogate retry_x \udcffpolicy-\ud800x.y, titlecase \u01c5ungla \u01c4",
]


def test_tokens_equal_the_regex_definition_on_chosen_texts() -> None:
    for text in CASES:
        T.tokens.cache_clear()
        assert T.tokens(text) == reference_tokens(text), text


def test_tokens_equal_the_regex_definition_on_random_texts() -> None:
    rng = random.Random(12)
    alphabet = "aZq09_.-- \t\n.,;:!?'\"()/İK\u212aéè\u0301ßﬁ²x_y-z..__ÄÖ"
    words = ["retry", "policy", "Postgres", "api_v2", "x.y", "don't", "HNSW", "café", "-", "."]
    for _ in range(3000):
        if rng.random() < 0.5:
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        else:
            text = rng.choice([" ", "", "_", ".", "\n"]).join(
                rng.choice(words) for _ in range(rng.randint(0, 12))
            )
        assert T.tokens(text) == reference_tokens(text), repr(text)
