"""Secret redaction, applied to every prompt, outcome, title and native-context string before
anything is stored.

Every hit becomes `[REDACTED:<kind>]`, so a reader can tell something was removed and what it
was, and redacting twice changes nothing. `<private>` blocks go first (forget/privacy.py). Then
four layers, each on what the one before left:

(b1) **Blocks and shapes**: private key blocks of every kind (PEM `-----BEGIN ... PRIVATE KEY`,
     OpenSSH, `PGP PRIVATE KEY BLOCK`, encrypted; one cut short up to its last base64 line;
     PuTTY's `Private-Lines` and MAC), `Authorization: Bearer|Basic|<any scheme>` credentials
     and the password of `scheme://user:password@host`.
(a)  **Provider token formats**, wherever they appear: 221 formats of 146 kinds in
     secret_rules.py (its docstring names the sources: gitleaks' rule set at a given commit and
     vendors' documentation), each a literal prefix and a body (`dop_v1_` + 64 hex, `hvs.`,
     `ops_eyJ`, `dp.pt.`, `dapi`, `shpat_`, `ATATT3`, `PMAK-`, `lin_api_`, `r8_`, `ntn_`,
     `AGE-SECRET-KEY-1`, `tskey-`, `sk-ant-`, `ghp_`, `AKIA`...), plus a few without a fixed
     start (Slack, Discord and Teams webhooks, Telegram bot tokens, Azure AD client secrets,
     Okta `SSWS`). A body that is a placeholder (`ghp_xxxx`) or words (`sk-learn-...`) is no
     token, nor is a GUID that happens to start like one.
(b2) **Values by their context**, in any syntax:
   - assignments (`NAME=value`, `name: value`, `"name": "value"`, `name := value`,
     `name => value`, XML `<password>x</password>` and `<add key="Password" value="x"/>`) with
     the name in any style (`DB_PASSWORD`, `clientSecret`, `SecretAccessKey`, `X-Api-Key`,
     `spring.datasource.password`). The name says how sure we are:
     - a *secret name* ends in password, passwd, pwd, passphrase, passkey, psk, sshpass,
       secret, token, apikey, credential(s), creds, is a key with a secret qualifier (secret
       key, access key, private key, account key, signing key, key data...), or is
       `DB_PASS`-like (`smtp_pass`, `ansible_become_pass`, a bare `pass`): its value is
       redacted when it is a literal of at least REDACT_MIN_SECRET_CHARS characters;
     - any other key name (`PRIMARY_KEY`, `STRIPE_KEY`, a bare `key`), a name ending in auth,
       cookie, session, sid, sig or signature (docker config's `"auth"`, `NPM_AUTH`,
       `sessionid`), and a name with a secret word inside (`TF_TOKEN_app_terraform_io`,
       `OP_SESSION_my`) unless it ends in a word about the secret (`TOKEN_URL`, `SECRET_NAME`,
       `password_file`): only when the value looks random: at least REDACT_RANDOM_MIN_CHARS
       characters, letters and digits, and an unbroken alphanumeric run of REDACT_RANDOM_MIN_RUN;
   - flags (`--password x`, `--db-password=x`, `--api-token x`, `--client-secret x`) and
     command lines whose own flags carry a password: `curl -u user:pass`, `docker login -p`,
     `mysql -pPW`, `sshpass -p`, httpie `--auth`/`-a user:pass`, `redis-cli -a`, `ldapsearch -w`,
     `sqlcmd -P`, `openssl -passin pass:`, `keytool -storepass`, `smbclient -U user%pass`,
     `7z -pPW`, `zip -P`, `mongo -p`, `sqlplus user/pass@db`, `htpasswd -b`, `ssh-keygen -N`,
     `net use ... /user:u PW`, `az login -p`, `echo PW | sudo -S`; from REDACT_CLI_MIN_CHARS
     characters;
   - config files: `.netrc` (`machine h login u password p`, `default login u password p`),
     `.pgpass` lines (`host:port:db:user:password`), SQL `PASSWORD 'x'` / `IDENTIFIED BY 'x'`,
     every value under `data:`/`stringData:` of a Kubernetes `kind: Secret`, kubeconfig
     `token:` and `client-key-data:` (a base64 private key is caught by its decoded header),
     and the signature of a signed URL (`sig=`, `X-Amz-Signature=`, `X-Goog-Signature=`).
(d)  **Passwords in prose**: "my sudo password is X", "the wifi password: X", "pw for the db is
     X", "the admin password was changed to X", "I set the root pw to X", "log in with
     password X", and "the api key is X" / "my token for the API is X"; a password there is
     anything but a plain word (a word counts when quoted), a key or token must look random
     (layer c) or be 32+ hex digits. With
     no verb ("guest / password X") only a value that cannot be a word counts: 8+ characters
     with a letter, a digit and a symbol, not hex (a UUID), a version or a call
     (`password VARCHAR(255)`).
(c)  **Random-looking tokens** with no context: a word of at least REDACT_TOKEN_MIN_CHARS
     letters and digits holding all of upper case, lower case and digits, with a Shannon
     entropy of at least REDACT_TOKEN_MIN_ENTROPY bits per character and no real words in it
     (its pieces, split at case and digit changes, average at most REDACT_TOKEN_MAX_WORD_MEAN
     characters). These are kept, by design: hex of any length (git SHAs short and long,
     sha256/md5 digests, UUIDs, container ids), tokens after `sha256:`, `sha512-`, `h1:`,
     `base64,` or an SSH key type (public keys), certificate and public key blocks, anything in
     a URL without credentials, file paths (judged by their segments), Stripe object ids
     (`cus_`, `pi_`...), version strings, identifiers (camelCase, snake_case, dotted module
     paths: their words are long), and base64 that decodes to text.

What is *not* a literal value in layer (b2), because false positives destroy a memory's meaning:
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

What this does not catch: a password shorter than REDACT_MIN_SECRET_CHARS after a name, a
word-only password in code, YAML or prose (`password: hunter`, "my password is hunter"), a hex
or base36 secret with no name or prefix beside it (`openssl rand -hex 32` pasted alone), a
random token shorter than REDACT_TOKEN_MIN_CHARS or without one of the three character classes,
and base64 of a `user:password` pair with no name beside it. Known false positive: a base58
address (a Bitcoin address) alone in a text.

Cost: the layers look for their keywords (plain substring search) before running a regex, and
the context rules are tried only where a hint word occurs; `scripts/bench_redact.py` times each.
RULES_VERSION changes whenever a rule does (a stored text redacted under an older version is
re-run by the heal command).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from memory_pipeline import tuning
from memory_pipeline.capture.secret_rules import CASE_INSENSITIVE, KEYWORD_RULES, PROVIDER_RULES
from memory_pipeline.forget.privacy import PRIVATE_KIND, strip_private
from memory_pipeline.tuning import (
    REDACT_CLI_MIN_CHARS,
    REDACT_MIN_SECRET_CHARS,
    REDACT_RANDOM_MIN_CHARS,
    REDACT_RANDOM_MIN_RUN,
    REDACT_TOKEN_MAX_WORD_MEAN,
    REDACT_TOKEN_MIN_CHARS,
    REDACT_TOKEN_MIN_ENTROPY,
)

_MARK = "[REDACTED:"

# --- layer (b): private key blocks, then credentials in headers and URLs -------------------------
# (kind, pattern, group to replace: 0 = whole match)
_KEY_BLOCK = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_SHAPES: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private_key",
        re.compile(
            # PEM, OpenSSH, PGP: up to the next BEGIN at most, so a text full of markers stays
            # linear
            r"-----BEGIN " + _KEY_BLOCK + r"-----(?:(?!-----BEGIN )[\s\S]){0,40000}?"
            r"-----END " + _KEY_BLOCK + "-----"
        ),
        0,
    ),
    (  # cut short: the marker and the base64 lines that follow it (a lone marker is no secret)
        "private_key",
        re.compile(
            r"-----BEGIN " + _KEY_BLOCK + r"-----[ \t]*\r?\n(?:[ \t]*[\w-]+: [^\n]*\r?\n)*"
            r"(?:[ \t]*\r?\n)?(?:[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*(?:\r?\n|\Z))+"
        ),
        0,
    ),
    (  # PuTTY: the private lines and their MAC (the public half before them stays)
        "private_key",
        re.compile(
            r"Private-Lines: *\d+[ \t]*\r?\n(?:[ \t]*[A-Za-z0-9+/=]+[ \t]*\r?\n?)+"
            r"(?:Private-(?:MAC|Hash): *[0-9a-fA-F]+)?"
        ),
        0,
    ),
    ("bearer_token", re.compile(r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)"), 1),
    (
        "basic_auth",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization\b[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"basic[ \t]+([A-Za-z0-9+/]{8,}=*)"
        ),
        1,
    ),
    (  # any other scheme: `token x`, `SSWS x`, `Bot x`, `ApiKey x`, or a bare credential
        "authorization_header",
        re.compile(
            r"(?i)\b(?:proxy-)?authorization\b[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?:(?!bearer\b|basic\b)[A-Za-z][\w-]{1,20}[ \t]+)?"
            r"((?=[A-Za-z0-9._~+/:=-]*\d)[A-Za-z0-9._~+/:=-]{12,})"
        ),
        1,
    ),
    # scheme://user:password@host -> keep the user and host, drop the password
    ("url_password", re.compile(r"://[^\s:/@]*:([^\s@/]+)@"), 1),
]
# Each shape runs only when one of these words (lower case) is in the text.
_SHAPE_KEYWORDS = {
    "private_key": ("private key", "private-lines"),
    "bearer_token": ("bearer",),
    "basic_auth": ("authoriz",),
    "authorization_header": ("authoriz",),
    "url_password": ("://",),
}

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
    r"(?P<name>(?=[A-Za-z0-9_.\-]*?(?i:pass|pwd|psk|secret|token|key|sig|auth|cred|session|cookie|sid))"
    r"[A-Za-z_][A-Za-z0-9_.\-]*+)"
    r"(?P=q)"
    r"(?P<sp1>[ \t]*)(?P<op>:=|=>|=|:)(?P<sp2>[ \t]*)(?=" + _VALUE + ")"
)
_FLAG = re.compile(
    r"(?i)(?<![\w-])--(?P<name>(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|token|secret"
    r"|api-?key|apikey|access-key|secret-key|private-key|credentials?))(?:=|[ \t]+)(?="
    + _VALUE
    + ")"
)
_CURL_USER = re.compile(
    r"\bcurl\b[^\n]{0,500}?\s(?:-u[ \t]*|--user[ \t]+|--user=)['\"]?[^\s:'\"]+:"
    r"(?=(?P<bare>[^\s'\"@]{1," + str(_BARE_SCAN) + "}))"
)
_NETRC = re.compile(
    r"(?i)\b(?:machine\s+[A-Za-z0-9][\w.:-]*|default)\s+(?:login\s+\S+\s+)?(?:account\s+\S+\s+)?"
    r"password\s+"
    r"(?=(?P<bare>\S+))"
)
# SQL: `CREATE ROLE app WITH PASSWORD 'x'`, `IDENTIFIED BY 'x'`.
_SQL_PASSWORD = re.compile(r"(?i)\b(?:password|identified\s+by)\s+(?='(?P<v3>[^'\n]+)')")

_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_ENDINGS = ("password", "passwd", "passphrase", "pwd", "sshpass", "psk", "passkey")
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
    "credential",
    "credentials",
    "creds",
    "keydata",  # kubeconfig client-key-data
)
_WEAK_ENDINGS = ("key", "signature", "auth", "cookie", "session", "sessionid", "sid", "sig")
# In a name (not at its end) these words make a random value a secret: `TF_TOKEN_app_io`,
# `OP_SESSION_my`, `GITHUB_TOKEN_FOR_CI`; a name ending in one of _NOT_VALUE_ENDINGS names
# something about the secret instead (`TOKEN_URL`, `SECRET_NAME`, `password_file`).
_INNER_SECRET_WORDS = frozenset(
    ["token", "secret", "password", "passwd", "pwd", "session", "auth", "apikey", "credentials"]
)
_NOT_VALUE_ENDINGS = frozenset(
    [
        "url",
        "uri",
        "endpoint",
        "path",
        "file",
        "dir",
        "name",
        "id",
        "ids",
        "type",
        "length",
        "len",
        "size",
        "ttl",
        "expiry",
        "expires",
        "timeout",
        "count",
        "limit",
        "max",
        "min",
        "header",
        "field",
        "env",
        "var",
        "prefix",
        "suffix",
        "format",
        "version",
        "mode",
        "policy",
        "scope",
        "scopes",
        "enabled",
        "required",
        "hash",
        "store",
        "provider",
        "fingerprint",
        "algorithm",
    ]
)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
# Words, not a literal: letters joined by `_` or `-` (`password`, `new_password`, `read-only`).
_BARE_NAME = re.compile(r"[A-Za-z_]+(?:-[A-Za-z_]+)*")
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_LABEL_WORDS = frozenset(["password", "passwd", "pwd", "secret", "token", "apikey", "key"])
_CALL_OR_INDEX = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*[(\[]")
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_BRACKETED = re.compile(r"[\[<({].*[\]>)}]")
_PLACEHOLDER = re.compile(r"\.\.\.|\u2026|\*\*|%[sd(]|\{\}|x{6,}|X{6,}|0{8,}")
_PLACEHOLDER_RUN = re.compile(r"x{6,}|X{6,}|\*{3,}|0{8,}|\.\.\.")
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
    [
        "db",
        "user",
        "admin",
        "root",
        "smtp",
        "mail",
        "ftp",
        "ldap",
        "redis",
        "mysql",
        "pg",
        "proxy",
        "become",
        "sudo",
        "ssh",
        "vault",
        "login",
        "bind",
        "master",
        "service",
        "wifi",
        "zip",
        "auth",
    ]
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
    Then the layers, each on what the one before left: private keys and credential shapes (b),
    provider tokens (a), values by their context (b), passwords in prose (d), random-looking
    tokens (c).
    """
    found = Redactions()
    text, n = strip_private(text)
    found.count(PRIVATE_KIND, n)
    if len(text) < 8:
        return text, found
    low = text.lower()
    for kind, pattern, group in _SHAPES:
        if any(word in low for word in _SHAPE_KEYWORDS[kind]):
            text, n = _sub_shape(pattern, group, f"{_MARK}{kind}]", text)
            found.count(kind, n)
    text = _sub_providers(text, found)
    text = _sub_context(text, found)
    text = _sub_prose(text, found)
    text = _sub_random(text, found)
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


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_NAME_MAX = 200  # a longer run of name characters is no name (and bounds the scans below)
_AFTER_NAME = re.compile(r"[A-Za-z0-9_.\-]{0,200}+\\?[\"']?[ \t]*(?::=|=>|=|:)")


