"""Redaction layer (b2), names: how sure the name a value is assigned to makes us.

The name may be in any style (`DB_PASSWORD`, `clientSecret`, `SecretAccessKey`, `X-Api-Key`,
`spring.datasource.password`); _name_strength judges it by its words:
   - a *secret name* ends in password, passwd, pwd, passphrase, passkey, psk, sshpass, secret,
     token, apikey, credential(s), creds, is a key with a secret qualifier (secret key, access
     key, private key, account key, signing key, key data...), or is `DB_PASS`-like
     (`smtp_pass`, `ansible_become_pass`, a bare `pass`): its value is redacted when it is a
     literal of at least REDACT_MIN_SECRET_CHARS characters;
   - any other key name (`PRIMARY_KEY`, `STRIPE_KEY`, a bare `key`), a name ending in auth,
     cookie, session, sid, sig or signature (docker config's `"auth"`, `NPM_AUTH`,
     `sessionid`), and a name with a secret word inside (`TF_TOKEN_app_terraform_io`,
     `OP_SESSION_my`) unless it ends in a word about the secret (`TOKEN_URL`, `SECRET_NAME`,
     `password_file`): only when the value looks random: at least REDACT_RANDOM_MIN_CHARS
     characters, letters and digits, and an unbroken alphanumeric run of REDACT_RANDOM_MIN_RUN.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

# How sure a name makes us: a password, another secret, or a maybe-key (its value must look
# random); None: no secret's name.
Strength = Literal["password", "secret", "weak"]

# A name's words: `clientSecret`, `DB_PASSWORD`, `X-Api-Key` -> client/secret, DB/PASSWORD, ...
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
