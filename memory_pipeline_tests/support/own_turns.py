"""The invariant every capture fuzzer checks besides its own: no captured turn holds text that
was not in that turn's own lines.

Each original turn is known by its pieces: the texts it was built from (a chat message, a Codex
or Claude Code prompt and final answer). A captured turn that contains pieces of two different
original turns joined them: a damaged line glued a neighbour's text onto it. Pieces shorter than
`MIN_PIECE` characters are left out (a short text such as "ok" may well occur inside another);
a piece that occurs in several original turns counts for each, so only a turn whose pieces have
no original turn in common is a violation. A damaged copy's altered text is in no original turn
and counts for none; redaction only removes text, so stored turns are checked the same way.
A piece that also occurs in a damaged or inserted line is left out (that line may be a readable
copy, the own line of the turn it lies in), and a copy with a line cut to nothing (a deleted
line, which no reader can notice) is not checked.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable

MIN_PIECE = 16
BOM = b"\xef\xbb\xbf"


def own_turn_violations(
    pieces: Iterable[tuple[Hashable, str]],
    captured: Iterable[tuple[str, str]],
    damaged: Iterable[bytes] = (),
) -> list[str]:
    """For each captured (prompt, outcome) holding pieces of no single original turn, a line
    saying which; `pieces` are (original turn key, text) pairs. A piece that also occurs in a
    `damaged` (or inserted) line is left out: that line may be a readable copy, and then it is
    the own line of whatever turn it lies in."""
    damaged = list(damaged)
    if any(not line.strip().removeprefix(BOM).strip() for line in damaged):
        # A line cut to nothing is a deleted line: no reader can tell it was there, and a
        # deleted prompt joins its neighbours as it would in an edited file. Not checked.
        return []
    owners: dict[str, set[Hashable]] = {}
    for key, text in pieces:
        text = text.strip()
        if len(text) >= MIN_PIECE and not _in_any(text, damaged):
            owners.setdefault(text, set()).add(key)
    problems = []
    for prompt, outcome in captured:
        common: set[Hashable] | None = None
        found = []
        for text, keys in owners.items():
            if text in prompt or text in outcome:
                found.append(text)
                common = set(keys) if common is None else common & keys
        if common is not None and not common:
            shown = ", ".join(repr(t[:30]) for t in found[:4])
            problems.append(f"turn {prompt[:40]!r} holds pieces of several turns: {shown}")
    return problems


def _in_any(text: str, lines: list[bytes]) -> bool:
    """Does `text` occur in one of the raw lines, as JSON writes it (escaped or not)?"""
    if not lines:
        return False
    forms = {
        json.dumps(text, ensure_ascii=a)[1:-1].encode("utf-8", "surrogatepass")
        for a in (True, False)
    }
    return any(form in line for line in lines for form in forms)