def _assignment_starts(text: str, low: str) -> list[int]:
    """Where an assignment to a secret-like name may start: at the name that holds a hint word,
    or at the quote before it, when an operator follows the name."""
    starts = []
    for at in _find_all(low, _NAME_HINTS):
        if not _AFTER_NAME.match(text, at):
            continue
        begin = at
        while begin > 0 and text[begin - 1] in _NAME_CHARS and at - begin < _NAME_MAX:
            begin -= 1
        if begin > 0 and text[begin - 1] in _NAME_CHARS:
            continue
        starts.append(begin)
        if begin >= 1 and text[begin - 1] in "\"'":
            starts.append(begin - 1)
            if begin >= 2 and text[begin - 2] == "\\":
                starts.append(begin - 2)
    return starts


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
    if words[-1] in _NOT_VALUE_ENDINGS:
        return None
    if any(w in _INNER_SECRET_WORDS for w in words[:-1]) or (
        len(words) > 1 and "".join(words[:2]) == "apikey"
    ):
        return "weak"
    return None


def _is_pass_name(name: str, words: list[str]) -> bool:
    """`DB_PASS`, `smtp_pass`, a bare `pass` (nodemailer's `auth: {user, pass}`: no language
    assigns to the keyword); not `args_to_pass`, `first_pass` or `bypass`."""
    if words == ["pass"]:
        return True
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


