"""Redaction layer (c), the last: **random-looking tokens** with no context.

A word of at least REDACT_TOKEN_MIN_CHARS letters and digits holding all of upper case, lower
case and digits, with a Shannon entropy of at least REDACT_TOKEN_MIN_ENTROPY bits per character
and no real words in it (its pieces, split at case and digit changes, average at most
REDACT_TOKEN_MAX_WORD_MEAN characters). These are kept, by design: hex of any length (git SHAs
short and long, sha256/md5 digests, UUIDs, container ids), tokens after `sha256:`, `sha512-`,
`h1:`, `base64,` or an SSH key type (public keys), certificate and public key blocks, anything
in a URL without credentials, file paths (judged by their segments), Stripe object ids (`cus_`,
`pi_`...), version strings, identifiers (camelCase, snake_case, dotted module paths: their
words are long), and base64 that decodes to text.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter

from memory_pipeline.capture.redact.shared import _MARK, Redactions, _in_mark, _words
from memory_pipeline.tuning import (
    REDACT_TOKEN_MAX_WORD_MEAN,
    REDACT_TOKEN_MIN_CHARS,
    REDACT_TOKEN_MIN_ENTROPY,
)

_TOKEN_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_UPPER = re.compile("[A-Z]")
_LOWER = re.compile("[a-z]")
_DIGIT = re.compile("[0-9]")
# Object ids that look random but are no credential: Stripe's (`cus_`, `pi_`, `ch_`, ...) and
# the model APIs' (`toolu_`, `msg_`, `req_`, `call_`, `chatcmpl-`, `resp_`, `thread_`...) and
# OpenCode's session, message and part ids (`ses_`, `msg_`, `prt_`: 12 hex of time, 14 random).
_PUBLIC_ID = re.compile(
    r"(?:(?:ses|prt|per|que|usr|pty|wrk)_[0-9a-f]{12}[0-9A-Za-z]{14})"
    r"|(?:cus|pi|ch|in|sub|pm|py|txn|evt|prod|price|acct|cs|seti|src|ii|il|po|tr|ba|card|si|sli"
    r"|pl|pyr|cbtxn|fee|iv|ipi|ic|qt|dp|du|toolu|srvtoolu|msg|req|call|chatcmpl|resp|run|thread"
    r"|asst|batch|file|step|vs|ftjob|ft|compl|fc|rs|ws)[_-][A-Za-z0-9]{8,40}"
)
_PATH_WORD = re.compile(r"[a-z][a-z_.-]{3,}|\.[a-z]+|~")
_HEXLIKE = re.compile(r"[0-9a-f\-]+|[0-9A-F\-]+")
_HASH_PREFIX = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)?|md5|blake2[bs]?|sha3-\d+|xxh\d*)[-:_]")
# What comes right before a run that makes it a hash or a public value, not a secret.
_HASH_BEFORE = re.compile(
    r"(?i)(?:sha(?:1|224|256|384|512)?|md5|blake2[bs]?|h1|xxh\d*|crc\d*)[:=]$|base64,$|://$|@$"
)
_PUBLIC_KEY_BEFORE = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)"
    r"@openssh\.com)[ \t]+$"
)
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN (?!(?:[A-Z0-9]+ )*PRIVATE KEY)[A-Z0-9 ]+-----[\s\S]{0,40000}?"
    r"-----END [A-Z0-9 ]+-----"
)


def _is_random_token(token: str) -> bool:
    """Random-looking: long, all of upper, lower and digits, high entropy, no real words.

    A path (`dist/assets/index-kDCy8vvO.js`) is judged by its segments: one that is a word of
    four letters or more makes the rest a path, and then only a long random segment counts.
    """
    if len(token) < REDACT_TOKEN_MIN_CHARS or _HEXLIKE.fullmatch(token):
        return False
    if token.startswith("//") or _HASH_PREFIX.match(token) or _PUBLIC_ID.fullmatch(token):
        return False
    if "/" in token:
        segments = token.split("/")
        if any(_PATH_WORD.fullmatch(seg) for seg in segments):
            return any(_is_random_token(seg) for seg in segments if "/" not in seg)
    if not (_UPPER.search(token) and _LOWER.search(token) and _DIGIT.search(token)):
        return False
    words = _TOKEN_WORDS.findall(token)
    letters = sum(map(len, words))
    if letters < REDACT_TOKEN_MIN_CHARS or letters / len(words) > REDACT_TOKEN_MAX_WORD_MEAN:
        return False
    n = len(token)
    entropy = -sum(k / n * math.log2(k / n) for k in Counter(token).values())
    if entropy < REDACT_TOKEN_MIN_ENTROPY:
        return False
    return not _is_base64_text(token)


def _is_base64_text(token: str) -> bool:
    """Base64 of ordinary text (`aGVsbG8gd29ybGQ=`): kept unless a secret's name stands by it."""
    if not re.fullmatch(r"[A-Za-z0-9+/]+=*|[A-Za-z0-9_-]+=*", token):
        return False
    try:
        decoded = base64.b64decode(
            token.replace("-", "+").replace("_", "/") + "=" * (-len(token) % 4)
        )
    except ValueError:
        return False
    if not decoded:
        return False
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in decoded)
    return printable / len(decoded) >= 0.95


def _sub_random(text: str, found: Redactions) -> str:
    skip = [m.span() for m in _PUBLIC_BLOCK.finditer(text)] if "-----BEGIN" in text else []
    pieces: list[str] = []
    done = 0
    for word in _words(text):
        token = word.group(0).rstrip(".-/")
        start = word.start()
        if len(token) < REDACT_TOKEN_MIN_CHARS or not _is_random_token(token):
            continue
        before = text[max(0, start - 40) : start]
        if _HASH_BEFORE.search(before) or _PUBLIC_KEY_BEFORE.search(before):
            continue
        wide = text[max(0, start - 80) : start]
        glued = wide.split()[-1] if wide and not wide[-1].isspace() else ""
        if _MARK in glued:
            continue  # glued to a redaction (`[REDACTED:x]:tail`): judged with it, so twice is once
        if _in_mark(text, start) or any(a <= start < b for a, b in skip):
            continue
        pieces += [text[done:start], f"{_MARK}random_token]"]
        done = start + len(token)
        found.count("random_token")
    return "".join([*pieces, text[done:]]) if pieces else text
