"""Redaction layer (a): **provider token formats**, wherever they appear.

221 formats of 146 kinds in secret_rules.py (its docstring names the sources: gitleaks' rule
set at a given commit and vendors' documentation), each a literal prefix and a body
(`dop_v1_` + 64 hex, `hvs.`, `ops_eyJ`, `dp.pt.`, `dapi`, `shpat_`, `ATATT3`, `PMAK-`,
`lin_api_`, `r8_`, `ntn_`, `AGE-SECRET-KEY-1`, `tskey-`, `sk-ant-`, `ghp_`, `AKIA`...), plus a
few without a fixed start (Slack, Discord and Teams webhooks, Telegram bot tokens, Azure AD
client secrets, Okta `SSWS`). A body that is a placeholder (`ghp_xxxx`) or words
(`sk-learn-...`) is no token, nor is a GUID that happens to start like one.

Each token-like word looks its formats up by its first two characters (_PROVIDER_INDEX); the
formats without a fixed start run where their keyword occurs (_KEYWORD_RULES).
"""

from __future__ import annotations

import base64
import re

from memory_pipeline.capture.redact.shared import _MARK, Redactions, _sub_shape, _words
from memory_pipeline.capture.secret_rules import CASE_INSENSITIVE, KEYWORD_RULES, PROVIDER_RULES

# A run that makes a match a placeholder, not a token (`ghp_xxxxxxxx`, `sk-...`).
_PLACEHOLDER_RUN = re.compile(r"x{6,}|X{6,}|\*{3,}|0{8,}|\.\.\.")


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
    """Replace each word that starts a provider format (the first format that matches wins),
    then each match of the formats without a fixed start."""
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