# --- layer (a): provider token formats (secret_rules.py) --------------------------------------
# A word that may be a token: letters, digits and `_-.+/~`, then any `=` padding. Shorter words
# hold no provider token (the shortest format, `AKIA` and 16, is 20 characters).
_WORD = re.compile(r"[A-Za-z0-9_\-.+/~]{16,}=*")
_LONG_CHUNK = re.compile(r"\S{16,}")


def _words(text: str) -> Iterator[re.Match[str]]:
    """The token-like words of a text, looked for inside its long runs of non-space only."""
    for chunk in _LONG_CHUNK.finditer(text):
        yield from _WORD.finditer(text, chunk.start(), chunk.end())


def _build_provider_index() -> dict[str, list[tuple[str, int, re.Pattern[str]]]]:
    index: dict[str, list[tuple[str, int, re.Pattern[str]]]] = {}
    for kind, prefix, body in PROVIDER_RULES:
        flags = re.IGNORECASE if kind in CASE_INSENSITIVE else 0
        pattern = re.compile(re.escape(prefix) + "(?:" + body + ")(?![A-Za-z0-9])", flags)
        head = prefix[:2]
        heads = {head.lower(), head.upper(), head[0].lower() + head[1:], head[0].upper() + head[1:]}
        for key in heads if flags else {head}:
            index.setdefault(key, []).append((kind, len(prefix), pattern))
    return index


