"""The `<private>` marker parser, by property: nesting, unclosed tags, any case, stray closers."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.capture.redact import redact
from memory_pipeline.errors import UserError
from memory_pipeline.forget.privacy import PRIVATE_MARKER, CaptureRules, parse_rules, strip_private

SECRET = "Zq7SECRETpayload"
OPEN_TAG = re.compile(r"<\s*private\b[^<>]*>", re.IGNORECASE)

# Plain text may hold anything but a tag (angle brackets included, just not `<private`).
plain = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12).filter(
    lambda s: not OPEN_TAG.search(s) and not re.search(r"<\s*/\s*private", s, re.IGNORECASE)
)


def case_variants(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda flags: "".join(c.upper() if f else c for c, f in zip(word, flags, strict=True))
    )


spaces = st.sampled_from(["", " ", "  ", "\t"])
open_tag = st.builds(
    lambda a, w, b, attr: f"<{a}{w}{attr}{b}>",
    spaces,
    case_variants("private"),
    spaces,
    st.sampled_from(["", ' reason="x"']),
)
close_tag = st.builds(lambda a, w, b: f"<{a}/{w}{b}>", spaces, case_variants("private"), spaces)


@st.composite
def block(draw: st.DrawFn, depth: int = 0) -> str:
    """A private block: secret text, maybe with nested blocks, closed."""
    inner = [draw(plain), SECRET]
    if depth < 2 and draw(st.booleans()):
        inner.append(draw(block(depth + 1)))
    inner.append(draw(plain))
    return draw(open_tag) + "".join(inner) + draw(close_tag)


@st.composite
def document(draw: st.DrawFn) -> tuple[str, list[str], int]:
    """(text, the plain parts in order that must survive, number of top-level blocks)."""
    parts: list[str] = []
    kept: list[str] = []
    blocks = 0
    for _ in range(draw(st.integers(0, 4))):
        text = draw(plain)
        parts.append(text)
        kept.append(text)
        if draw(st.booleans()):
            parts.append(draw(block()))
            blocks += 1
    if draw(st.booleans()):  # a stray closing tag hides nothing and stays
        stray = draw(close_tag)
        parts.append(stray)
        kept.append(stray)
    if draw(st.booleans()):  # never closed: everything after it is private
        parts.append(draw(open_tag) + SECRET + draw(plain))
        blocks += 1
    return "".join(parts), kept, blocks


@settings(max_examples=400, deadline=None)
@given(document())
def test_nothing_inside_a_private_block_survives(doc: tuple[str, list[str], int]) -> None:
    text, kept, blocks = doc
    out, n = strip_private(text)
    assert SECRET not in out
    assert not OPEN_TAG.search(out)
    assert n == blocks and out.count(PRIVATE_MARKER) >= blocks
    # The text outside the blocks is kept, in order.
    at = 0
    for part in kept:
        found = out.find(part, at)
        assert found >= 0, (part, out)
        at = found + len(part)
    assert strip_private(out) == (out, 0)  # idempotent


@settings(max_examples=100, deadline=None)
@given(document())
def test_redact_counts_private_blocks_like_redactions(doc: tuple[str, list[str], int]) -> None:
    text, _, blocks = doc
    out, found = redact(text)
    assert SECRET not in out
    assert found.by_kind.get("private", 0) == blocks
    assert redact(out)[0] == out


def test_examples() -> None:
    assert strip_private("a <private>x</private> b") == (f"a {PRIVATE_MARKER} b", 1)
    assert strip_private("a <PRIVATE>x <private>y</private> z</Private> b")[0] == "a [PRIVATE] b"
    assert strip_private("keep </private> this") == ("keep </private> this", 0)
    assert strip_private("a < private >secret") == ("a [PRIVATE]", 1)
    assert strip_private("x < privateer >") == ("x < privateer >", 0)


def test_inbox_rules_match_documents_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """`path:` and `domain:` rules (issue 33) match inbox documents, never an agent task."""
    monkeypatch.setenv("HOME", "/home/mara")
    rules = parse_rules("path:~/inbox/private, domain:example.com, source:video", "X")
    cr = CaptureRules(exclude=tuple(rules))
    assert cr.excluded_by("document", {"path": "/home/mara/inbox/private/a.md"}) == rules[0]
    assert cr.excluded_by("document", {"path": "/home/mara/inbox/public/a.md"}) is None
    assert cr.excluded_by("article", {"domain": "blog.example.com"}) == rules[1]
    assert cr.excluded_by("article", {"domain": "notexample.com"}) is None
    assert cr.excluded_by("video", {}) == rules[2]
    assert cr.excluded_by("codex", {"cwd": "/home/mara/inbox/private"}) is None


def test_rules_parse_and_match(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/mara")
    rules = parse_rules("cwd:~/clients/*, repo:acme/billing\nsource:chat_import", "MEMORY_EXCLUDE")
    assert [str(r) for r in rules] == [
        "cwd:/home/mara/clients/*",
        "repo:acme/billing",
        "source:chat_import",
    ]
    cr = CaptureRules(exclude=tuple(rules))
    assert cr.excluded_by("codex", {"cwd": "/home/mara/clients/acme/api"}) == rules[0]
    assert cr.excluded_by("codex", {"cwd": "/home/mara/src/clients"}) is None
    remote = {"git": {"repository_url": "git@github.com:Acme/Billing.git"}}
    assert cr.excluded_by("codex", remote) == rules[1]
    assert cr.excluded_by("chat_import", {}) == rules[2]
    repo_by_cwd = CaptureRules(exclude=tuple(parse_rules("repo:logslice", "X")))
    assert repo_by_cwd.excluded_by("claude_code", {"cwd": "/home/mara/src/logslice"})
    for bad in ("cwd", "host:/x", "source:slack", "repo:", "domain:"):
        with pytest.raises(UserError, match="MEMORY_EXCLUDE"):
            parse_rules(bad, "MEMORY_EXCLUDE")
