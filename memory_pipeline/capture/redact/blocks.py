"""Redaction layer (b1), the first: **blocks and shapes**.

Private key blocks of every kind (PEM `-----BEGIN ... PRIVATE KEY`, OpenSSH,
`PGP PRIVATE KEY BLOCK`, encrypted; one cut short up to its last base64 line; PuTTY's
`Private-Lines` and MAC), `Authorization: Bearer|Basic|<any scheme>` credentials and the
password of `scheme://user:password@host`. Each shape runs only where one of its keywords
occurs (_SHAPE_KEYWORDS).
"""

from __future__ import annotations

import re

from memory_pipeline.capture.redact.shared import _MARK, Redactions, _sub_shape

_KEY_BLOCK = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
# (kind, pattern, group to replace: 0 = whole match)
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


def _sub_shapes(text: str, found: Redactions) -> str:
    """Replace each shape's match (its group only, when it has one), in the order above."""
    low = text.lower()
    for kind, pattern, group in _SHAPES:
        if any(word in low for word in _SHAPE_KEYWORDS[kind]):
            text, n = _sub_shape(pattern, group, f"{_MARK}{kind}]", text)
            found.count(kind, n)
    return text