_PROVIDER_INDEX = _build_provider_index()
_KEYWORD_RULES = [(kind, kw, re.compile(rx)) for kind, kw, rx in KEYWORD_RULES]
_WORDS_ONLY = re.compile(r"[a-z]+(?:[-_.][a-z]+)*")


_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def _plausible_body(body: str) -> bool:
    """The part after a prefix is a token, not a placeholder (`xxxx`) nor words (`sk-learn-...`)."""
    return len(set(body)) >= 3 and _WORDS_ONLY.fullmatch(body) is None


def _decodes_to_private_key(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=False)
    except ValueError:
        return False
    return b"PRIVATE KEY" in decoded


def _sub_providers(text: str, found: Redactions) -> str:
    pieces: list[str] = []
    done = 0
    for word in _words(text):
        start = word.start()
        rules = _PROVIDER_INDEX.get(text[start : start + 2])
        if not rules:
            continue
        for kind, prefix_len, pattern in rules:
            hit = pattern.match(text, start)
            if hit is None or not _plausible_body(hit.group(0)[prefix_len:]):
                continue
            if _UUID.match(hit.group(0)) or _PLACEHOLDER_RUN.search(hit.group(0)):
                continue  # a GUID that starts like a token (`EAAA42E0-...`), `ghp_xxxxxxxx`
            if kind == "private_key_base64" and not _decodes_to_private_key(hit.group(0)):
                continue
            pieces += [text[done:start], f"{_MARK}{kind}]"]
            done = hit.end()
            found.count(kind)
            break
    if pieces:
        text = "".join([*pieces, text[done:]])
    low = text.lower()
    for kind, keyword, pattern in _KEYWORD_RULES:
        if keyword in low:
            text, n = _sub_shape(pattern, 0, f"{_MARK}{kind}]", text)
            found.count(kind, n)
    return text


