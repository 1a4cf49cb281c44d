"""The offline semantic-pass backend: deterministic rules, no model server needed.

Used when no Ollama model is reachable. Same contract as the Ollama backend (`PassInput` in,
validated `PassResult` out), built from four rule sets, all tuned in `memory_pipeline.tuning`:

1. Segmentation. Each turn is compared with the trailing `SEGMENT_WINDOW_TURNS` turns of the
   current segment:

       sim = LEX_W * lex + VEC_W * vec                (sim = lex without an embedder)
       lex = min(1, cos(tfidf(turn), tfidf(window)) / SEGMENT_LEX_COSINE_CEIL)
       vec = clip((cos(emb(turn), mean emb(window)) - VEC_FLOOR) / (VEC_CEIL - VEC_FLOOR), 0, 1)
       sim += SEGMENT_CONTINUATION_BONUS   if the prompt refers back (leading pronoun, "also",
                                           "thanks", a correction...) and has no shift cue

   tf-idf runs over the stemmed content words of the pass's own turns (prompt words count
   `SEGMENT_PROMPT_WEIGHT` times, tf = 1 + ln(count), idf = ln((1 + N) / (1 + df)) + 1). A turn
   opens a new segment when sim < SEGMENT_SHIFT_THRESHOLD, or when its prompt opens with an
   explicit shift cue ("unrelated, but", "switching gears", ...) and sim <
   SEGMENT_CUE_KEEP_THRESHOLD. A prompt with fewer than SEGMENT_MIN_PROMPT_TERMS content words
   ("go ahead", "yes please") never opens a segment without a cue. Then, against fragmentation,
   every one-turn segment without a shift cue is merged into its more similar neighbour (never
   into a neighbour that opens with a cue) unless it is below SEGMENT_LONE_MERGE_MIN_SIM for both.
   The prior tail segment is the initial current segment, so the first new turns continue it
   (`continues_tail`) unless they shift away.

2. Distillation, per new turn (tail turns are never distilled again). Inline code and fenced
   code blocks never carry a cue (`--since` is not "since"); questions are never statements.
   a. Cue sentences: every sentence of the prompt and the outcome is matched against
      DECISION_CUES ("we decided", "let's go with", "switch to X instead of Y", "drop X"...),
      then DECISION_CUES_NEED_REASON ("we'll X", "I chose/set X", "X rather than Y"; a decision
      only when a reason is in or next to the sentence), then INSIGHT_CUES ("turns out", "the
      root cause was", "lesson learned", "TIL", "gotcha", "note that", "X failed because"...).
   b. Answers: when the prompt asks why (or reports a problem, or asks for a lesson to be
      written down) the opening of the outcome is an insight; when it asks how, an insight (a
      how-to); when it asks for a choice ("A or B?", "should we", "which", "what about"), a
      decision. The memory is "<the question> <the opening sentence(s) of the answer>", and the
      question goes into `questions`. For a problem report the opening must explain (a reason,
      "X: because-like colon explanation" or a diagnosis "It's ..."). Skipped when a sentence of
      that opening was already distilled by a cue.
   c. Acceptance: a short "ok, do that" prompt makes the proposal of the previous outcome ("we
      should X", "I'd suggest X") a decision citing both turns.
   A cue memory is the cue sentence plus its reason: a "because / since / so that / , so /
   to avoid ..." clause in the same sentence, or the next sentence when it opens with a reason or
   explains a consequence ("This avoids ...", "X means ..."), or the one after that when it
   opens with a reason, or the previous sentence when the cue sentence opens with "So / That's
   why". A leading "I" becomes "The agent" (outcome) or "The user" (prompt); "Let's X" becomes
   "Decided to X"; a leading pronoun ("it", "this", ...) is resolved by prefixing the subject:
   the last code identifier of the previous sentence, else the segment title. When the memory
   shares no content word with the segment title, the title is prefixed ("<topic>: ...") so
   the sentence names what it is about. Near-duplicates (a prompt's decision echoed by the
   outcome) merge. Title = the head of the statement (before a colon that says something, after
   one that only labels: "The root cause: X" -> "X"), cut before its reason clause, without cue
   boilerplate.

3. Corrections. A new turn whose prompt opens (first CORRECTION_SCAN_CHARS) with a correction cue
   ("that's not what I asked", "I said", "you should have", "wrong file", "not X but Y", ...), or
   with a bare "No, ..." that does not also acknowledge ("thanks", "looks good"), corrects the
   previous turn's outcome. agent_did = the first sentences of that outcome; user_expected = the
   prompt without its pure-negation sentences ("No, that's wrong.").

4. Project. Only explicit naming in the segment's text (PROJECT_PATTERNS: "the <Name> project",
   "project <Name>", "in the <name> repo", "For <Name>:" opening a prompt, "New project: <name>"),
   one distinct name or a repeated one that clearly dominates; the evidence is the sentence that
   names it. A path (cwd, repository) never matches.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memory_pipeline import tuning as T
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.semantic.errors import SemanticPassError
from memory_pipeline.semantic.models import (
    CorrectionEpisode,
    DistilledMemory,
    InvalidPassOutput,
    PassInput,
    PassResult,
    Segment,
    TurnInput,
    validate_result,
)
from memory_pipeline.semantic.text import (
    STOPWORDS,
    capitalize_first,
    content_terms,
    ensure_period,
    first_sentences,
    jaccard,
    normalize_ws,
    split_sentences,
    trim_words,
)

_I = re.IGNORECASE


_CODE_SPAN = re.compile(r"`[^`]*`")


def _prose(text: str) -> str:
    """`text` with inline code blanked out (same length, so match offsets still fit): a cue word
    inside code (`--since`, `drop_table`) is not a statement."""
    return _CODE_SPAN.sub(lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", text)


class _ProsePattern:
    """A compiled regex whose `search` ignores inline code."""

    def __init__(self, pattern: str, flags: int = _I) -> None:
        self.pattern = re.compile(pattern, flags)

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(_prose(text))


def _any(patterns: Sequence[str], flags: int = _I) -> _ProsePattern:
    return _ProsePattern("|".join(f"(?:{p})" for p in patterns), flags)


_SHIFT = _any(T.SEGMENT_SHIFT_CUES)
_CONTINUATION = _any(T.SEGMENT_CONTINUATION_CUES)
_DECISION = _any(T.DECISION_CUES)
_DECISION_NEEDS_REASON = _any(T.DECISION_CUES_NEED_REASON)
_EXPLANATION = _ProsePattern(T.REASON_EXPLANATION)
_EVIDENCE = _ProsePattern(T.MEASURED_EVIDENCE)
_WHY_QUESTION = _ProsePattern(T.WHY_QUESTION)
_CHOICE_QUESTION = _ProsePattern(T.CHOICE_QUESTION)
_PROBLEM_REPORT = _ProsePattern(T.PROBLEM_REPORT)
_HOWTO_QUESTION = _ProsePattern(T.HOWTO_QUESTION)
_ACCEPTANCE = _ProsePattern(T.ACCEPTANCE)
_PROPOSAL = _ProsePattern(T.PROPOSAL)
# An answer opening that diagnoses: "It's daylight saving time.", "The cause is ...".
_DIAGNOSIS = _ProsePattern(
    r"^\W*(?:it's|it is|it was|that's|this is|the (?:cause|problem|issue|culprit)\b)", _I
)
_INSIGHT = _any(T.INSIGHT_CUES)
_REASON = _ProsePattern(T.REASON_IN_SENTENCE)
_REASON_LEAD = _ProsePattern(T.REASON_SENTENCE_LEAD)
_CORRECTION = _any(T.CORRECTION_CUES)
_LEADING_NO = _ProsePattern(T.CORRECTION_LEADING_NO)
_ACK = _ProsePattern(T.CORRECTION_ACK)
_PROJECT = [re.compile(p, re.MULTILINE) for p in T.PROJECT_PATTERNS]
_PROJECT_STOP = frozenset(T.PROJECT_NAME_STOPWORDS)

# Statements that only look like decisions.
_NOT_DECIDED = _ProsePattern(
    r"\b(?:haven't|have not|hasn't|not yet|undecided|didn't|did not|if we|whether (?:to|we)|"
    r"should we|could we|do we|or should)\b",
    _I,
)
# Sentences that open with these lean on the previous sentence for their reason.
_CONSEQUENCE_LEAD = _ProsePattern(r"^\W*(?:so|therefore|hence|thus|that's why|this is why)\b", _I)
_PRONOUN_LEAD = re.compile(r"^(?:it|this|that|these|those|they|them)\b(?!['’]s (?:a|an)\b)", _I)
_DUMMY_IT = re.compile(r"^(?:it )?turn(?:s|ed) out(?: that)?,?\s+", _I)
# "Decision X: the reason" - a colon followed by a clause of several words explains the choice.
_COLON_EXPLANATION = _ProsePattern(r"\w:\s+\S+(?:\s+\S+){4,}")
_TABLE_ROW = re.compile(r"^\s*\|")
_QUESTION_WORD = re.compile(
    r"^(?:how|why|what|which|where|when|who|should|can|could|is|are|do|does|did)\b", _I
)
# Answer openers that mean nothing without the question.
_ANSWER_PARTICLE = re.compile(
    r"^(?:(?:yes|no|yep|nope|yeah|right|correct|exactly|it does(?:n't)?|they do(?:n't)?"
    r"|we do(?:n't)?|it is(?:n't)?|they are(?:n't)?)\b(?:,? but\b)?[,:;.!—–-]+\s*)+",
    _I,
)
_INTERJECTION = re.compile(
    r"^(?:(?:ok(?:ay)?|great|thanks|thank you|perfect|cool|nice|alright|yes|yeah|yep|hmm|well|"
    r"also|and|oh|ah|right|sure)\b[,!.:]?\s+)+",
    _I,
)
_FIRST_PERSON = re.compile(r"^I(?:'ll|'ve|'m|'d| will| have| am| would)?\b\s*")
_FIRST_PERSON_VERB = {
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
_THIRD_PERSON_S = frozenset(
    """think want need prefer like know believe guess suspect expect use see feel agree plan mean
    recommend suggest""".split()  # noqa: SIM905
)
_LETS = re.compile(r"^let'?s\s+(not\s+)?", _I)
_MARKDOWN = re.compile(r"\*\*|^#+\s*|^>\s*", re.MULTILINE)
_IDENTIFIER = re.compile(r"`([^`]{2,60})`|\b([a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w+|\w+\.(?:py|ts|js))\b")
# Boilerplate removed from the head of a statement to make its title.
_TITLE_BOILERPLATE = re.compile(
    r"^(?:the (?:agent|user) )?(?:(?:we|i)(?:'ve| have)? (?:decided|agreed|opted|chose)"
    r" (?:to |that |on )?|decided to |decision\s*:\s*|let'?s |we(?:'ll| will) |(?:it )?turn(?:s|ed)"
    r" out(?: that)?,?\s+|lessons? learned\s*:?\s*|TIL\s*:?\s*|note that |gotcha\s*:?\s*|"
    r"key (?:insight|takeaway)\s*:?\s*)",
    _I,
)
# A colon label that only announces what follows: "The root cause: X", "One catch with Y: X".
_LABEL_ONLY = re.compile(
    r"^\W*(?:that's |this is |it's |here's )?(?:the |one |a |my |our |another )?"
    r"(?:real |actual |underlying |key |main |big |only )?"
    r"(?:root cause|cause|problem|issue|culprit|catch|caveat|gotcha|fix|lessons?(?: learned)?"
    r"|insight|takeaway|decision|note|rule|tip|answer|reason|trick)"
    r"(?: (?:is|was|then|here|for later|from [\w`'.-]+|with [\w`'.-]+))*\W*$",
    _I,
)
# Openers stripped from a prompt to make a segment title.
_TITLE_OPENERS = re.compile(
    r"^(?:(?:hey|hi|hello|ok(?:ay)?|so|alright|now|also|please|quick question|question)\b[,:!.]?\s*"
    r"|(?:can|could|would|will) you(?: please)?\s+|i(?:'d| would) like (?:you )?to\s+"
    r"|(?:i|we) (?:want|need|have|should|must)(?: you)? to\s+|we should\s+|help me(?: to)?\s+"
    r"|i(?:'m| am) (?:starting|building|writing|working on|setting up)\s+(?:a |an )?"
    r"|i (?:want|need|'d like)\s+(?!to\b)"
    r"|let'?s\s+)+",
    _I,
)
_GREETING = re.compile(r"^(?:good )?(?:morning|afternoon|evening)\b[,!.]?\s*", _I)
# A request clause after the subject: "X is flaky on CI, can you find out why".
_TITLE_TAIL = re.compile(
    r"[,;:–—-]\s*(?:and\s+)?(?:(?:can|could|would) you|please|any idea|what do you think|"
    r"i (?:think|guess|suspect))\b",
    _I,
)
_SHIFT_PREAMBLE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|alright|so|now)[,]?\s+)?(?:(?:totally |completely )?unrelated"
    r"(?: question| note)?|switching (?:gears|topics?)"
    r"|chang(?:e|ing) (?:of |the )?(?:topic|subject)"
    r"|(?:on )?(?:a )?(?:different|separate|side) (?:topic|question|subject|note|issue|thing)"
    r"|another (?:thing|question|topic|task|issue)|new (?:question|topic|task)|moving on"
    r"|next (?:topic|task)|something (?:else|different))\b(?:,? but)?[\s,:;.!—–-]*",
    _I,
)
# "No, that's wrong - " / "That's not what I asked: " opening a correction.
_NEGATION_CLAUSE = re.compile(
    r"^\W*(?:(?:no|nope|nah)\b[,.!:;\s—–-]*)?(?:(?:that|this|it)(?:'s| is| was) (?:wrong|incorrect"
    r"|not (?:right|correct|it|what i (?:asked(?: for)?|meant|wanted|said)))\b[,.!:;\s—–-]*)?",
    _I,
)
_NEGATION_ONLY_WORDS = frozenset(
    """no nope nah wrong incorrect not right correct what asked meant wanted said that's that this
    is was it i you the""".split()  # noqa: SIM905
)


@dataclass
class _Turn:
    turn: TurnInput
    is_tail: bool
    prompt_terms: list[str]
    vec: dict[str, float] = field(default_factory=dict)  # normalized tf-idf
    shift_cue: bool = False
    continuation_cue: bool = False
    correction_cue: bool = False

    @property
    def ordinal(self) -> int:
        return self.turn.ordinal


class OfflineRulesBackend:
    """Deterministic rule-based semantic pass. See the module docstring for every rule."""

    name = "offline-rules"

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder

    # --- entry point ---------------------------------------------------------------------------

    def run(self, pass_input: PassInput) -> PassResult:
        if not pass_input.new_turns:
            raise SemanticPassError(self.name, "pass has no new turns")
        turns = self._features(pass_input)
        embeddings = self._embed(turns)
        groups = self._segment(turns, embeddings)
        segments: list[Segment] = []
        for gi, group in enumerate(groups):
            segments.append(self._build_segment(pass_input, turns, group, continues=gi == 0))
        corrections = self._corrections(turns)
        result = PassResult(segments=segments, corrections=corrections)
        try:
            return validate_result(pass_input, result)
        except InvalidPassOutput as exc:  # a bug in these rules, never expected
            message = f"rules produced invalid output: {exc}"
            raise SemanticPassError(self.name, message, exc) from exc

    # --- features ------------------------------------------------------------------------------

    def _features(self, pass_input: PassInput) -> list[_Turn]:
        raw = [(t, True) for t in pass_input.tail_context] + [
            (t, False) for t in pass_input.new_turns
        ]
        turns: list[_Turn] = []
        counts: list[Counter[str]] = []
        for t, is_tail in raw:
            p_terms = content_terms(t.prompt)
            c: Counter[str] = Counter()
            for term in p_terms:
                c[term] += T.SEGMENT_PROMPT_WEIGHT
            c.update(content_terms(t.outcome))
            counts.append(c)
            head = t.prompt.strip()[: T.SEGMENT_SHIFT_CUE_SCAN_CHARS]
            turns.append(
                _Turn(
                    turn=t,
                    is_tail=is_tail,
                    prompt_terms=p_terms,
                    shift_cue=bool(_SHIFT.search(head)),
                    continuation_cue=bool(_CONTINUATION.search(head)),
                    correction_cue=_is_correction(t.prompt),
                )
            )
        n = len(counts)
        df: Counter[str] = Counter()
        for c in counts:
            df.update(c.keys())
        for turn, c in zip(turns, counts, strict=True):
            vec = {
                term: (1 + math.log(cnt)) * (math.log((1 + n) / (1 + df[term])) + 1)
                for term, cnt in c.items()
            }
            norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
            turn.vec = {k: v / norm for k, v in vec.items()}
        return turns

    def _embed(self, turns: list[_Turn]) -> np.ndarray | None:
        if self.embedder is None:
            return None
        texts = [f"{t.turn.prompt}\n{t.turn.outcome[:1500]}" for t in turns]
        vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        if vectors.shape != (len(turns), self.embedder.dims):
            raise SemanticPassError(
                self.name, f"embedder returned shape {vectors.shape} for {len(turns)} turns"
            )
        return vectors

    # --- similarity ----------------------------------------------------------------------------

    def _similarity(
        self, turns: list[_Turn], emb: np.ndarray | None, i: int, window: Sequence[int]
    ) -> float:
        """Similarity of turn i to the turns `window` (module docstring, rule 1), bonus excluded."""
        agg: dict[str, float] = {}
        for j in window:
            for k, v in turns[j].vec.items():
                agg[k] = agg.get(k, 0.0) + v
        norm = math.sqrt(sum(v * v for v in agg.values())) or 1.0
        cos = sum(v * agg.get(k, 0.0) for k, v in turns[i].vec.items()) / norm
        lex = min(1.0, cos / T.SEGMENT_LEX_COSINE_CEIL)
        if emb is None:
            return lex
        centroid = emb[list(window)].mean(axis=0)
        cnorm = float(np.linalg.norm(centroid)) or 1.0
        vcos = float(emb[i] @ centroid) / cnorm
        span = T.SEGMENT_VEC_COSINE_CEIL - T.SEGMENT_VEC_COSINE_FLOOR
        vec = min(1.0, max(0.0, (vcos - T.SEGMENT_VEC_COSINE_FLOOR) / span))
        return T.SEGMENT_LEX_WEIGHT * lex + T.SEGMENT_VEC_WEIGHT * vec

    def boundary_scores(
        self, pass_input: PassInput
    ) -> list[tuple[int, float, bool]]:  # pragma: no cover - a debugging aid
        """(ordinal, similarity incl. bonus, shift cue) of every new turn vs its predecessors."""
        turns = self._features(pass_input)
        emb = self._embed(turns)
        out = []
        for i, t in enumerate(turns):
            if t.is_tail or i == 0:
                continue
            window = list(range(max(0, i - T.SEGMENT_WINDOW_TURNS), i))
            out.append((t.ordinal, self._turn_sim(turns, emb, i, window), t.shift_cue))
        return out

    def _turn_sim(
        self, turns: list[_Turn], emb: np.ndarray | None, i: int, window: Sequence[int]
    ) -> float:
        sim = self._similarity(turns, emb, i, window)
        t = turns[i]
        if not t.shift_cue and (t.continuation_cue or t.correction_cue):
            sim += T.SEGMENT_CONTINUATION_BONUS
        return sim

    # --- segmentation --------------------------------------------------------------------------

    def _segment(self, turns: list[_Turn], emb: np.ndarray | None) -> list[list[int]]:
        """Groups of turn indexes; the first group holds the tail turns when it continues them."""
        first_new = next(i for i, t in enumerate(turns) if not t.is_tail)
        groups: list[list[int]] = [list(range(first_new))] if first_new else []
        for i in range(first_new, len(turns)):
            if not groups:
                groups.append([i])
                continue
            current = groups[-1]
            window = current[-T.SEGMENT_WINDOW_TURNS :]
            t = turns[i]
            sim = self._turn_sim(turns, emb, i, window)
            if t.shift_cue:
                boundary = sim < T.SEGMENT_CUE_KEEP_THRESHOLD
            elif len(t.prompt_terms) < T.SEGMENT_MIN_PROMPT_TERMS or t.correction_cue:
                boundary = False
            else:
                boundary = sim < T.SEGMENT_SHIFT_THRESHOLD
            if boundary:
                groups.append([i])
            else:
                current.append(i)
        groups = self._merge_lone(turns, emb, groups, has_tail=first_new > 0)
        if first_new and groups[0] == list(range(first_new)):
            groups = groups[1:]  # the new turns all shifted away from the tail
        return groups

    def _merge_lone(
        self,
        turns: list[_Turn],
        emb: np.ndarray | None,
        groups: list[list[int]],
        has_tail: bool,
    ) -> list[list[int]]:
        changed = True
        while changed:
            changed = False
            for gi, group in enumerate(groups):
                if len(group) != 1 or turns[group[0]].is_tail or turns[group[0]].shift_cue:
                    continue
                if has_tail and gi == 0:
                    continue
                i = group[0]
                prev_sim = next_sim = -1.0
                if gi > 0:
                    prev = groups[gi - 1]
                    prev_sim = self._similarity(turns, emb, i, prev[-T.SEGMENT_WINDOW_TURNS :])
                if gi + 1 < len(groups) and not turns[groups[gi + 1][0]].shift_cue:
                    nxt = groups[gi + 1]
                    next_sim = self._similarity(turns, emb, i, nxt[: T.SEGMENT_WINDOW_TURNS])
                if max(prev_sim, next_sim) < T.SEGMENT_LONE_MERGE_MIN_SIM:
                    continue
                if prev_sim >= next_sim:
                    groups[gi - 1].append(i)
                else:
                    groups[gi + 1].insert(0, i)
                del groups[gi]
                changed = True
                break
        return groups

    # --- segment building ----------------------------------------------------------------------

    def _build_segment(
        self, pass_input: PassInput, turns: list[_Turn], group: list[int], continues: bool
    ) -> Segment:
        members = [turns[i] for i in group]
        continues_tail = continues and members[0].is_tail
        title = _segment_title(members, pass_input.task_title)
        project, evidence = _project(members)
        memories = _distill(members, title)
        return Segment(
            first_ordinal=members[0].ordinal,
            last_ordinal=members[-1].ordinal,
            continues_tail=continues_tail,
            title=title,
            project=project,
            project_evidence=evidence,
            memories=memories,
        )

    # --- corrections ---------------------------------------------------------------------------

    def _corrections(self, turns: list[_Turn]) -> list[CorrectionEpisode]:
        out: list[CorrectionEpisode] = []
        for i, t in enumerate(turns):
            if t.is_tail or i == 0 or not t.correction_cue:
                continue
            corrected = turns[i - 1].turn
            agent_did = first_sentences(
                _clean(corrected.outcome) or "(no visible outcome)",
                T.CORRECTION_MAX_AGENT_DID_CHARS,
            )
            expected = _user_expected(t.turn.prompt)
            out.append(
                CorrectionEpisode(
                    correcting_ordinal=t.ordinal,
                    corrected_ordinal=corrected.ordinal,
                    title=trim_words(
                        f"Correction: {_strip_end(expected)}", T.DISTILL_TITLE_MAX_CHARS
                    ),
                    agent_did=agent_did,
                    user_expected=expected,
                )
            )
        return out


# --- helpers (pure functions) -------------------------------------------------------------------


def _is_correction(prompt: str) -> bool:
    head = prompt.strip()[: T.CORRECTION_SCAN_CHARS]
    if _CORRECTION.search(head):
        return True
    return bool(_LEADING_NO.search(head)) and not _ACK.search(head)


def _clean(text: str) -> str:
    return normalize_ws(_MARKDOWN.sub("", text))


def _strip_end(text: str) -> str:
    return text.strip().rstrip(".!?…:;, ")


def _user_expected(prompt: str) -> str:
    """The correcting prompt without sentences that only negate ("No, that's wrong.")."""
    sentences = [_clean(s) for s in split_sentences(prompt)]
    kept = []
    for s in sentences:
        words = re.findall(r"[a-z']+", s.lower())
        if kept or any(w not in _NEGATION_ONLY_WORDS for w in words):
            kept.append(s)
    text = " ".join(kept) if kept else _clean(prompt)
    text = _NEGATION_CLAUSE.sub("", text) or text
    return trim_words(capitalize_first(text), T.CORRECTION_MAX_USER_EXPECTED_CHARS)


def _segment_title(members: list[_Turn], task_title: str | None) -> str:
    for m in members:
        if len(m.prompt_terms) < T.SEGMENT_MIN_PROMPT_TERMS and m is not members[-1]:
            continue
        title = _title_from_prompt(m.turn.prompt)
        if title:
            return title
    if task_title and task_title.strip():
        return trim_words(task_title, T.SEGMENT_TITLE_MAX_CHARS)
    return f"Turns {members[0].ordinal}-{members[-1].ordinal}"


def _title_from_prompt(prompt: str) -> str:
    """A segment title from a prompt: its first sentence when short; else its question when it
    asks one; else the head of the first sentence before a colon or dash."""
    sentences = []
    for sentence in split_sentences(prompt)[:4]:
        s = _clean(sentence)
        s = _SHIFT_PREAMBLE.sub("", s)
        s = _TITLE_OPENERS.sub("", _GREETING.sub("", s))
        s = _strip_end(_TITLE_TAIL.split(s, maxsplit=1)[0])
        if len(content_terms(s)) >= 2 or (s and len(s.split()) >= 3):
            sentences.append(s)
    if not sentences:
        return ""
    first = sentences[0]
    if len(first) > T.SEGMENT_TITLE_SHORT_CHARS:
        questions = [
            s
            for s in sentences[1:]
            if _QUESTION_WORD.match(s)
            and len(s) <= T.SEGMENT_TITLE_MAX_CHARS
            and len(content_terms(s)) >= 3
        ]
        if questions:
            first = questions[0]
        else:
            head = re.split(r"\s*(?:[:;]|\s[–—-])\s", first, maxsplit=1)[0]
            if len(head.split()) >= 3:
                first = head
    return capitalize_first(trim_words(first, T.SEGMENT_TITLE_MAX_CHARS))


def _project(members: list[_Turn]) -> tuple[str | None, str | None]:
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    evidence: dict[str, str] = {}
    for m in members:
        for text in (m.turn.prompt, m.turn.outcome):
            for pattern in _PROJECT:
                for match in pattern.finditer(text):
                    name = match.group("name").strip("`").rstrip(".-_")
                    key = name.casefold()
                    if len(name) < 2 or key in _PROJECT_STOP:
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


@dataclass
class _Candidate:
    type: str
    content: str
    title: str
    ordinals: list[int]
    has_reason: bool
    terms: list[str]
    questions: list[str] = field(default_factory=list)


def _distill(members: list[_Turn], segment_title: str) -> list[DistilledMemory]:
    candidates: list[_Candidate] = []
    previous: _Turn | None = None
    for m in members:
        if m.is_tail:
            previous = m
            continue  # tail turns were distilled by an earlier pass
        found: set[str] = set()
        used: set[int] = set()  # outcome sentences already distilled by a cue
        outcome_sentences: list[str] = []
        for text, speaker in ((m.turn.prompt, "The user"), (m.turn.outcome, "The agent")):
            sentences = [_clean(s) for s in split_sentences(text)]
            if speaker == "The agent":
                outcome_sentences = sentences
            for j in range(len(sentences)):
                kind = _cue_kind(sentences, j)
                if kind is None:
                    continue
                cand = _statement(kind, sentences, j, speaker, segment_title, m.ordinal)
                if cand is not None:
                    found.add(kind)
                    if speaker == "The agent":
                        used.add(j)
                    _add_candidate(candidates, cand)
        asked = _question_kind(m.turn.prompt)
        if asked:
            cand = _answer(*asked, m.turn.prompt, outcome_sentences, used, m.ordinal)
            if cand is not None:
                found.add(cand.type)
                _add_candidate(candidates, cand)
        if "decision" not in found and previous is not None:
            cand = _accepted_proposal(m, previous)
            if cand is not None:
                _add_candidate(candidates, cand)
        previous = m
    if len(candidates) > T.DISTILL_MAX_MEMORIES_PER_SEGMENT:
        keep = sorted(candidates, key=lambda c: not c.has_reason)
        keep = keep[: T.DISTILL_MAX_MEMORIES_PER_SEGMENT]
        candidates = [c for c in candidates if c in keep]
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


def _is_statement(sentence: str) -> bool:
    return not sentence.endswith("?") and len(sentence.split()) >= 4


def _cue_kind(sentences: list[str], j: int) -> str | None:
    """ "decision", "insight" or None for sentence j (module docstring, rule 2)."""
    sentence = _unprefixed(sentences[j])
    if not _is_statement(sentence) or _TABLE_ROW.match(sentence):
        return None
    if not _NOT_DECIDED.search(sentence):
        if _DECISION.search(sentence):
            return "decision"
        if _DECISION_NEEDS_REASON.search(sentence) and _reason_near(sentences, j):
            return "decision"
    if _INSIGHT.search(sentence):
        return "insight"
    return None


def _unprefixed(sentence: str) -> str:
    """The sentence without chat openers ("ok,", "thanks!") and answer particles ("Yes:")."""
    stripped = _ANSWER_PARTICLE.sub("", _INTERJECTION.sub("", sentence)).strip()
    return stripped or sentence


def _is_reason(sentence: str) -> bool:
    return bool(_REASON_LEAD.search(sentence) or _REASON.search(sentence))


def _reason_near(sentences: list[str], j: int) -> bool:
    """A reason or a colon explanation in sentence j, or a reason in the next sentence.

    The previous sentence does not count: its "because" usually explains something else
    ("X isn't limited because auth rejects it. I replaced the tests.")."""
    core = sentences[j]
    if _REASON.search(core) or _COLON_EXPLANATION.search(core):
        return True
    nxt = sentences[j + 1] if j + 1 < len(sentences) else ""
    return bool(nxt) and (_is_reason(nxt) or bool(_EXPLANATION.search(nxt)))


def _with_reason(sentences: list[str], j: int, core: str) -> tuple[list[str], list[str], bool]:
    """(sentences before, sentences after, has_reason) that carry the reason of sentence j.

    The previous sentence is pulled in only when sentence j opens with "So / That's why"."""
    if _CONSEQUENCE_LEAD.search(core) and j > 0 and _is_statement(sentences[j - 1]):
        return [sentences[j - 1]], [], True  # "X is slow. So we'll use Y." - X is the reason
    if _REASON.search(core):
        return [], [], True
    nxt = sentences[j + 1 : j + 2]
    if nxt and (_is_reason(nxt[0]) or _EXPLANATION.search(nxt[0])):
        return [], nxt, True
    if j + 2 < len(sentences) and _REASON_LEAD.search(sentences[j + 2]):
        return [], sentences[j + 1 : j + 3], True
    if not _EVIDENCE.search(core):
        # The measurement that justified the choice, in one of the next two sentences.
        for k in (1, 2):
            if j + k < len(sentences) and _EVIDENCE.search(sentences[j + k]):
                return [], sentences[j + 1 : j + k + 1], True
    return [], [], bool(_COLON_EXPLANATION.search(core))


def _statement(
    kind: str, sentences: list[str], j: int, speaker: str, segment_title: str, ordinal: int
) -> _Candidate | None:
    """The standalone memory built around cue sentence `sentences[j]` (module docstring, rule 2)."""
    core = _unprefixed(sentences[j])
    before, after, has_reason = _with_reason(sentences, j, core)
    statement = core
    if kind == "decision":  # "Let's use X" is a proposal in chat, a decision once stored
        statement = _LETS.sub(lambda m: "Decided not to " if m.group(1) else "Decided to ", core)
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


def _question_kind(prompt: str) -> tuple[str, _ProsePattern] | None:
    """What the outcome of this prompt answers: (memory type, the pattern of the question)."""
    if _WHY_QUESTION.search(prompt):
        return "insight", _WHY_QUESTION
    if _HOWTO_QUESTION.search(prompt):
        return "insight", _HOWTO_QUESTION
    if _CHOICE_QUESTION.search(prompt):
        return "decision", _CHOICE_QUESTION
    if _PROBLEM_REPORT.search(prompt):
        return "insight", _PROBLEM_REPORT
    return None


def _question(prompt: str, pattern: _ProsePattern) -> str:
    """The question sentence of a prompt, with the sentence before it when it leans on it."""
    sentences = [_clean(s) for s in split_sentences(prompt)]
    picked = next(
        (i for i, s in enumerate(sentences) if s.endswith("?") and pattern.search(s)),
        next((i for i, s in enumerate(sentences) if pattern.search(s)), len(sentences) - 1),
    )
    question = (
        _INTERJECTION.sub("", _SHIFT_PREAMBLE.sub("", sentences[picked])) or sentences[picked]
    )
    if picked > 0 and (_PRONOUN_LEAD.search(question) or len(question.split()) < 6):
        previous = _SHIFT_PREAMBLE.sub("", sentences[picked - 1]) or sentences[picked - 1]
        previous = ensure_period(capitalize_first(previous))
        question = f"{previous} {capitalize_first(question)}"
    asks = question.rstrip().endswith("?") or bool(_QUESTION_WORD.match(question))
    question = trim_words(capitalize_first(_strip_end(question)), T.DISTILL_MAX_QUESTION_CHARS)
    return question + ("?" if asks else ".")


def _answer(
    kind: str,
    pattern: _ProsePattern,
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
        if not s.endswith("?") and len(s.split()) >= 2 and not _TABLE_ROW.match(s)
    ]
    if not opening:
        return None
    j = opening[0]
    core = outcome[j]
    if pattern is _PROBLEM_REPORT and not (
        _is_reason(core) or _COLON_EXPLANATION.search(core) or _DIAGNOSIS.search(core)
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
    has_reason = any(_is_reason(p) or _EXPLANATION.search(p) for p in parts)
    title_source = _ANSWER_PARTICLE.sub("", core) or core
    return _Candidate(
        kind,
        content,
        _memory_title(title_source),
        [ordinal],
        has_reason,
        content_terms(content),
        [question] if question.endswith("?") else [],
    )


def _accepted_proposal(m: _Turn, previous: _Turn) -> _Candidate | None:
    """A short acceptance ("ok store both") of a proposal in the previous outcome ("We should
    store import and export separately instead of clipping") makes that proposal a decision."""
    prompt = _clean(m.turn.prompt)
    if len(prompt.split()) > T.ACCEPTANCE_MAX_WORDS or not _ACCEPTANCE.search(prompt):
        return None
    sentences = [_clean(s) for s in split_sentences(previous.turn.outcome)]
    for j, sentence in enumerate(sentences):
        if _is_statement(sentence) and _PROPOSAL.search(sentence):
            core = _unprefixed(sentence)
            before, after, has_reason = _with_reason(sentences, j, core)
            quoted = trim_words(_strip_end(prompt), 60)
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
    before, sep, after = core.partition(": ")
    if sep:
        label = _TITLE_BOILERPLATE.sub("", _FIRST_PERSON.sub("", _unprefixed(before)))
        says_something = len(content_terms(label)) >= 2 and not _LABEL_ONLY.match(label)
        head = before if says_something else after
    reason = _REASON.search(head)
    if reason and reason.start() > 0:
        head = head[: reason.start()]
    head = _TITLE_BOILERPLATE.sub("", _FIRST_PERSON.sub("", _unprefixed(head)))
    head = _strip_end(head.strip(" ,;:—–-"))
    title = trim_words(head or _strip_end(core), T.DISTILL_TITLE_MAX_CHARS)
    return capitalize_first(title)


def _lower_first(text: str) -> str:
    """Lower-case the first letter after a "Topic: " prefix unless it starts a name."""
    word = text.split(" ", 1)[0].lower().strip(",:;")
    if word in STOPWORDS or word in ("decided", "turns", "going"):
        return text[:1].lower() + text[1:]
    return text


def _topic_label(segment_title: str) -> str:
    """A segment title short enough to prefix a memory with: at most 10 words."""
    head = split_sentences(segment_title)[:1] or [segment_title]
    words = _strip_end(head[0]).rstrip("…").split()
    if len(words) > 10:
        words = words[:10]
        while words and words[-1].lower() in STOPWORDS:
            words.pop()
    return _strip_end(" ".join(words))


def _standalone_opening(sentence: str, speaker: str, subject: str) -> str:
    """Make the first sentence readable without the chat: no bare "I" and no leading pronoun."""
    m = _FIRST_PERSON.match(sentence)
    if m and m.group(0).strip():
        suffix = m.group(0)[1:].rstrip()
        verb = _FIRST_PERSON_VERB.get(suffix, "")
        rest = sentence[m.end() :]
        first, _, tail = rest.partition(" ")
        if not verb and first.lower() in _THIRD_PERSON_S:
            rest = f"{first}s {tail}".rstrip()
        return f"{speaker} {verb + ' ' if verb else ''}{rest}".replace("  ", " ")
    body = _DUMMY_IT.sub("", sentence)
    if _PRONOUN_LEAD.match(body):
        return f"{subject}: {_lower_first(sentence)}"
    return sentence


def _subject(previous_sentence: str, segment_title: str) -> str:
    """What a leading pronoun most likely refers to: the last identifier of the previous
    sentence, else the segment's title."""
    found = [a or b for a, b in _IDENTIFIER.findall(previous_sentence)]
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
