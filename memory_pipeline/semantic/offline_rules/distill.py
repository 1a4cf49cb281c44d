"""Rule 2: decisions and insights distilled from a segment's new turns (cue sentences,
answers to why/how/which questions, accepted proposals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_pipeline import tuning as T
from memory_pipeline.semantic.models import (
    DistilledMemory,
)
from memory_pipeline.semantic.offline_rules.features import RuleTurn
from memory_pipeline.semantic.offline_rules.patterns import (
    ACCEPTANCE,
    AGREEMENT,
    ANSWER_PARTICLE,
    APPROACH_ACTION_ITEM,
    APPROACH_REASON_LEAD,
    CHOICE_IMPERATIVE,
    CHOICE_MARKER,
    CHOICE_QUESTION,
    COLON_EXPLANATION,
    CONSEQUENCE_LEAD,
    DECISION,
    DECISION_NEEDS_REASON,
    DECLINE,
    DEFAULT_CHANGED,
    DIAGNOSIS,
    DIRECTION_HINT,
    DUMMY_IT,
    EVIDENCE,
    EXPLANATION,
    FIRST_PERSON,
    FIRST_PERSON_VERB,
    FIX_CHOSEN,
    FIX_FINDING,
    FIX_PURPOSE,
    HOWTO_QUESTION,
    IDENTIFIER,
    INSIGHT,
    INTERJECTION,
    LABEL_ONLY,
    LETS,
    NOT_DECIDED,
    OFFER,
    PEOPLE_WHY,
    PLAN_OPENING,
    PROBLEM_REPORT,
    PRONOUN_LEAD,
    PROPOSAL,
    QUESTION_WORD,
    REASON,
    REASON_LEAD,
    REJECTED_ALTERNATIVE,
    REMARK,
    SHIFT_PREAMBLE,
    TABLE_ROW,
    THIRD_PERSON_S,
    TITLE_BOILERPLATE,
    USER_DIRECTION,
    WHY_QUESTION,
    WRITING_REQUEST,
    ProsePattern,
    clean,
    strip_end,
)
from memory_pipeline.semantic.offline_rules.scaffolding import (
    PLACEHOLDER,
    answer_text,
    is_data_line,
    is_progress_report,
    is_scaffolding_sentence,
    subject_text,
)
from memory_pipeline.semantic.text import (
    STOPWORDS,
    capitalize_first,
    content_terms,
    ensure_period,
    jaccard,
    split_sentences,
    trim_words,
)

# Words of the cues themselves: they say that something was decided or found, not what.
_CUE_WORDS = frozenset(
    content_terms(
        "decided decision final agreed turns turned lesson learned root cause because reason"
        " problem issue going"
    )
)


@dataclass
class _Candidate:
    type: str
    content: str
    title: str
    ordinals: list[int]
    has_reason: bool
    terms: list[str]
    questions: list[str] = field(default_factory=list)


def distill(
    members: list[RuleTurn], segment_title: str, *, between_people: bool = False
) -> list[DistilledMemory]:
    candidates: list[_Candidate] = []
    previous: RuleTurn | None = None
    for m in members:
        if m.is_tail:
            previous = m
            continue  # tail turns were distilled by an earlier pass
        found: set[str] = set()
        used: set[int] = set()  # outcome sentences already distilled by a cue
        outcome_sentences: list[str] = []
        prompt, outcome = m.subject or subject_text(m.turn.prompt), answer_text(m.turn.outcome)
        sides = ((prompt, "The user"), (outcome, "The agent"))
        if between_people:  # nobody is "the user" or "the agent": say who said it
            sides = (
                (prompt, m.turn.prompt_speaker or "One of them"),
                (outcome, m.turn.outcome_speaker or "The other"),
            )
        for side, (text, speaker) in enumerate(sides):
            sentences = [clean(s) for s in split_sentences(text)]
            quoted = _quoted(sentences)
            if side == 1:
                outcome_sentences = sentences
                used |= quoted
            for j in range(len(sentences)):
                if j in quoted:
                    continue
                kind = _cue_kind(sentences, j)
                if kind is not None and between_people and not _substantive(sentences[j]):
                    kind = None  # "That's amazing", "Final decision: Victoria Baths."
                if kind is None and side == 0 and not between_people:
                    kind = "decision" if _is_direction(sentences[j]) else None
                if kind is None:
                    continue
                cand = _statement(kind, sentences, j, speaker, segment_title, m.ordinal)
                if cand is not None:
                    found.add(kind)
                    if side == 1:
                        used.add(j)
                    _add_candidate(candidates, cand)
        if between_people:
            # Chat between people: a question is conversation ("How do you feel?"), a short
            # "ok" accepts no proposal, and nobody directs an agent. Only why-questions answered
            # with a cause count (the cue sentences above are the rest).
            if PEOPLE_WHY.search(prompt):
                cand = _answer("insight", WHY_QUESTION, prompt, outcome_sentences, used, m.ordinal)
                if cand is not None and _substantive(cand.title):
                    _add_candidate(candidates, cand)
            previous = m
            continue
        for cand in _approaches(outcome_sentences, used, segment_title, m.ordinal):
            found.add("decision")
            _add_candidate(candidates, cand)
        asked = _question_kind(prompt)
        if asked:
            cand = _answer(*asked, prompt, outcome_sentences, used, m.ordinal)
            if cand is not None:
                found.add(cand.type)
                _add_candidate(candidates, cand)
        if "decision" not in found:
            cand = _adopted_direction(m, prompt, outcome_sentences)
            if cand is None and previous is not None:
                cand = _accepted_proposal(m, previous) or _declined_offer(m, previous)
            if cand is not None:
                _add_candidate(candidates, cand)
        previous = m
    if len(candidates) > T.DISTILL_MAX_MEMORIES_PER_SEGMENT:
        keep = sorted(candidates, key=lambda c: not c.has_reason)
        keep = keep[: T.DISTILL_MAX_MEMORIES_PER_SEGMENT]
        candidates = [c for c in candidates if c in keep]
    candidates = [c for c in candidates if not _is_scaffolding_memory(c)]
    return [
        DistilledMemory(
            type=c.type,  # type: ignore[arg-type]
            title=c.title,
            content=c.content,
            supporting_ordinals=sorted(set(c.ordinals)),
            questions=c.questions,
        )
        for c in candidates
    ]


def _substantive(sentence: str) -> bool:
    """Enough said to stand as a decision or a finding between people: at least
    DISTILL_PEOPLE_MIN_TERMS content words besides the cue's own ("That's wild", "Good weird",
    "Final decision: Victoria Baths." say nothing an agent could use)."""
    words = [w for w in content_terms(_unprefixed(sentence)) if w not in _CUE_WORDS]
    return len(words) >= T.DISTILL_PEOPLE_MIN_TERMS


def _quoted(sentences: list[str]) -> set[int]:
    """Sentences inside a “curly-quoted” passage: text being written for someone else (a talk
    track, a message draft), not something the session found or chose."""
    inside: set[int] = set()
    depth = 0
    for j, s in enumerate(sentences):
        lead, opens, _ = s.partition("“")
        if depth > 0 or (opens and len(lead.split()) <= 4):  # "Talk track: “..." opens one
            inside.add(j)
        depth = max(0, depth + s.count("“") - s.count("”"))
    return inside


def _is_scaffolding_memory(c: _Candidate) -> bool:
    """A memory built around template text (a placeholder left in, a status line as its title)
    is dropped whole: scaffolding is never a decision or an insight."""
    return is_scaffolding_sentence(c.title) or bool(PLACEHOLDER.search(c.content))


def _is_statement(sentence: str) -> bool:
    return not sentence.endswith("?") and len(sentence.split()) >= 4


def _cue_kind(sentences: list[str], j: int) -> str | None:
    """ "decision", "insight" or None for sentence j (module docstring, rule 2)."""
    sentence = _unprefixed(sentences[j])
    if not _is_statement(sentence) or TABLE_ROW.match(sentence):
        return None
    if is_scaffolding_sentence(sentences[j]) or is_scaffolding_sentence(sentence):
        return None  # a placeholder, checklist line, review finding or status line
    if REMARK.search(sentence):
        return None  # "That's acceptable if ...", "That's wild": a remark, not a finding
    if FIX_FINDING.search(sentence):
        if FIX_CHOSEN.search(sentence) and (
            REASON.search(sentence) or FIX_PURPOSE.search(sentence)
        ):
            # "Fixed by passing markup=False, so they're rendered as plain text": the fix chosen,
            # with its reason, is a decision (the cause before it is the finding).
            return "decision"
        return "insight"  # what resolved a problem: a finding, even when it names a choice
    if not NOT_DECIDED.search(sentence):
        if DECISION.search(sentence):
            return "decision"
        if DECISION_NEEDS_REASON.search(sentence) and _reason_near(sentences, j):
            return "decision"
    if DEFAULT_CHANGED.search(sentence):
        return None  # a default the work set, without its reason: neither
    if INSIGHT.search(sentence):
        return "insight"
    return None


def _unprefixed(sentence: str) -> str:
    """The sentence without chat openers ("ok,", "thanks!") and answer particles ("Yes:")."""
    stripped = ANSWER_PARTICLE.sub("", INTERJECTION.sub("", sentence)).strip()
    return stripped or sentence


def _is_reason(sentence: str) -> bool:
    return bool(REASON_LEAD.search(sentence) or REASON.search(sentence))


def _reason_near(sentences: list[str], j: int) -> bool:
    """A reason or a colon explanation in sentence j, or a reason in the next sentence.

    The previous sentence does not count: its "because" usually explains something else
    ("X isn't limited because auth rejects it. I replaced the tests.")."""
    core = sentences[j]
    if REASON.search(core) or COLON_EXPLANATION.search(core):
        return True
    if j > 0 and REJECTED_ALTERNATIVE.search(sentences[j - 1]):
        return True  # "I don't want X. Let's Y.": Y over X
    nxt = sentences[j + 1] if j + 1 < len(sentences) else ""
    if nxt and (_is_reason(nxt) or bool(EXPLANATION.search(nxt))):
        return True
    # In a list the reason may be the item after next ("Uses X (not Y). Shows a note. Ensures
    # Z."), as `_with_reason` reads it.
    return j + 2 < len(sentences) and bool(REASON_LEAD.search(sentences[j + 2]))


def _with_reason(sentences: list[str], j: int, core: str) -> tuple[list[str], list[str], bool]:
    """(sentences before, sentences after, has_reason) that carry the reason of sentence j.

    The previous sentence is pulled in only when sentence j opens with "So / That's why"."""
    if CONSEQUENCE_LEAD.search(core) and j > 0 and _is_statement(sentences[j - 1]):
        return [sentences[j - 1]], [], True  # "X is slow. So we'll use Y." - X is the reason
    if REASON.search(core):
        return [], [], True
    if j > 0 and REJECTED_ALTERNATIVE.search(sentences[j - 1]):
        return [sentences[j - 1]], [], True  # the alternative given up
    nxt = sentences[j + 1 : j + 2]
    if nxt and (_is_reason(nxt[0]) or EXPLANATION.search(nxt[0])):
        return [], nxt, True
    if j + 2 < len(sentences) and REASON_LEAD.search(sentences[j + 2]):
        return [], sentences[j + 1 : j + 3], True
    if not EVIDENCE.search(core):
        # The measurement that justified the choice, in one of the next two sentences.
        for k in (1, 2):
            if j + k < len(sentences) and EVIDENCE.search(sentences[j + k]):
                return [], sentences[j + 1 : j + k + 1], True
    return [], [], bool(COLON_EXPLANATION.search(core))


def _statement(
    kind: str, sentences: list[str], j: int, speaker: str, segment_title: str, ordinal: int
) -> _Candidate | None:
    """The standalone memory built around cue sentence `sentences[j]` (module docstring, rule 2)."""
    core = _unprefixed(sentences[j])
    before, after, has_reason = _with_reason(sentences, j, core)
    if core.endswith(":") and not after:
        # "Key finding: X normalizes underscores too:" announces what follows: keep it.
        after = [s for s in sentences[j + 1 : j + 3] if not s.endswith("?")]
    statement = core
    if kind == "decision":  # "Let's use X" is a proposal in chat, a decision once stored
        statement = LETS.sub(lambda m: "Decided not to " if m.group(1) else "Decided to ", core)
    subject = _subject(sentences[j - 1] if j > 0 else "", segment_title)
    statement = _standalone_opening(statement, speaker, subject)
    content = _fit([*before, statement, *after], statement)
    resolved = statement.startswith(f"{subject}:")
    if not resolved and not set(content_terms(content)) & set(content_terms(segment_title)):
        # Nothing in the statement names its topic: say which topic it belongs to.
        content = f"{_topic_label(segment_title)}: {_lower_first(content)}"
    content = trim_words(content, T.DISTILL_MAX_MEMORY_CHARS)
    return _Candidate(
        kind, content, _memory_title(core), [ordinal], has_reason, content_terms(content)
    )


def _approaches(
    sentences: list[str], used: set[int], segment_title: str, ordinal: int
) -> list[_Candidate]:
    """Decisions from an approach described and then justified in the outcome: the sentences
    before one that opens with APPROACH_REASON_LEAD ("This ensures ...", "This way ..."), back to
    the nearest label line ending in ':' or at most DISTILL_APPROACH_MAX_SENTENCES of them, plus
    that sentence as the reason. Sentences already distilled by a cue are left alone."""
    found: list[_Candidate] = []
    for j, reason in enumerate(sentences):
        if j == 0 or j in used or not APPROACH_REASON_LEAD.search(reason):
            continue
        block: list[int] = []
        for k in range(j - 1, max(-1, j - 1 - T.DISTILL_APPROACH_MAX_SENTENCES), -1):
            s = sentences[k]
            if k in used or s.endswith("?") or TABLE_ROW.match(s) or is_scaffolding_sentence(s):
                break
            if is_data_line(s) and not s.endswith(":"):
                continue  # a pasted path or code line inside the description
            block.insert(0, k)
            if s.endswith(":"):
                break  # the label the description hangs from
        if not block:
            continue
        parts = [sentences[k] for k in block]
        label = strip_end(parts[0])
        items = parts[1:] if parts[0].endswith(":") and len(content_terms(label)) < 4 else parts
        items = items or parts
        if 2 * sum(bool(APPROACH_ACTION_ITEM.search(p)) for p in items) < len(items):
            continue  # a list of contents, not of what is done
        title_source = ", ".join(strip_end(p) for p in items[:2])
        content = _fit([*parts, reason], reason)
        if not set(content_terms(content)) & set(content_terms(segment_title)):
            content = f"{_topic_label(segment_title)}: {_lower_first(content)}"
        content = trim_words(content, T.DISTILL_MAX_MEMORY_CHARS)
        used.update([*block, j])
        found.append(
            _Candidate(
                "decision",
                content,
                _memory_title(title_source),
                [ordinal],
                True,
                content_terms(content),
            )
        )
    return found


def _question_kind(prompt: str) -> tuple[str, ProsePattern] | None:
    """What the outcome of this prompt answers: (memory type, the pattern of the question)."""
    if WHY_QUESTION.search(prompt):
        return "insight", WHY_QUESTION
    if HOWTO_QUESTION.search(prompt):
        return "insight", HOWTO_QUESTION
    if CHOICE_QUESTION.search(prompt):
        return "decision", CHOICE_QUESTION
    if PROBLEM_REPORT.search(prompt):
        return "insight", PROBLEM_REPORT
    return None


def _question(prompt: str, pattern: ProsePattern) -> str:
    """The question sentence of a prompt, with the sentence before it when it leans on it."""
    sentences = [clean(s) for s in split_sentences(prompt)]
    picked = next(
        (i for i, s in enumerate(sentences) if s.endswith("?") and pattern.search(s)),
        next((i for i, s in enumerate(sentences) if pattern.search(s)), len(sentences) - 1),
    )
    question = INTERJECTION.sub("", SHIFT_PREAMBLE.sub("", sentences[picked])) or sentences[picked]
    if picked > 0 and (PRONOUN_LEAD.search(question) or len(question.split()) < 6):
        previous = SHIFT_PREAMBLE.sub("", sentences[picked - 1]) or sentences[picked - 1]
        previous = ensure_period(capitalize_first(previous))
        question = f"{previous} {capitalize_first(question)}"
    asks = question.rstrip().endswith("?") or bool(QUESTION_WORD.match(question))
    question = trim_words(capitalize_first(strip_end(question)), T.DISTILL_MAX_QUESTION_CHARS)
    return question + ("?" if asks else ".")


def _answer(
    kind: str,
    pattern: ProsePattern,
    prompt: str,
    outcome: list[str],
    used: set[int],
    ordinal: int,
) -> _Candidate | None:
    """A memory from the opening of an outcome that answers a why-, how- or choice-question or a
    problem report, unless a sentence of it was already distilled by a cue. For a problem report
    the opening must explain (a reason, a colon explanation or a diagnosis like "It's ...")."""
    opening = [
        i
        for i, s in enumerate(outcome)
        if not s.endswith(("?", ":"))  # a question, or a label announcing a list
        and len(s.split()) >= 2
        and not TABLE_ROW.match(s)
        and not is_scaffolding_sentence(s)
        and not is_progress_report(s)
        and not is_data_line(s)
    ]
    if not opening:
        return None
    j = opening[0]
    core = outcome[j]
    if REMARK.search(ANSWER_PARTICLE.sub("", core) or core):
        return None  # "How do you feel?" - "That's amazing." answers nothing worth keeping
    said = ANSWER_PARTICLE.sub("", core) or core  # "Yes: a 2 TB NVMe in elm." agrees
    if pattern is PROBLEM_REPORT and WRITING_REQUEST.search(prompt):
        return None  # "also list what went wrong": the answer is the text asked for, no finding
    if pattern is PROBLEM_REPORT and not (
        _is_reason(core) or COLON_EXPLANATION.search(said) or DIAGNOSIS.search(said)
    ):
        return None
    if len(core.split()) < T.DISTILL_ANSWER_MIN_WORDS and j + 1 < len(outcome):
        after = [outcome[j + 1]]  # "They weren't done, they were acknowledged." + the how
    else:
        _, after, _ = _with_reason(outcome, j, core)
    if used & set(range(j, j + 1 + len(after))):
        return None
    parts = [core, *after]
    question = _question(prompt, pattern)
    content = trim_words(f"{question} {_fit(parts, core)}", T.DISTILL_MAX_MEMORY_CHARS)
    has_reason = any(_is_reason(p) or EXPLANATION.search(p) for p in parts)
    if kind == "decision" and not has_reason:
        # "can we jump to the next item?" - "Done. On startup the TUI now jumps ...": a change
        # made on request, not a choice; a decision carries its reason.
        return None
    if kind == "decision" and not _states_choice(parts, question):
        # "What about the webhooks during downtime?" - "Stripe retries failed deliveries for up
        # to three days": a fact that answers the question, not a choice.
        return None
    if kind == "insight" and PLAN_OPENING.search(core):
        # "The backup failed again." - "I'll finish the IAM role change ...": a plan or a to-do
        # ("Check the pool: ..."), not what was found.
        return None
    title_source = ANSWER_PARTICLE.sub("", core) or core
    return _Candidate(
        kind,
        content,
        _memory_title(title_source),
        [ordinal],
        has_reason,
        content_terms(content),
        [question] if question.endswith("?") else [],
    )


def _states_choice(parts: list[str], question: str) -> bool:
    """Whether the answer to a choice question says what was chosen: it opens with yes or no or
    with an imperative of choice ("Use cargo-zigbuild", "Reconstruct them ..."), names one of
    the question's options first ("Containers or LXC?" - "LXC, one on ash ..."), or carries a
    choice word ("I'd keep polling", "is now half-open", "rather than"). A statement of how
    things are ("Stripe retries ...", "You'd add a contour layer ...") is not a choice."""
    opening = parts[0]
    if ANSWER_PARTICLE.match(opening) or CHOICE_IMPERATIVE.search(opening):
        return True
    if any(CHOICE_MARKER.search(p) for p in parts):
        return True
    first = content_terms(opening)[:1]
    return bool(first) and " or " in question and first[0] in content_terms(question)


def _accepted_proposal(m: RuleTurn, previous: RuleTurn) -> _Candidate | None:
    """A short acceptance ("ok store both") of a proposal in the previous outcome ("We should
    store import and export separately instead of clipping") makes that proposal a decision."""
    prompt = clean(m.subject or subject_text(m.turn.prompt))
    if len(prompt.split()) > T.ACCEPTANCE_MAX_WORDS or not ACCEPTANCE.search(prompt):
        return None
    sentences = [clean(s) for s in split_sentences(answer_text(previous.turn.outcome))]
    for j, sentence in enumerate(sentences):
        if (
            _is_statement(sentence)
            and PROPOSAL.search(sentence)
            and not is_scaffolding_sentence(sentence)
        ):
            core = _unprefixed(sentence)
            before, after, has_reason = _with_reason(sentences, j, core)
            quoted = trim_words(strip_end(prompt), 60)
            body = _fit([*before, core, *after], core)
            content = trim_words(
                f'{body} The user accepted it: "{quoted}".', T.DISTILL_MAX_MEMORY_CHARS
            )
            ordinals = [previous.ordinal, m.ordinal]
            return _Candidate(
                "decision",
                content,
                _memory_title(core),
                ordinals,
                has_reason,
                content_terms(content),
            )
    return None


def _is_direction(sentence: str) -> bool:
    """A user's imperative direction with its reason in the sentence (tuning.USER_DIRECTION)."""
    core = _unprefixed(sentence)
    return (
        _is_statement(core)
        and bool(USER_DIRECTION.search(core))
        and bool(REASON.search(core))
        and not is_scaffolding_sentence(core)
    )


def _adopted_direction(m: RuleTurn, prompt: str, outcome: list[str]) -> _Candidate | None:
    """The user says what to do or what is wrong with the plan, and the outcome opens by agreeing
    ("You're absolutely right! ..."): the direction and the agent's reasoning are a decision."""
    opening = [s for s in outcome if not TABLE_ROW.match(s) and not is_data_line(s)]
    agreeing = [k for k, s in enumerate(opening[:2]) if AGREEMENT.search(s)]
    if not agreeing or m.correction_cue:
        return None  # "Brilliant! You're absolutely right." agrees in its second sentence
    opening = opening[agreeing[0] :]
    said = [
        clean(s)
        for s in split_sentences(prompt)
        if len(s.split()) >= 3 and not is_scaffolding_sentence(s)
    ]
    directing = [k for k, s in enumerate(said) if DIRECTION_HINT.search(_unprefixed(s))]
    if not directing:
        return None
    start = max(0, directing[-1] + 1 - T.DISTILL_ADOPTED_MAX_SENTENCES)
    said = said[start : directing[-1] + 1]
    reasoning = []
    for s in opening:
        rest = strip_end(AGREEMENT.pattern.sub("", s)).strip(" !.,:;—–-")
        if len(rest.split()) < 3 or s.endswith(":") or is_scaffolding_sentence(s):
            continue
        reasoning.append(rest)
        if len(reasoning) == T.DISTILL_ADOPTED_MAX_SENTENCES:
            break
    if not reasoning:
        return None
    quoted = strip_end(" ".join(ensure_period(capitalize_first(s)) for s in said))
    content = trim_words(
        f'The user: "{quoted}". The agent agreed: {_join(reasoning)}', T.DISTILL_MAX_MEMORY_CHARS
    )
    return _Candidate(
        "decision",
        content,
        _memory_title(said[-1]),
        [m.ordinal],
        True,
        content_terms(content),
    )


def _declined_offer(m: RuleTurn, previous: RuleTurn) -> _Candidate | None:
    """A bare "no" to the offer that closed the previous outcome ("Want me to swap them
    anyway?"): keeping things as they are is a decision, for the reason given before the offer."""
    prompt = clean(m.subject or subject_text(m.turn.prompt))
    if not DECLINE.search(prompt):
        return None
    sentences = [clean(s) for s in split_sentences(answer_text(previous.turn.outcome))]
    if len(sentences) < 2 or not OFFER.search(sentences[-1]):
        return None
    offer = strip_end(sentences[-1])
    reasons = [
        s
        for s in sentences[:-1]
        if _is_statement(s) and not TABLE_ROW.match(s) and not is_scaffolding_sentence(s)
    ][-T.DISTILL_ADOPTED_MAX_SENTENCES :]
    if not reasons:
        return None
    own = [clean(s) for s in split_sentences(answer_text(m.turn.outcome))][:1]
    content = trim_words(
        f'{_join(reasons)} Asked "{offer}?", the user declined ("{strip_end(prompt)}").'
        + (f" {_join(own)}" if own else ""),
        T.DISTILL_MAX_MEMORY_CHARS,
    )
    return _Candidate(
        "decision",
        content,
        _memory_title(f"Keep as is: {strip_end(reasons[0])}"),
        [previous.ordinal, m.ordinal],
        True,
        content_terms(content),
    )


def _join(parts: list[str]) -> str:
    return " ".join(ensure_period(capitalize_first(p)) for p in parts)


def _fit(parts: list[str], keep: str) -> str:
    """Join `parts`; drop the context sentences around `keep` while the text is too long."""
    limit = T.DISTILL_MAX_MEMORY_CHARS - T.DISTILL_PREFIX_RESERVE_CHARS
    parts = list(parts)
    while len(_join(parts)) > limit and len(parts) > 1:
        idx = parts.index(keep)
        parts.pop(0 if idx > 0 else len(parts) - 1)
    return _join(parts)


def _memory_title(core: str) -> str:
    """The head of a statement, without cue boilerplate: the part before a colon when it says
    something ("Use an import block instead of the CLI: ..."), else the part after it ("Lesson
    learned: X" -> "X"), cut before the reason clause."""
    head = core
    before, sep, after = _label_split(core)
    if sep:
        label = TITLE_BOILERPLATE.sub("", FIRST_PERSON.sub("", _unprefixed(before)))
        says_something = len(content_terms(label)) >= 2 and not LABEL_ONLY.match(label)
        head = before if says_something else after
    reason = REASON.search(head)
    if reason and reason.start() > 0:
        head = head[: reason.start()]
    head = TITLE_BOILERPLATE.sub("", FIRST_PERSON.sub("", _unprefixed(head)))
    head = strip_end(head.strip(" ,;:—–-"))
    title = trim_words(head or strip_end(core), T.DISTILL_TITLE_MAX_CHARS)
    return capitalize_first(title)


def _label_split(core: str) -> tuple[str, str, str]:
    """`core` split at its first ": " outside code, quotes and brackets (`{"field": "x"}` is
    code, not a label); ("", "", core)-like (core, "", "") when there is none."""
    start = 0
    while (at := core.find(": ", start)) >= 0:
        before = core[:at]
        balanced = all(before.count(a) == before.count(b) for a, b in ("()", "[]", "{}"))
        if balanced and before.count("`") % 2 == 0 and before.count('"') % 2 == 0:
            return before, ": ", core[at + 2 :]
        start = at + 2
    return core, "", ""


def _lower_first(text: str) -> str:
    """Lower-case the first letter after a "Topic: " prefix unless it starts a name."""
    word = text.split(" ", 1)[0].lower().strip(",:;")
    if word in STOPWORDS or word in ("decided", "turns", "going"):
        return text[:1].lower() + text[1:]
    return text


def _topic_label(segment_title: str) -> str:
    """A segment title short enough to prefix a memory with: at most 10 words."""
    head = split_sentences(segment_title)[:1] or [segment_title]
    words = strip_end(head[0]).rstrip("…").split()
    if len(words) > 10:
        words = words[:10]
        while words and words[-1].lower() in STOPWORDS:
            words.pop()
    return strip_end(" ".join(words))


def _standalone_opening(sentence: str, speaker: str, subject: str) -> str:
    """Make the first sentence readable without the chat: no bare "I" and no leading pronoun."""
    m = FIRST_PERSON.match(sentence)
    if m and m.group(0).strip():
        suffix = m.group(0)[1:].rstrip()
        verb = FIRST_PERSON_VERB.get(suffix, "")
        rest = sentence[m.end() :]
        first, _, tail = rest.partition(" ")
        if not verb and first.lower() in THIRD_PERSON_S:
            rest = f"{first}s {tail}".rstrip()
        return f"{speaker} {verb + ' ' if verb else ''}{rest}".replace("  ", " ")
    body = DUMMY_IT.sub("", sentence)
    if PRONOUN_LEAD.match(body):
        return f"{subject}: {_lower_first(sentence)}"
    return sentence


def _subject(previous_sentence: str, segment_title: str) -> str:
    """What a leading pronoun most likely refers to: the last identifier of the previous
    sentence, else the segment's title."""
    found = [a or b for a, b in IDENTIFIER.findall(previous_sentence)]
    if found:
        return f"`{found[-1]}`"
    return _topic_label(segment_title)


def _add_candidate(candidates: list[_Candidate], cand: _Candidate) -> None:
    for existing in candidates:
        if existing.type == cand.type and (
            jaccard(existing.terms, cand.terms) >= T.DISTILL_DEDUP_JACCARD
        ):
            existing.ordinals.extend(cand.ordinals)
            if cand.has_reason and not existing.has_reason:
                existing.content, existing.title = cand.content, cand.title
                existing.has_reason, existing.terms = True, cand.terms
            return
    candidates.append(cand)