# --- layer (b): values by their context -------------------------------------------------------
# Lines that may hold a secret name (the assignment and flag rules only look at those).
_NAME_HINTS = (
    "psk",
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "sig",
    "auth",
    "cred",
    "session",
    "cookie",
    "sid",
)

# Command lines whose own flags or positions carry a password: (keywords, pattern with group v).
_Q = r"""['"]?(?P<v>[^\s'"]+)"""
_COMMANDS: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (
        (
            "docker login",
            "podman login",
            "nerdctl login",
            "buildah login",
            "skopeo login",
            "registry login",
            "oras login",
            "helm login",
        ),
        re.compile(
            r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm(?:\s+registry)?|oras)\s+login\b"
            r"[^\n]*?\s(?:-p|--password)(?:[ \t]+|=)" + _Q
        ),
    ),
    (
        ("mysql", "mariadb"),
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b"
            r"[^\n]*?\s-p['\"]?(?P<v>[^\s'\"-][^\s'\"]*)"
        ),
    ),
    (("sshpass",), re.compile(r"\bsshpass\s+-p[ \t]*" + _Q)),
    (
        ("--auth", "-a "),
        re.compile(
            r"\b(?:http|https|xh|xhs)\s[^\n]*?(?<!\S)(?:-a|--auth)(?:[ \t]+|=)['\"]?[^\s:'\"]*:"
            r"(?P<v>[^\s'\"@]+)"
        ),
    ),
    (("redis-cli",), re.compile(r"\bredis-cli\b[^\n]*?\s(?:-a|--pass)[ \t]+" + _Q)),
    (("ldap",), re.compile(r"\bldap\w+\b[^\n]*?\s-w[ \t]+" + _Q)),
    (("sqlcmd", "bcp", "osql"), re.compile(r"\b(?:sqlcmd|bcp|osql)\b[^\n]*?\s-P[ \t]*" + _Q)),
    (("pass:",), re.compile(r"(?<!\S)-(?:passin|passout|pass|k)[ \t]+pass:(?P<v>\S+)")),
    (
        ("storepass", "keypass"),
        re.compile(
            r"(?<!\S)-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)"
            r"[ \t]+" + _Q
        ),
    ),
    (
        ("smbclient", "smbmap", "rpcclient", "crackmapexec", "nxc", "net use"),
        re.compile(
            r"\b(?:smbclient|smbmap|rpcclient|crackmapexec|nxc|net\s+use)\b[^\n]*?\s-U[ \t]+"
            r"['\"]?[^\s%'\"]+%(?P<v>[^\s'\"]+)"
        ),
    ),
    (("7z",), re.compile(r"\b7z[ar]?\b[^\n]*?\s-p(?P<v>[^\s'\"-][^\s'\"]*)")),
    (("zip",), re.compile(r"\b(?:zip|unzip)\b[^\n]*?\s-P[ \t]+" + _Q)),
    (("mongo",), re.compile(r"\bmongo(?:sh|dump|restore|export|import)?\b[^\n]*?\s-p[ \t]+" + _Q)),
    (("sqlplus",), re.compile(r"\bsqlplus\s+[^\s/@]+/(?P<v>[^\s@]+)@")),
    (("net use",), re.compile(r"(?i)\bnet\s+use\b[^\n]*?\s/user:\S+[ \t]+" + _Q)),
    (("az login",), re.compile(r"\baz\s+login\b[^\n]*?\s-p[ \t]+" + _Q)),
    (
        ("sudo -s",),
        re.compile(
            r"\becho[ \t]+(?:-n[ \t]+)?['\"]?(?P<v>[^'\"\s|]+)['\"]?[ \t]*\|[ \t]*sudo\b"
            r"[^\n]*?\s-S\b"
        ),
    ),
    (("htpasswd",), re.compile(r"\bhtpasswd\b[^\n]*?\s-\w*b\w*[ \t]+\S+[ \t]+\S+[ \t]+" + _Q)),
    (("ssh-keygen",), re.compile(r"\bssh-keygen\b[^\n]*?\s-N[ \t]+['\"](?P<v>[^'\"\n]+)['\"]")),
]
# A signed URL's signature: Azure SAS `sig=`, S3 and GCS presigned URLs.
_URL_SIGNATURE = re.compile(
    r"(?i)[?&;](?:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token)="
    r"(?P<v>[^&\s\"'#<>]{16,})"
)
# .pgpass: host:port:database:user:password (a host holds a letter, a dot or `*`).
_PGPASS = re.compile(
    r"(?m)^[ \t]*[A-Za-z0-9.\-_*]*[A-Za-z.*][A-Za-z0-9.\-_*]*:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:"
    r"(?P<v>\S+)[ \t]*$"
)
_PGPASS_HINT = re.compile(r":(?:\d{1,5}|\*):")
# A Kubernetes Secret: every value under `data:` / `stringData:`.
_K8S_SECRET = re.compile(r"(?im)^[ \t]*kind:[ \t]*['\"]?secret['\"]?[ \t]*$")
_K8S_DATA = re.compile(
    r"(?m)^(?P<indent>[ \t]*)(?:data|stringData):[ \t]*\r?\n(?P<body>(?:(?P=indent)[ \t]+\S[^\n]*"
    r"(?:\n|\Z))+)"
)
_K8S_ITEM = re.compile(r"(?m)^[ \t]+[\w.\-]+:[ \t]*['\"]?(?P<v>[^\s'\"][^\n'\"]*?)['\"]?[ \t]*$")
# XML: `<password>x</password>`, `<add key="ClearTextPassword" value="x" />` (Maven, NuGet, .NET).
_XML_ELEMENT = re.compile(r"<(?P<name>[A-Za-z_][\w.\-:]*)>(?=(?P<v2>[^<\n]{1,2000})</(?P=name)>)")
_XML_ADD = re.compile(
    r"""<add\s+key=["'](?P<name>[^"'\n]+)["']\s+value=(?=["'](?P<v2>[^"'\n]+)["'])"""
)


