"""The cue patterns of the rules (phrases in memory_pipeline.tuning, compiled here) and the
small text clean-ups every step shares."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory_pipeline import tuning as T
from memory_pipeline.semantic.text import (
    normalize_ws,
)

_I = re.IGNORECASE


_CODE_SPAN = re.compile(r"`[^`]*`")


def _prose(text: str) -> str:
    """`text` with inline code blanked out (same length, so match offsets still fit): a cue word
    inside code (`--since`, `drop_table`) is not a statement."""
    return _CODE_SPAN.sub(lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", text)


class ProsePattern:
    """A compiled regex whose `search` ignores inline code."""

    def __init__(self, pattern: str, flags: int = _I) -> None:
        self.pattern = re.compile(pattern, flags)

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(_prose(text))


def _any(patterns: Sequence[str], flags: int = _I) -> ProsePattern:
    return ProsePattern("|".join(f"(?:{p})" for p in patterns), flags)


SHIFT = _any(T.SEGMENT_SHIFT_CUES)
CONTINUATION = _any(T.SEGMENT_CONTINUATION_CUES)
DECISION = _any(T.DECISION_CUES)
DECISION_NEEDS_REASON = _any(T.DECISION_CUES_NEED_REASON)
EXPLANATION = ProsePattern(T.REASON_EXPLANATION)
EVIDENCE = ProsePattern(T.MEASURED_EVIDENCE)
WHY_QUESTION = ProsePattern(T.WHY_QUESTION)
CHOICE_QUESTION = ProsePattern(T.CHOICE_QUESTION)
PROBLEM_REPORT = ProsePattern(T.PROBLEM_REPORT)
HOWTO_QUESTION = ProsePattern(T.HOWTO_QUESTION)
ACCEPTANCE = ProsePattern(T.ACCEPTANCE)
PROPOSAL = ProsePattern(T.PROPOSAL)
AGREEMENT = ProsePattern(T.AGREEMENT)
REJECTED_ALTERNATIVE = ProsePattern(T.REJECTED_ALTERNATIVE)
DIRECTION_HINT = ProsePattern(T.DIRECTION_HINT)
OFFER = ProsePattern(T.OFFER)
DECLINE = ProsePattern(T.DECLINE)
USER_DIRECTION = ProsePattern(T.USER_DIRECTION)
# An answer opening that diagnoses: "It's daylight saving time.", "The cause is ...".
DIAGNOSIS = ProsePattern(
    r"^\W*(?:it's|it is|it was|that's|this is|the (?:cause|problem|issue|culprit)\b)", _I
)
INSIGHT = _any(T.INSIGHT_CUES)
CHOICE_MARKER = ProsePattern(T.CHOICE_MARKER)
CHOICE_IMPERATIVE = ProsePattern(T.CHOICE_IMPERATIVE)
PLAN_OPENING = ProsePattern(T.PLAN_OPENING)
PEOPLE_WHY = ProsePattern(T.PEOPLE_WHY_QUESTION)
REMARK = ProsePattern(T.REMARK)
WRITING_REQUEST = ProsePattern(T.WRITING_REQUEST)
DEFAULT_CHANGED = ProsePattern(T.DEFAULT_CHANGED)
FIX_FINDING = ProsePattern(T.FIX_FINDING)
FIX_CHOSEN = ProsePattern(T.FIX_CHOSEN)
FIX_PURPOSE = ProsePattern(T.FIX_PURPOSE)
APPROACH_REASON_LEAD = ProsePattern(T.APPROACH_REASON_LEAD)
APPROACH_ACTION_ITEM = ProsePattern(T.APPROACH_ACTION_ITEM, 0)
REQUEST_OPENER = re.compile(T.SEGMENT_REQUEST_OPENERS, _I)
PROBLEM_OPENER = re.compile(T.SEGMENT_PROBLEM_OPENERS, _I)
REQUEST_FORM = re.compile(T.SEGMENT_REQUEST_FORMS, _I)
FOLLOW_UP = ProsePattern(T.SEGMENT_FOLLOW_UP)
DONE_OUTCOME = re.compile(T.SEGMENT_DONE_OUTCOME, _I)
REASON = ProsePattern(T.REASON_IN_SENTENCE)
REASON_LEAD = ProsePattern(T.REASON_SENTENCE_LEAD)
CORRECTION = _any(T.CORRECTION_CUES)
LEADING_NO = ProsePattern(T.CORRECTION_LEADING_NO)
ACK = ProsePattern(T.CORRECTION_ACK)
PROJECT = [re.compile(p, re.MULTILINE) for p in T.PROJECT_PATTERNS]
PROJECT_STOP = frozenset(T.PROJECT_NAME_STOPWORDS)

# Statements that only look like decisions.
NOT_DECIDED = ProsePattern(
    r"\b(?:haven't|have not|hasn't|not yet|undecided|didn't|did not|if we|whether (?:to|we)|"
    r"should we|could we|do we|or should|in mind)\b",
    _I,
)
# Sentences that open with these lean on the previous sentence for their reason.
CONSEQUENCE_LEAD = ProsePattern(r"^\W*(?:so|therefore|hence|thus|that's why|this is why)\b", _I)
PRONOUN_LEAD = re.compile(r"^(?:it|this|that|these|those|they|them)\b(?!['’]s (?:a|an)\b)", _I)
DUMMY_IT = re.compile(r"^(?:it )?turn(?:s|ed) out(?: that)?,?\s+", _I)
# "Decision X: the reason" - a colon followed by a clause of several words explains the choice.
COLON_EXPLANATION = ProsePattern(r"\w:\s+\S+(?:\s+\S+){4,}")
TABLE_ROW = re.compile(r"^\s*\|")
QUESTION_WORD = re.compile(
    r"^(?:how|why|what|which|where|when|who|should|can|could|is|are|do|does|did)\b", _I
)
# Answer openers that mean nothing without the question.
ANSWER_PARTICLE = re.compile(
    r"^(?:(?:yes|no|yep|nope|yeah|right|correct|exactly|it does(?:n't)?|they do(?:n't)?"
    r"|we do(?:n't)?|it is(?:n't)?|they are(?:n't)?)\b(?:,? but\b)?[,:;.!—–-]+\s*)+",
    _I,
)
INTERJECTION = re.compile(
    r"^(?:(?:ok(?:ay)?|great|thanks|thank you|perfect|cool|nice|alright|yes|yeah|yep|hmm|well|"
    r"also|and|oh|ah|right|sure)\b[,!.:]?\s+)+",
    _I,
)
FIRST_PERSON = re.compile(r"^I(?:'ll|'ve|'m|'d| will| have| am| would)?\b\s*")
FIRST_PERSON_VERB = {
    "'ll": "will",
    "'ve": "has",
    "'m": "is",
    "'d": "would",
    " will": "will",
    " have": "has",
    " am": "is",
    " would": "would",
}
# Present-tense verbs that take an -s after "The user" / "The agent".
THIRD_PERSON_S = frozenset(
    """think want need prefer like know believe guess suspect expect use see feel agree plan mean
    recommend suggest""".split()  # noqa: SIM905
)
LETS = re.compile(r"^let'?s\s+(not\s+)?", _I)
_MARKDOWN = re.compile(r"\*\*|^#+\s*|^>\s*", re.MULTILINE)
IDENTIFIER = re.compile(r"`([^`]{2,60})`|\b([a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w+|\w+\.(?:py|ts|js))\b")
# Boilerplate removed from the head of a statement to make its title.
TITLE_BOILERPLATE = re.compile(
    r"^(?:the (?:agent|user) )?(?:(?:we|i)(?:'ve| have)? (?:decided|agreed|opted|chose)"
    r" (?:to |that |on )?|decided to |decision\s*:\s*|let'?s |we(?:'ll| will) |(?:it )?turn(?:s|ed)"
    r" out(?: that)?,?\s+|lessons? learned\s*:?\s*|TIL\s*:?\s*|note that |gotcha\s*:?\s*|"
    r"key (?:insight|takeaway)\s*:?\s*)",
    _I,
)
# A colon label that only announces what follows: "The root cause: X", "One catch with Y: X".
LABEL_ONLY = re.compile(
    r"^\W*(?:that's |this is |it's |here's )?(?:the |one |a |my |our |another )?"
    r"(?:real |actual |underlying |key |main |big |only )?"
    r"(?:root cause|cause|problem|issue|culprit|catch|caveat|gotcha|fix|lessons?(?: learned)?"
    r"|insight|takeaway|finding|discovery|decision|note|rule|tip|answer|reason|trick)"
    r"(?: (?:is|was|then|here|for later|from [\w`'.-]+|with [\w`'.-]+"
    r"|in this (?:session|change|commit|round|pr|run)))*\W*$",
    _I,
)
# Openers stripped from a prompt to make a segment title.
TITLE_OPENERS = re.compile(
    r"^(?:(?:hey|hi|hello|ok(?:ay)?|so|alright|now|also|please|quick question|question)\b[,:!.]?\s*"
    r"|(?:can|could|would|will) you(?: please)?\s+|i(?:'d| would) like (?:you )?to\s+"
    r"|(?:i|we) (?:want|need|have|should|must)(?: you)? to\s+|we should\s+|help me(?: to)?\s+"
    r"|i(?:'m| am) (?:starting|building|writing|working on|setting up)\s+(?:a |an )?"
    r"|i (?:want|need|'d like)\s+(?!to\b)"
    r"|let'?s\s+)+",
    _I,
)
GREETING = re.compile(r"^(?:good )?(?:morning|afternoon|evening)\b[,!.]?\s*", _I)
# A request clause after the subject: "X is flaky on CI, can you find out why".
TITLE_TAIL = re.compile(
    r"[,;:–—-]\s*(?:and\s+)?(?:(?:can|could|would) you|please|any idea|what do you think|"
    r"i (?:think|guess|suspect))\b",
    _I,
)
SHIFT_PREAMBLE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|alright|so|now)[,]?\s+)?(?:(?:totally |completely )?unrelated"
    r"(?: question| note)?|switching (?:gears|topics?)"
    r"|chang(?:e|ing) (?:of |the )?(?:topic|subject)"
    r"|(?:on )?(?:a )?(?:different|separate|side) (?:topic|question|subject|note|issue|thing)"
    r"|another (?:thing|question|topic|task|issue)|new (?:question|topic|task)|moving on"
    r"|next (?:topic|task)|something (?:else|different))\b(?:,? but)?[\s,:;.!—–-]*",
    _I,
)
# "No, that's wrong - " / "That's not what I asked: " opening a correction.
NEGATION_CLAUSE = re.compile(
    r"^\W*(?:(?:no|nope|nah)\b[,.!:;\s—–-]*)?(?:(?:that|this|it)(?:'s| is| was) (?:wrong|incorrect"
    r"|not (?:right|correct|it|what i (?:asked(?: for)?|meant|wanted|said)))\b[,.!:;\s—–-]*)?",
    _I,
)
NEGATION_ONLY_WORDS = frozenset(
    """no nope nah wrong incorrect not right correct what asked meant wanted said that's that this
    is was it i you the""".split()  # noqa: SIM905
)


def clean(text: str) -> str:
    return normalize_ws(_MARKDOWN.sub("", text))


def strip_end(text: str) -> str:
    return text.strip().rstrip(".!?…:;, ")
