"""Redaction layer (b2), values: is the value after a secret's name the secret itself?

A rule (_Rule) is a pattern whose match names a value in any quoting; _sub_value finds each
value, judges it (_is_secret, by the name's strength from context_names.py) and replaces it.

What is not a literal value, because false positives destroy a memory's meaning:
   - lookups and placeholders: a call or subscript (`os.environ["API_KEY"]`, `env("X")`), an
     attribute (`settings.SECRET_KEY`), `$VAR`, `${VAR}`, `{{ var }}`, `{VAR}`, `<your-key>`,
     `[MASK]`, `%s`, `hf_***`, `ya29...`, `xxxxxx`, a path, a URL, a colour, `None`/`null`;
   - code around the value: `f(password=pw2)`, `private_key: PKCS7PrivateKeyTypes,`;
   - labels, values that name a secret instead of holding it: `"challengePassword"`,
     `"apiKey": "OPENAI_API_KEY"`, `PWD=password`;
   - words (letters joined by `_` or `-`): a variable or prose in code and YAML
     (`password=password`, `token: databricks-sdk is missing`). They count in a shell or .env
     line and on a command line (`DB_PASSWORD=changeme`, `--password secret`: there the word is
     the value), as a quoted password (`password = "swordfish"`), and as a quoted token only
     when long and in mixed case (a random one);
   - digits only, except for passwords (`PIN=493817` yes; `token: 400`, `MAX_TOKENS=4096` no).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memory_pipeline.capture.redact.context_names import _NAME_WORDS, Strength, _name_strength
from memory_pipeline.capture.redact.shared import (
    _BARE_NAME,
    _MARK,
    _STRIP_TAIL,
    _in_mark,
    _is_reference,
    _looks_random,
    _matches_at,
)
from memory_pipeline.tuning import REDACT_MIN_SECRET_CHARS, REDACT_RANDOM_MIN_CHARS

# One value in any quoting: \"json-escaped\", "double", 'single', `backtick`, or bare.
# The regexes look at most this far into a bare value; a secret that runs on is followed to its
# end only once it is judged one (_sub_value), so no input makes the scan quadratic.
_BARE_SCAN = 256
_VALUE = (
    r"""(?:\\"(?P<v1>[^"\\\n]{1,2000})\\"|"(?P<v2>[^"\n]{1,2000})"|'(?P<v3>[^'\n]{1,2000})'"""
    r"""|`(?P<v4>[^`\n]{1,2000})`|(?P<bare>(?![=\s])[^\s"'`]{1,""" + str(_BARE_SCAN) + "}))"
)
_BARE_REST = re.compile(r"[^\s\"'`]*")
# A value that is a secret's name, not the secret (_is_label).
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_LABEL_WORDS = frozenset(["password", "passwd", "pwd", "secret", "token", "apikey", "key"])
# Where a bare value ends outside shell form (_bare_value): the next parameter.
_NEXT_PARAMETER = re.compile(r"[,)\]}]|=(?=\w)|[;&](?=[A-Za-z_][\w.\-]*=)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_MIXED_CASE = re.compile(r"[a-z].*[A-Z]|[A-Z].*[a-z][A-Z]")


@dataclass(frozen=True)
class _Value:
    """A candidate value and where it stands."""

    text: str
    quoted: bool
    code: bool  # unquoted, or in `backticks`: may be an expression (`get_token()`)
    shell: bool  # text by construction (`.env` line, command line), never a variable
    after: str  # what follows the value on its line (the first few characters)

    @property
    def followed_by_code(self) -> bool:
        """`name: Type,` / `key: Type | None` / `f(token=tok)`: an annotation or an argument."""
        return self.after.lstrip(" ").startswith((",", ")", "]", "}", "|", "="))


@dataclass(frozen=True)
class _Rule:
    """A pattern whose match names a value (groups v1..v4 or `bare`), and how to judge it."""

    kind: str
    pattern: re.Pattern[str]
    strength: Callable[[re.Match[str]], Strength | None]  # None: not a secret's name
    shell: Callable[[re.Match[str]], bool]
    labels: bool = True  # a value that names a secret itself is a label, not the secret
    prose: frozenset[str] = frozenset()  # words that follow the name in prose, not values
    flags: bool = False  # a command line: a value starting with `-` is the next flag


def _sub_value(rule: _Rule, text: str, starts: Iterable[int] | None = None) -> tuple[str, int]:
    """Replace the value of each match of `rule` that is a secret.

    The value may lie beyond the match (a lookahead), so the text is spliced by hand; a match
    that starts inside a value already replaced is part of that secret and skipped. With
    `starts`, the pattern is tried at those positions only (a scan of the whole text costs more).
    """
    pieces: list[str] = []
    done = 0  # text[:done] is settled
    token = f"{_MARK}{rule.kind}]"
    matches = (
        rule.pattern.finditer(text) if starts is None else _matches_at(rule.pattern, text, starts)
    )
    for match in matches:
        strength = rule.strength(match) if match.start() >= done else None
        if strength is None:
            continue
        group = match.lastgroup or "bare"  # the value's group closes last
        start, stop = match.span(group)
        shell = rule.shell(match)
        value, end = match.group(group), stop
        if group == "bare":
            value, end = _bare_value(text, start, stop, shell)
        if not value or _MARK in value or value.lower() in rule.prose or _in_mark(text, start):
            continue
        if rule.flags and value.startswith("-"):
            continue
        after = text[end : end + 16].split("\n", 1)[0]
        candidate = _Value(value, group != "bare", group in ("bare", "v4"), shell, after)
        if not _is_secret(candidate, strength, rule.labels):
            continue
        if group == "bare" and end == stop and stop - start >= _BARE_SCAN:
            # The value ran past the scan window: follow it to its end (once per secret).
            value, end = _bare_value(text, start, _BARE_REST.match(text, stop).end(), shell)
        pieces += [text[done:start], token]
        done = end
    if not pieces:
        return text, 0
    return "".join([*pieces, text[done:]]), len(pieces) // 2


def _bare_value(text: str, start: int, stop: int, shell: bool) -> tuple[str, int]:
    """A bare value ends before trailing punctuation and, outside shell form, at the end of an
    expression or parameter (`,`, `)`, or `;`/`&` before `name=`: connection strings, queries)."""
    value = text[start:stop]
    if not shell:
        value = _NEXT_PARAMETER.split(value, maxsplit=1)[0]
    value = value.rstrip(_STRIP_TAIL)
    return value, start + len(value)


def _is_secret(value: _Value, strength: Strength, labels: bool) -> bool:
    """Is this value, assigned to a name of this strength, the secret itself?"""
    text = value.text
    if len(text) < REDACT_MIN_SECRET_CHARS or _is_reference(text, code=value.code):
        return False
    if _IDENTIFIER.fullmatch(text) and not (value.quoted or value.shell) and value.followed_by_code:
        return False  # `private_key: PKCS7PrivateKeyTypes,`, `f(password=pw2)`
    if labels and _is_label(text, value.shell):
        return False
    if strength == "weak":
        return _looks_random(text)
    if text.isdigit():
        return strength == "password"  # a PIN; never `token: 400`
    if not _BARE_NAME.fullmatch(text):
        return True  # digits or symbols: a literal
    # Only words: in code a variable (`password=password`) or prose (`token: databricks-sdk is
    # missing`), a sentinel for tokens (`_DEFAULT_TOKEN = "_sa_default"`); a password when
    # quoted, and anything in a shell or .env line.
    if value.shell or (value.quoted and strength == "password"):
        return True
    # A quoted token of letters only: random when long and in mixed case (`"qZxWvTrNp..."`).
    return (
        value.quoted
        and len(text) >= REDACT_RANDOM_MIN_CHARS
        and _MIXED_CASE.search(text) is not None
    )


def _is_label(text: str, shell: bool) -> bool:
    """A value that names a secret instead of holding it: `"challengePassword"`,
    `"apiKey": "OPENAI_API_KEY"`, `"s3.secret-access-key"`, and in a shell line only the bare
    word (`PWD=password`). Names are words: no run of digits, no stray letters."""
    if not _LABEL.fullmatch(text) or _looks_random(text):
        return False
    words = _NAME_WORDS.findall(text)
    if len(words) == 1 or shell:
        return len(words) == 1 and words[0].lower() in _LABEL_WORDS
    if sum(len(w) for w in words if w.isdigit()) > 3:
        return False
    for word, following in zip(words[1:], [*words[2:], ""], strict=True):
        if len(word) == 1 and word.isalpha() and not following.isdigit():
            return False  # `A0A0APWD` is no name; `X-Api-Key`, `s3.secret-access-key` are
    return _name_strength(text) is not None
