"""Secret redaction, applied to every prompt, outcome, title and native-context string before
anything is stored.

Every hit becomes `[REDACTED:<kind>]`, so a reader can tell something was removed and what it
was, and redacting twice changes nothing. `<private>` blocks go first (forget/privacy.py). Then
four layers, each on what the one before left, each in its own module (whose docstring says
what it catches and what it keeps):

(b1) blocks.py: **blocks and shapes**: private key blocks of every kind, `Authorization`
     credentials and the password of `scheme://user:password@host`.
(a)  providers.py: **provider token formats**, wherever they appear: 221 formats of 146 kinds
     in secret_rules.py, each a literal prefix and a body, and a few without a fixed start.
(b2) context.py: **values by their context**, in any syntax: assignments, flags, command lines
     and config files (`.netrc`, `.pgpass`, SQL, XML, Kubernetes secrets, signed URLs). What a
     name says is judged in context_names.py, whether a value is a literal in
     context_values.py.
(d)  prose.py: **passwords in prose** ("my sudo password is X", "the api key is X").
(c)  random_tokens.py: **random-looking tokens** with no context; hex, hashes, public keys,
     paths, ids, versions and identifiers are kept.

shared.py holds the marker, the counts (Redactions) and what several layers use; version.py
the rules' version, RULES_VERSION.

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

from memory_pipeline.capture.redact.blocks import _sub_shapes
from memory_pipeline.capture.redact.context import _sub_context
from memory_pipeline.capture.redact.prose import _sub_prose
from memory_pipeline.capture.redact.providers import _sub_providers
from memory_pipeline.capture.redact.random_tokens import _sub_random
from memory_pipeline.capture.redact.shared import Redactions
from memory_pipeline.capture.redact.version import RULES_VERSION
from memory_pipeline.forget.privacy import PRIVATE_KIND, strip_private

__all__ = ["RULES_VERSION", "Redactions", "redact"]


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
    text = _sub_shapes(text, found)
    text = _sub_providers(text, found)
    text = _sub_context(text, found)
    text = _sub_prose(text, found)
    text = _sub_random(text, found)
    return text, found