def _plausible_cli_value(value: str) -> bool:
    return (
        len(value) >= REDACT_CLI_MIN_CHARS
        and not value.startswith(("$", "<", "{", "%", "-", "`", "(", _MARK))
        and _MARK not in value
        and len(set(value) - {"*", "x", "X", "."}) > 0
    )


def _sub_group(pattern: re.Pattern[str], kind: str, text: str, found: Redactions) -> str:
    """Replace group `v` of each match whose value is a plausible literal."""
    pieces: list[str] = []
    done = 0
    for match in pattern.finditer(text):
        start = match.start("v")
        value = match.group("v").rstrip(_STRIP_TAIL)
        if start < done or not _plausible_cli_value(value):
            continue
        pieces += [text[done:start], f"{_MARK}{kind}]"]
        done = start + len(value)
        found.count(kind)
    return "".join([*pieces, text[done:]]) if pieces else text


def _sub_k8s_secret(text: str, found: Redactions) -> str:
    if not _K8S_SECRET.search(text):
        return text

    def block(match: re.Match[str]) -> str:
        body = _sub_group(_K8S_ITEM, "k8s_secret_data", match.group("body"), found)
        return match.group(0)[: match.start("body") - match.start()] + body

    return _K8S_DATA.sub(block, text)


def _name_group_strength(match: re.Match[str]) -> Strength | None:
    return _name_strength(match.group("name"))


