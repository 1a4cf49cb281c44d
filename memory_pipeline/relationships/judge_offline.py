"""The offline judge: reversals found by rules, and nothing it cannot see.

Rules cannot tell whether one memory supports, extends or requires another, so this judge only
claims `contradicts`, and only for a pattern it can check: a newer decision carries a reversal
cue naming a term ("instead of X", "drop X", "switch from X to Y", "no longer ... X",
"replace X with Y", "revert X", "move ... from X to Y"), and an older decision states that term
as something it chose (it names X and does not itself reverse X); the older side may also be a
segment of another task, where a choice the semantic pass did not distil is recorded. X must be
a subject entity both memories mention (a node of the entity stage, matched by the head word of
one of its names: "Redis", "cron"): "instead of a separate zfs_exporter" names an alternative,
and when no earlier memory mentions a zfs_exporter node, nothing was reversed, however many
words a memory about "a separate rule file" shares with it (issue 34). The two must also share
their subject besides X: JUDGE_SHARED_SUBJECT_TERMS content words in common and the cosine
JUDGE_SHARED_SUBJECT_SIMILARITY. The edge reads "newer contradicts older", with the cue as its
evidence; turning the older decision into `superseded` is the dream cycle's call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory_pipeline import tuning
from memory_pipeline.relationships.models import Edge, Judgement, Memory, Pair
from memory_pipeline.semantic.text import content_terms, split_sentences

NAME = "offline-rules"

# Each pattern captures the reversed term(s) in group "old". Case-insensitive.
_TERM = r"(?P<old>[`\w][\w.`/+-]*(?:\s+[\w.`/+-]+){0,2})"
REVERSAL_CUES = (
    rf"\binstead of\s+(?:the\s+|a\s+|an\s+|using\s+)?{_TERM}",
    # Not a phrasal verb: "dropped off that stuff I baked", "drop by", "dropped out" drop nothing.
    rf"\b(?:drop|dropp(?:ed|ing)|ditch(?:ed|ing)?|abandon(?:ed|ing)?|remov(?:e|ed|ing))\s+"
    rf"(?!(?:off|by|in|out|over|back|into)\b)(?:the\s+|our\s+)?{_TERM}",
    rf"\bswitch(?:ed|ing)?\s+(?:\w+\s+){{0,3}}?from\s+{_TERM}\s+to\b",
    rf"\bmov(?:e|ed|ing)\s+(?:\w+\s+){{0,3}}?from\s+{_TERM}\s+(?:to|into)\b",
    rf"\breplac(?:e|ed|ing)\s+(?:the\s+)?{_TERM}\s+(?:with|by)\b",
    rf"\brevert(?:ed|ing)?\s+(?:to\s+)?(?:the\s+)?{_TERM}",
    rf"\bno longer\s+(?:\w+\s+){{0,3}}?(?:on|use|uses|using|need|needs)\s+{_TERM}",
    rf"\bstop(?:ped)?\s+using\s+{_TERM}",
    rf"\b(?:get|got)\s+rid\s+of\s+(?:the\s+)?{_TERM}",
)
_CUES = [re.compile(p, re.IGNORECASE) for p in REVERSAL_CUES]


def reversed_terms(*texts: str) -> list[tuple[set[str], str]]:
    """(the reversed terms, the sentence saying so) for every reversal cue in `texts`."""
    found = []
    for sentence in (s for text in texts for s in split_sentences(text)):
        for cue in _CUES:
            for match in cue.finditer(sentence):
                # The first two words: "a separate zfs_exporter" drops the zfs_exporter.
                terms = content_terms(match.group("old"))[:2]
                if terms:
                    found.append((set(terms), sentence.strip()))
    return found


def reversed_words(text: str) -> list[str]:
    """The words a reversal cue in `text` names as dropped, as written (for a full-text lookup
    of the memories that chose them)."""
    words = []
    for cue in _CUES:
        for match in cue.finditer(text):
            first = match.group("old").split()[0].strip("`'\".,;:")
            if first and content_terms(first) and first.lower() not in words:
                words.append(first.lower())
    return words


# Words just before a name that set it aside ("far less to maintain than Prometheus, Grafana and
# Alertmanager", "without Redis", "rather than cron"): that mention chose nothing.
_SET_ASIDE = re.compile(
    r"\b(?:than|instead of|rather than|without|not|no|never|don't want|do not want|avoid(?:ing)?"
    r"|over)\b[^.;:!?]{0,40}$",
    re.IGNORECASE,
)
_WORD = re.compile(r"[`\w][\w.`/+-]*")


def affirms(text: str, term: str) -> bool:
    """Whether `text` names `term` as something chosen or used: outside any reversal of it, and
    at least once not right after words that set it aside (an actual value that a later decision
    can change, not an alternative named in passing)."""
    if term not in content_terms(text):
        return False
    if any(term in terms for terms, _ in reversed_terms(text)):
        return False
    for sentence in split_sentences(text):
        for word in _WORD.finditer(sentence):
            if term in content_terms(word.group(0)):
                before = sentence[max(0, word.start() - 60) : word.start()]
                if not _SET_ASIDE.search(before):
                    return True
    return False


def _affirms(memory: Memory, term: str) -> bool:
    """The memory names `term` as something it chose or used (see `affirms`)."""
    return affirms(f"{memory.title}\n{memory.content}", term)


def _shared_subject(pair: Pair, term: str) -> bool:
    a = set(content_terms(pair.newer.text)) - {term}
    b = set(content_terms(pair.older.text)) - {term}
    return (
        len(a & b) >= tuning.JUDGE_SHARED_SUBJECT_TERMS
        and pair.similarity >= tuning.JUDGE_SHARED_SUBJECT_SIMILARITY
    )


def reversal(pair: Pair) -> Edge | None:
    """`newer contradicts older` when the newer decision reverses what the older one chose."""
    if pair.newer.type != "decision" or pair.older.type not in ("decision", "segment"):
        return None
    subjects = pair.newer.shared_subject_words(pair.older)
    if not subjects:
        return None
    for terms, sentence in reversed_terms(pair.newer.content):
        for term in sorted(terms & subjects):
            if _affirms(pair.older, term) and _shared_subject(pair, term):
                evidence = sentence[: tuning.RELATIONSHIP_EVIDENCE_CHARS]
                return Edge(
                    pair.newer.id,
                    pair.older.id,
                    "contradicts",
                    similarity=round(pair.similarity, 4),
                    evidence=f"reverses '{term}': {evidence}",
                    backend=NAME,
                )
    return None


class OfflineJudge:
    name = NAME

    def judge(self, pairs: Sequence[Pair]) -> Judgement:
        out = Judgement()
        for pair in pairs:
            edge = reversal(pair)
            if edge is not None:
                out.edges.append(edge)
        return out
