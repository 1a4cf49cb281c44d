"""Secret redaction, applied to every prompt, outcome, title and native-context string before
anything is stored.

Every hit becomes `[REDACTED:<kind>]`, so a reader can tell something was removed and what it
was, and redacting twice changes nothing. Two families of rules, the specific ones first:

1. **Known shapes**, redacted wherever they appear: a provider's token format (`sk-ant-`,
   `sk-proj-`, `ghp_`, `glpat-`, `npm_`, `hf_`, `SG.x.y`, `AKIA...`, `xoxb-`, `AIza`, `whsec_`,
   `pypi-AgE...`), PEM private keys, JWTs, Slack webhook URLs, the password of
   `scheme://user:password@host`, and `Authorization: Bearer|Basic` credentials.
2. **Named values**: assignments (`NAME=value`, `name: value`, `"name": "value"`, `name :=
   value`, `name => value`) with the name in any style (`DB_PASSWORD`, `clientSecret`,
   `SecretAccessKey`, `X-Api-Key`, `spring.datasource.password`), and command lines
   (`--password x`, `--token x`, `curl -u user:pass`, `.netrc`, SQL `PASSWORD 'x'`).
   The name says how sure we are:
   - a *secret name* ends in password, passwd, pwd, passphrase, secret, token or apikey, is a key
     with a secret qualifier (secret key, access key, private key, account key, signing key...),
     or is `DB_PASS`-like: its value is redacted when it is a literal of at least
     REDACT_MIN_SECRET_CHARS characters;
   - any other key name (`PRIMARY_KEY`, `SORT_KEY`, `STRIPE_KEY`, a bare `key`) and
     `*signature`: only when the value looks random: at least REDACT_RANDOM_MIN_CHARS
     characters, letters and digits, and an unbroken alphanumeric run of REDACT_RANDOM_MIN_RUN
     (hex and base64 keys do; `id`, `created_at`, `user_profile_v2` do not).

   What is *not* a literal, because false positives destroy a memory's meaning:
   - lookups and placeholders: a call or subscript (`os.environ["API_KEY"]`, `env("X")`), an
     attribute (`settings.SECRET_KEY`), `$VAR`, `${VAR}`, `{{ var }}`, `{VAR}`, `<your-key>`,
     `[MASK]`, `%s`, `hf_***`, `ya29...`, a path, a URL, a colour, `None`/`null`, `xxxx`;
   - code around the value: `f(password=pw2)`, `private_key: PKCS7PrivateKeyTypes,`;
   - labels, values that name a secret instead of holding it: `"challengePassword"`,
     `"apiKey": "OPENAI_API_KEY"`, `PWD=password`;
   - words (letters joined by `_` or `-`): a variable or prose in code and YAML
     (`password=password`, `token: databricks-sdk is missing`). They count in a shell or .env
     line and on a command line (`DB_PASSWORD=changeme`, `--password secret`: there the word is
     the value), as a quoted password (`password = "swordfish"`), and as a quoted token only
     when long and in mixed case (a random one);
   - digits only, except for passwords (`PIN=493817` yes; `token: 400`, `MAX_TOKENS=4096` no).

Prose never matches: "the KEY point is", "password reset flow" and "token budget of 400" name no
value. What this does not catch: a password shorter than REDACT_MIN_SECRET_CHARS, a word-only
password in code or YAML (`password: hunter`), and a random value after a name that says nothing
(`x = "c2VjcmV0..."`) whose shape is not a known one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from memory_pipeline.forget.privacy import PRIVATE_KIND, strip_private
from memory_pipeline.tuning import (
    REDACT_MIN_SECRET_CHARS,
    REDACT_RANDOM_MIN_CHARS,
    REDACT_RANDOM_MIN_RUN,
)

_MARK = "[REDACTED:"

# --- 1. known shapes: (kind, pattern, group to replace: 0 = whole match) -----------------------
_SHAPES: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private_key",
        re.compile(
            # up to the next BEGIN at most, so a text full of markers stays linear
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:(?!-----BEGIN )[\s\S]){0,20000}?"
            r"-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
        0,
    ),
    (  # cut short: the marker and the base64 lines that follow it (a lone marker is no secret)
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[ \t]*\r?\n"
            r"(?:[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*(?:\r?\n|\Z))+"
        ),
        0,
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), 0),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("stripe_webhook_secret", re.compile(r"\bwhsec_[A-Za-z0-9+/=]{24,}"), 0),
    ("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        0,
    ),
    ("gitlab_token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,}"), 0),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36,}"), 0),
    ("pypi_token", re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}"), 0),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), 0),
    ("sendgrid_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), 0),
    (
        "slack_token",
        re.compile(r"\b(?:xox[abeprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"),
        0,
    ),
    (
        "slack_webhook",
        re.compile(r"\bhooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_-]{20,})"),
        1,
    ),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("bearer_token", re.compile(r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)"), 1),
    (
        "basic_auth",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization\b[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"basic[ \t]+([A-Za-z0-9+/]{8,}=*)"
        ),
        1,
    ),
    # scheme://user:password@host -> keep the user and host, drop the password
    ("url_password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@"), 1),
]

# --- 2. assignments and command lines --------------------------------------------------------

Strength = Literal["password", "secret", "weak"]

# One value in any quoting: \"json-escaped\", "double", 'single', `backtick`, or bare.
# The regexes look at most this far into a bare value; a secret that runs on is followed to its
# end only once it is judged one (_sub_value), so no input makes the scan quadratic.
_BARE_SCAN = 256
_VALUE = (
    r"""(?:\\"(?P<v1>[^"\\\n]{1,2000})\\"|"(?P<v2>[^"\n]{1,2000})"|'(?P<v3>[^'\n]{1,2000})'"""
    r"""|`(?P<v4>[^`\n]{1,2000})`|(?P<bare>(?![=\s])[^\s"'`]{1,""" + str(_BARE_SCAN) + "}))"
)
_BARE_REST = re.compile(r"[^\s\"'`]*")
# Every value below is only looked at (lookahead), not consumed: a value that is not a secret
# may hold the next match (`AccountName=acme;AccountKey=...`, `--password --token x`), and
# the scan must reach it.
_ASSIGNMENT = re.compile(
    r"(?P<q>\\?[\"']?)(?<![\w.\-])"  # a name starts after a quote or a non-name character
    # only names that could be secret ones (see _name_strength) reach the Python judge
    r"(?P<name>(?=[A-Za-z0-9_.\-]*?(?i:pass|pwd|secret|token|key|sig))[A-Za-z_][A-Za-z0-9_.\-]*+)"
    r"(?P=q)"
    r"(?P<sp1>[ \t]*)(?P<op>:=|=>|=|:)(?P<sp2>[ \t]*)(?=" + _VALUE + ")"
)
_FLAG = re.compile(
    r"(?i)(?<![\w-])--(?P<name>password|passwd|pass|passphrase|token|secret|api-?key|access-token"
    r"|auth-token|client-secret|secret-key|access-key|private-key)(?:=|[ \t]+)(?=" + _VALUE + ")"
)
_CURL_USER = re.compile(
    r"\bcurl\b[^\n]{0,500}?\s(?:-u[ \t]*|--user[ \t]+|--user=)['\"]?[^\s:'\"]+:"
    r"(?=(?P<bare>[^\s'\"@]{1," + str(_BARE_SCAN) + "}))"
)
_NETRC = re.compile(r"(?i)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?=(?P<bare>\S+))")
# SQL: `CREATE ROLE app WITH PASSWORD 'x'`, `IDENTIFIED BY 'x'`.
_SQL_PASSWORD = re.compile(r"(?i)\b(?:password|identified\s+by)\s+(?='(?P<v3>[^'\n]+)')")

