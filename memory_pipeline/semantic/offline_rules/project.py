"""Rule 4: the project a segment names explicitly, with the sentence that names it."""

from __future__ import annotations

from collections import Counter

from memory_pipeline.semantic.offline_rules.features import RuleTurn
from memory_pipeline.semantic.offline_rules.patterns import PROJECT, PROJECT_STOP
from memory_pipeline.semantic.text import (
    normalize_ws,
)


def find_project(members: list[RuleTurn]) -> tuple[str | None, str | None]:
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    evidence: dict[str, str] = {}
    for m in members:
        for text in (m.turn.prompt, m.turn.outcome):
            for pattern in PROJECT:
                for match in pattern.finditer(text):
                    name = match.group("name").strip("`").rstrip(".-_")
                    key = name.casefold()
                    if len(name) < 2 or key in PROJECT_STOP:
                        continue
                    counts[key] += 1
                    surface.setdefault(key, name)
                    evidence.setdefault(key, _evidence(text, match.start(), match.end()))
    if not counts:
        return None, None
    ranked = counts.most_common()
    if len(ranked) > 1:
        (top, n1), (_, n2) = ranked[0], ranked[1]
        if n1 < 2 or n1 <= n2:
            return None, None  # several names, none dominant: ambiguous
    else:
        top = ranked[0][0]
    return surface[top], evidence[top]


def _evidence(text: str, start: int, end: int) -> str:
    """The sentence (line) around a match, trimmed to 200 characters around it."""
    line_start = max(text.rfind("\n", 0, start), max(text.rfind(". ", 0, start), -1)) + 1
    line_end_candidates = [p for p in (text.find("\n", end), text.find(". ", end)) if p != -1]
    line_end = min(line_end_candidates) if line_end_candidates else len(text)
    snippet = normalize_ws(text[line_start:line_end].lstrip(". "))
    if len(snippet) > 200:
        snippet = normalize_ws(text[max(0, start - 60) : end + 60])
    return snippet