_XML_RULES = [
    _Rule("xml_secret", _XML_ELEMENT, _name_group_strength, _always, labels=False),
    _Rule("xml_secret", _XML_ADD, _name_group_strength, _always, labels=False),
]


def _sub_context(text: str, found: Redactions) -> str:
    low = _lower(text)
    if "--" in text:
        text, n = _sub_value(_RULES[0], text, _find_all(text, ("--",)))
        found.count(_RULES[0].kind, n)
        low = _lower(text)
    if "curl" in low:
        text, n = _sub_value(_RULES[1], text, _find_all(low, ("curl",), boundary=True))
        found.count(_RULES[1].kind, n)
        low = _lower(text)
    starts = _assignment_starts(text, low)
    if starts:
        text, n = _sub_value(_RULES[4], text, starts)
        found.count(_RULES[4].kind, n)
        low = _lower(text)
    if "password" in low and ("machine" in low or "default" in low):
        starts = _find_all(low, ("machine", "default"), boundary=True)
        text, n = _sub_value(_RULES[2], text, starts)
        found.count(_RULES[2].kind, n)
        low = _lower(text)
    if "password" in low or "identified" in low:
        starts = _find_all(low, ("password", "identified"), boundary=True)
        text, n = _sub_value(_RULES[3], text, starts)
        found.count(_RULES[3].kind, n)
    if "</" in text or "<add" in low:
        for rule in _XML_RULES:
            text, n = _sub_value(rule, text)
            found.count(rule.kind, n)
    for keywords, pattern in _COMMANDS:
        if any(k in low for k in keywords):
            text = _sub_group(pattern, "cli_secret", text, found)
    if "sig" in low or "security-token" in low:
        text = _sub_group(_URL_SIGNATURE, "url_signature", text, found)
    if _PGPASS_HINT.search(text):
        text = _sub_group(_PGPASS, "pgpass_password", text, found)
    if "secret" in low and "data:" in low:
        text = _sub_k8s_secret(text, found)
    return text


# --- layer (d): passwords stated in prose -----------------------------------------------------
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


# --- layer (c): random-looking tokens with no context ----------------------------------------
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


# --- the rules' version -----------------------------------------------------------------------
# Bump _RULES_REVISION when the judging code changes; the hash follows every pattern, provider
# format and tuning constant by itself. A stored text redacted under another version may hold a
# secret these rules now catch (the heal command re-runs them when this changes).
_RULES_REVISION = "2026-12-03.1"


def _rules_fingerprint() -> str:
    parts: list[str] = [_RULES_REVISION]
    parts += [f"{k}|{p}|{b}" for k, p, b in PROVIDER_RULES]
    parts += [f"{k}|{w}|{x}" for k, w, x in KEYWORD_RULES]
    parts += [f"{k}|{p.pattern}|{g}" for k, p, g in _SHAPES]
    parts += [f"{r.kind}|{r.pattern.pattern}" for r in (*_RULES, *_XML_RULES)]
    parts += [p.pattern for _, p in _COMMANDS]
    patterns = (
        _URL_SIGNATURE,
        _PGPASS,
        _K8S_DATA,
        _K8S_ITEM,
        _PROSE_PASSWORD,
        _PROSE_SECRET,
        _PROSE_BARE,
        _PASSWORD_LIKE,
    )
    parts += [p.pattern for p in patterns]
    parts += [f"{n}={getattr(tuning, n)}" for n in sorted(dir(tuning)) if n.startswith("REDACT_")]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


RULES_VERSION = f"{_RULES_REVISION}+{_rules_fingerprint()}"