_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_ENDINGS = ("password", "passwd", "passphrase", "pwd")
_SECRET_ENDINGS = (
    "secret",
    "token",
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "accountkey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "authkey",
    "sharedkey",
    "clientkey",
    "hmackey",
    "secretkeybase",
)
_WEAK_ENDINGS = ("key", "signature")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
# Words, not a literal: letters joined by `_` or `-` (`password`, `new_password`, `read-only`).
_BARE_NAME = re.compile(r"[A-Za-z_]+(?:-[A-Za-z_]+)*")
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_LABEL_WORDS = frozenset(["password", "passwd", "pwd", "secret", "token", "apikey", "key"])
_CALL_OR_INDEX = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*[(\[]")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_BRACKETED = re.compile(r"[\[<({].*[\]>)}]")
_PLACEHOLDER = re.compile(r"\.\.\.|\u2026|\*\*|%[sd(]|\{\}")
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
# Words that follow a flag in prose ("the --token option"), never a flag's value.
_FLAG_PROSE = frozenset(
    [
        "option",
        "options",
        "argument",
        "arguments",
        "parameter",
        "parameters",
        "switch",
        "instead",
        "expects",
        "accepts",
        "requires",
        "should",
    ]
)
_STRIP_TAIL = ".,;:!?)]}>"
_NEXT_PARAMETER = re.compile(r"[,)\]}]|=(?=\w)|[;&](?=[A-Za-z_][\w.\-]*=)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_MIXED_CASE = re.compile(r"[a-z].*[A-Z]|[A-Z].*[a-z][A-Z]")
# Words before `_pass` that make it a password (`smtp_pass`), unlike `args_to_pass`.
_PASS_OWNERS = frozenset(
    ["db", "user", "admin", "root", "smtp", "mail", "ftp", "ldap", "redis", "mysql", "pg", "proxy"]
)


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


def redact(text: str) -> tuple[str, Redactions]:
    """Return the text with secrets replaced, and what was replaced.

    `<private>` blocks go first (forget/privacy.py): what they hold is never stored nor scanned.
    """
    found = Redactions()
    text, n = strip_private(text)
    found.count(PRIVATE_KIND, n)
    for kind, pattern, group in _SHAPES:
        text, n = _sub_shape(pattern, group, f"{_MARK}{kind}]", text)
        found.count(kind, n)
    for rule in _RULES:
        text, n = _sub_value(rule, text)
        found.count(rule.kind, n)
    return text, found


def _sub_shape(pattern: re.Pattern[str], group: int, token: str, text: str) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if _MARK in match.group(group):
            return match.group(0)  # already redacted by an earlier, more specific pattern
        count += 1
        return _splice(match, group, token)

    return pattern.sub(replace, text), count


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


def _sub_value(rule: _Rule, text: str) -> tuple[str, int]:
    """Replace the value of each match of `rule` that is a secret.

    The value may lie beyond the match (a lookahead), so the text is spliced by hand; a match
    that starts inside a value already replaced is part of that secret and skipped.
    """
    pieces: list[str] = []
    done = 0  # text[:done] is settled
    token = f"{_MARK}{rule.kind}]"
    for match in rule.pattern.finditer(text):
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


def _splice(match: re.Match[str], group: int, token: str) -> str:
    if group == 0:
        return token
    start, end = match.span(group)
    whole_start = match.start(0)
    whole = match.group(0)
    return whole[: start - whole_start] + token + whole[end - whole_start :]


def _in_mark(text: str, at: int) -> bool:
    """Is `at` inside a `[REDACTED:kind]` marker (so that redacting twice changes nothing)?"""
    before = text[max(0, at - 40) : at]
    i = before.rfind(_MARK)
    return i >= 0 and "]" not in before[i:]


def _bare_value(text: str, start: int, stop: int, shell: bool) -> tuple[str, int]:
    """A bare value ends before trailing punctuation and, outside shell form, at the end of an
    expression or parameter (`,`, `)`, or `;`/`&` before `name=`: connection strings, queries)."""
    value = text[start:stop]
    if not shell:
        value = _NEXT_PARAMETER.split(value, maxsplit=1)[0]
    value = value.rstrip(_STRIP_TAIL)
    return value, start + len(value)


def _is_env_form(match: re.Match[str]) -> bool:
    """`NAME=value` as in a shell or a .env file: the value is text, never a variable."""
    return (
        match.group("op") == "="
        and not (match.group("q") or match.group("sp1") or match.group("sp2"))
        and _ENV_NAME.fullmatch(match.group("name")) is not None
    )


@lru_cache(maxsize=4096)
def _name_strength(name: str) -> Strength | None:
    """How a name marks its value: a password, another secret, a maybe-key, or nothing."""
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if not words:
        return None
    compact = "".join(words)
    if compact.endswith(_PASSWORD_ENDINGS) or _is_pass_name(name, words):
        return "password"
    if compact.endswith(_SECRET_ENDINGS):
        return "secret"
    if compact.endswith(_WEAK_ENDINGS):
        return "weak"
    return None


def _is_pass_name(name: str, words: list[str]) -> bool:
    """`DB_PASS`, `smtp_pass`; not `args_to_pass`, `first_pass` or `bypass`."""
    if words[-1] != "pass" or len(words) < 2:
        return False
    return name.isupper() or words[-2] in _PASS_OWNERS


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


def _assignment_strength(match: re.Match[str]) -> Strength | None:
    return _name_strength(match.group("name"))


def _flag_strength(match: re.Match[str]) -> Strength:
    name = match.group("name").lower()
    if name.startswith("pass"):
        return "password"
    return _name_strength(name.replace("-", "_")) or "secret"


def _password(match: re.Match[str]) -> Strength:
    return "password"


def _always(match: re.Match[str]) -> bool:
    return True


_RULES = [
    _Rule("cli_secret", _FLAG, _flag_strength, _always, False, _FLAG_PROSE, flags=True),
    _Rule("cli_secret", _CURL_USER, _password, _always, labels=False),
    _Rule("netrc_password", _NETRC, _password, _always, labels=False),
    _Rule("sql_password", _SQL_PASSWORD, _password, _always, labels=False),
    _Rule("assigned_secret", _ASSIGNMENT, _assignment_strength, _is_env_form),
]


def _rules_version() -> str:
    """The rules' identity: every pattern (with its kind and flags), the thresholds they use,
    and this module's source (the judges are code). Stored by `memory-pipeline heal`
    (memory_pipeline/heal) as the version last applied to the whole store; `run` heals again
    once when it differs."""
    parts = [f"{kind}\t{p.pattern}\t{p.flags}\t{group}" for kind, p, group in _SHAPES]
    parts += [f"{rule.kind}\t{rule.pattern.pattern}\t{rule.pattern.flags}" for rule in _RULES]
    thresholds = (REDACT_MIN_SECRET_CHARS, REDACT_RANDOM_MIN_CHARS, REDACT_RANDOM_MIN_RUN)
    parts += [str(n) for n in thresholds]
    digest = hashlib.sha256("\n".join(parts).encode())
    digest.update(Path(__file__).read_bytes())
    return f"sha256:{digest.hexdigest()[:16]}"


# Changes whenever the rules do; what `redaction_state` (sql/026) records.
RULES_VERSION: str = _rules_version()
