"""Secret redaction, applied to every prompt, outcome and title before anything is stored.

Patterns are deliberately specific (known token shapes, key-value assignments, credentials in
URLs): a false positive destroys a memory's meaning, a missed exotic secret is still caught by
the generic assignment rule when it is written as `password=...`. Each hit becomes
`[REDACTED:<kind>]` so a reader can tell something was removed and what it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    # (kind, pattern, group to replace: 0 = whole match)
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.S,
        ),
        0,
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), 0),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        0,
    ),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), 0),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)"), 1),
    # scheme://user:password@host -> keep the user and host, drop the password
    ("url_password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@"), 1),
    (
        "assigned_secret",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|client[_-]?secret|aws_secret_access_key)\b[\"']?\s*[:=]\s*[\"']?([^\s\"',;]{6,})"
        ),
        1,
    ),
]


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


def redact(text: str) -> tuple[str, Redactions]:
    """Return the text with secrets replaced, and what was replaced."""
    found = Redactions()
    for kind, pattern, group in _PATTERNS:
        text, n = _sub(pattern, group, f"[REDACTED:{kind}]", text)
        if n:
            found.by_kind[kind] = found.by_kind.get(kind, 0) + n
    return text, found


def _sub(pattern: re.Pattern[str], group: int, token: str, text: str) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if "[REDACTED:" in match.group(group):
            return match.group(0)  # already redacted by an earlier, more specific pattern
        count += 1
        if group == 0:
            return token
        start, end = match.span(group)
        whole_start = match.start(0)
        whole = match.group(0)
        return whole[: start - whole_start] + token + whole[end - whole_start :]

    return pattern.sub(replace, text), count
