"""The redaction rules' version, RULES_VERSION: `<revision>+<hash of the rules>`.

The hash covers, in this order: the provider formats and keyword rules (secret_rules.py), the
shapes of layer (b1), the rules, command lines and config-file patterns of layer (b2), four
patterns of layer (d), and every REDACT_ tuning constant. Anything else (the judging code, word
lists, the other patterns of (d) and layer (c)) changes the version only through
_RULES_REVISION. The heal command re-runs the rules over what was stored under another version.
"""

from __future__ import annotations

import hashlib

from memory_pipeline import tuning
from memory_pipeline.capture.redact.blocks import _SHAPES
from memory_pipeline.capture.redact.context import (
    _COMMANDS,
    _K8S_DATA,
    _K8S_ITEM,
    _PGPASS,
    _RULES,
    _URL_SIGNATURE,
    _XML_RULES,
)
from memory_pipeline.capture.redact.prose import (
    _PASSWORD_LIKE,
    _PROSE_BARE,
    _PROSE_PASSWORD,
    _PROSE_SECRET,
)
from memory_pipeline.capture.secret_rules import KEYWORD_RULES, PROVIDER_RULES

# Bump _RULES_REVISION when the judging code changes; the hash follows the patterns below, every
# provider format and tuning constant by itself. A stored text redacted under another version may
# hold a secret these rules now catch (the heal command re-runs them when this changes).
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
