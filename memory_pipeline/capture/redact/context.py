"""Redaction layer (b2): **values by their context**, in any syntax.

   - assignments (`NAME=value`, `name: value`, `"name": "value"`, `name := value`,
     `name => value`, XML `<password>x</password>` and `<add key="Password" value="x"/>`) with
     the name in any style; how sure the name makes us is context_names.py's to say, whether
     the value is a literal context_values.py's;
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

Each rule is tried only where one of its hint words occurs (_sub_context).
"""

from __future__ import annotations

import re

from memory_pipeline.capture.redact.context_names import Strength, _name_strength
from memory_pipeline.capture.redact.context_values import _BARE_SCAN, _VALUE, _Rule, _sub_value
from memory_pipeline.capture.redact.shared import (
    _MARK,
    _STRIP_TAIL,
    Redactions,
    _find_all,
    _lower,
)
from memory_pipeline.tuning import REDACT_CLI_MIN_CHARS

# Rules whose value context_values.py judges (_sub_value): flags, `curl -u`, .netrc, SQL and
# assignments (and XML, below).
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

_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _is_env_form(match: re.Match[str]) -> bool:
    """`NAME=value` as in a shell or a .env file: the value is text, never a variable."""
    return (
        match.group("op") == "="
        and not (match.group("q") or match.group("sp1") or match.group("sp2"))
        and _ENV_NAME.fullmatch(match.group("name")) is not None
    )


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


# Rules whose group `v` only has to be a plausible literal (_sub_group): command lines, signed
# URLs, .pgpass lines, the data of Kubernetes secrets.
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
    """Each rule in turn, where its hint words occur: flags, `curl -u`, assignments, .netrc, SQL,
    XML, command lines, signed URLs, .pgpass, Kubernetes secrets."""
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
