"""Redaction layer (d): **passwords in prose**.

"my sudo password is X", "the wifi password: X", "pw for the db is X", "the admin password was
changed to X", "I set the root pw to X", "log in with password X", and "the api key is X" /
"my token for the API is X"; a password there is anything but a plain word (a word counts when
quoted), a key or token must look random (layer c, random_tokens.py) or be 32+ hex digits.
With no verb ("guest / password X") only a value that cannot be a word counts: 8+ characters
with a letter, a digit and a symbol, not hex (a UUID), a version or a call
(`password VARCHAR(255)`).
"""

from __future__ import annotations

import re

from memory_pipeline.capture.redact.random_tokens import _HEXLIKE, _is_random_token
from memory_pipeline.capture.redact.shared import (
    _BARE_NAME,
    _MARK,
    _STRIP_TAIL,
    Redactions,
    _find_all,
    _is_reference,
    _lower,
    _matches_at,
)
from memory_pipeline.tuning import REDACT_MIN_SECRET_CHARS

_PROSE_TAIL = (
    r"[ \t]*(?:\b(?:(?:is|was|has[ \t]+been|have[ \t]+been|got|is[ \t]+now)[ \t]+)?"
    r"(?:changed|set|reset|updated|rotated)[ \t]+to\b|\bis[ \t]+now\b|\bis\b|\bwas\b|:|=)[ \t]*"
    r"""(?:["'`](?P<q>[^"'`\n]{1,200})["'`]|(?P<v>[^\s"'`]+))"""
)
_PROSE_QUALIFIER = (
    r"(?:[ \t]+(?:for|of|on|to|at)[ \t]+(?:the[ \t]+|my[ \t]+|our[ \t]+|this[ \t]+|that[ \t]+)?"
    r"[\w.@\-]+(?:[ \t]+[\w.@\-]+)?)?"
)
_PROSE_PASSWORD = re.compile(
    r"(?i)\b(?:password|passphrase|passcode|passwd|pwd|pw)\b" + _PROSE_QUALIFIER + _PROSE_TAIL
)
_PROSE_WITH_PASSWORD = re.compile(
    r"(?i)\b(?:with|using|use)[ \t]+(?:the[ \t]+)?(?:password|passphrase|pw)[ \t]+"
    r"""(?:["'`](?P<q>[^"'`\n]{1,200})["'`]|(?P<v>[^\s"'`]+))"""
)
# "set the root pw to X", "changed my password to X": the verb comes before the noun.
_PROSE_SET_PASSWORD = re.compile(
    r"(?i)\b(?:set|changed|reset|updated|rotated)[ \t]+(?:(?:the|my|our|his|her|their)[ \t]+)?"
    r"(?:[\w.@\-]+[ \t]+){0,2}?(?:password|passphrase|passwd|pwd|pw)[ \t]+to[ \t]+"
    r"""(?:["'`](?P<q>[^"'`\n]{1,200})["'`]|(?P<v>[^\s"'`]+))"""
)
# "password X" with no verb: only a value that cannot be a word (`QHvyVW89-NfoMVvqC`).
_PROSE_BARE = re.compile(
    r"(?i)\b(?:password|passwd|passphrase|pw)[ \t]+(?P<q>(?!))?(?P<v>[^\s\"'`]+)"
)
_PASSWORD_LIKE = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9])(?=.*[!@#$%^&*~+=?-])\S{8,}")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-+][\w.]+)?")
_PROSE_SECRET = re.compile(
    r"(?i)\b(?:api[ _-]?key|token|secret|access[ _-]?key|auth[ _-]?token|client[ _-]?secret"
    r"|key)\b" + _PROSE_QUALIFIER + _PROSE_TAIL
)
_PROSE_HINTS = ("pass", "pw", "token", "secret", "key")


def _prose_value(match: re.Match[str]) -> tuple[str, int, bool] | None:
    group = "q" if match.group("q") is not None else "v"
    value = match.group(group)
    if group == "v":
        value = value.rstrip(_STRIP_TAIL + "'\"")
    if not value or _MARK in value or value.startswith(_MARK):
        return None
    return value, match.start(group), group == "q"


def _sub_prose(text: str, found: Redactions) -> str:
    low = _lower(text)
    if not any(hint in low for hint in _PROSE_HINTS):
        return text
    password: bool | None  # None: a password with no verb before it
    for pattern, password, nouns in (
        (_PROSE_PASSWORD, True, ("pass", "pw")),
        (_PROSE_WITH_PASSWORD, True, ("with", "using", "use")),
        (_PROSE_SET_PASSWORD, True, ("set", "changed", "reset", "updated", "rotated")),
        (_PROSE_BARE, None, ("pass", "pw")),
        (_PROSE_SECRET, False, ("api", "token", "secret", "access", "auth", "client", "key")),
    ):
        starts = _find_all(_lower(text), nouns, boundary=True)
        if not starts:
            continue
        pieces: list[str] = []
        done = 0
        for match in _matches_at(pattern, text, starts):
            got = _prose_value(match)
            if got is None or got[1] < done:
                continue
            value, start, quoted = got
            if password is None:  # no verb: only what cannot be a word
                if (
                    not _PASSWORD_LIKE.fullmatch(value)
                    or _HEXLIKE.fullmatch(value)
                    or _VERSION.fullmatch(value)
                    or not _is_prose_secret(value, False, True)
                ):
                    continue
            elif not _is_prose_secret(value, quoted, password):
                continue
            kind = "prose_secret" if password is False else "prose_password"
            pieces += [text[done:start], f"{_MARK}{kind}]"]
            done = start + len(value)
            found.count(kind)
        if pieces:
            text = "".join([*pieces, text[done:]])
    return text


def _is_prose_secret(value: str, quoted: bool, password: bool) -> bool:
    if _is_reference(value, code=True) or len(set(value)) == 1:
        return False
    if not password:  # `the api key is ...`: random, or a long hex key
        return _is_random_token(value) or (len(value) >= 32 and bool(_HEXLIKE.fullmatch(value)))
    if len(value) < REDACT_MIN_SECRET_CHARS:
        return False
    if value.isdigit():
        return True
    if _BARE_NAME.fullmatch(value):
        return quoted  # a word: prose ("the password is incorrect") unless quoted
    return True
