"""The offline backend itself: turn features, segmentation (rule 1 of the package docstring),
and the pass's result assembled from the steps beside this module."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memory_pipeline import tuning as T
from memory_pipeline.embedding.embedder import Embedder
from memory_pipeline.embedding.passages import message_spans, turn_messages
from memory_pipeline.embedding.reuse import embed_reusing
from memory_pipeline.semantic.errors import SemanticPassError
from memory_pipeline.semantic.models import (
    CorrectionEpisode,
    InvalidPassOutput,
    PassInput,
    PassResult,
    Segment,
    validate_result,
)
from memory_pipeline.semantic.offline_rules.corrections import is_correction, user_expected
from memory_pipeline.semantic.offline_rules.distill import distill
from memory_pipeline.semantic.offline_rules.features import RuleTurn
from memory_pipeline.semantic.offline_rules.patterns import (
    CONTINUATION,
    DONE_OUTCOME,
    FOLLOW_UP,
    PROBLEM_OPENER,
    QUESTION_WORD,
    REQUEST_FORM,
    REQUEST_OPENER,
    SHIFT,
    clean,
    strip_end,
)
from memory_pipeline.semantic.offline_rules.project import find_project
from memory_pipeline.semantic.offline_rules.scaffolding import has_paste, subject_text
from memory_pipeline.semantic.offline_rules.titles import segment_title
from memory_pipeline.semantic.text import (
    content_terms,
    first_sentences,
    split_sentences,
    trim_words,
)


def _is_question(subject: str) -> bool:
    first = next(iter(split_sentences(subject)), "")
    return first.endswith("?") or bool(QUESTION_WORD.match(first))


def _says_done(outcome: str) -> bool:
    """The outcome reports the work done (tuning.SEGMENT_DONE_OUTCOME) in its first lines."""
    lines = [clean(line) for line in outcome.splitlines() if line.strip()]
    return any(DONE_OUTCOME.search(line) for line in lines[: T.SEGMENT_DONE_SCAN_LINES])


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

    def _features(self, pass_input: PassInput) -> list[RuleTurn]:
        raw = [(t, True) for t in pass_input.tail_context] + [
            (t, False) for t in pass_input.new_turns
        ]
        turns: list[RuleTurn] = []
        counts: list[Counter[str]] = []
        for t, is_tail in raw:
            subject = subject_text(t.prompt)
            p_terms = content_terms(subject)
            c: Counter[str] = Counter()
            for term in p_terms:
                c[term] += T.SEGMENT_PROMPT_WEIGHT
            c.update(content_terms(t.outcome))
            counts.append(c)
            head = subject[: T.SEGMENT_SHIFT_CUE_SCAN_CHARS]
            refers_back = bool(CONTINUATION.search(head) or FOLLOW_UP.search(subject))
            pasted = has_paste(t.prompt)
            turns.append(
                RuleTurn(
                    turn=t,
                    is_tail=is_tail,
                    prompt_terms=p_terms,
                    shift_cue=bool(SHIFT.search(head)),
                    continuation_cue=bool(CONTINUATION.search(head)),
                    correction_cue=is_correction(t.prompt),
                    subject=subject,
                    new_request=bool(REQUEST_OPENER.match(head) or PROBLEM_OPENER.match(head)),
                    problem_report=bool(PROBLEM_OPENER.match(head)),
                    new_question=_is_question(subject),
                    follow_up=refers_back or pasted,
                    refers_back=refers_back,
                    pasted=pasted,
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

    def _embed(self, turns: list[RuleTurn]) -> np.ndarray | None:
        if self.embedder is None:
            return None
        # Each turn exactly as its passage embeds it (a segment's passages have no heading),
        # with its messages' vectors from the same run, so the passage step reuses them instead
        # of running the model again.
        messages = [
            turn_messages(
                t.turn.prompt_speaker, t.turn.prompt, t.turn.outcome_speaker, t.turn.outcome
            )
            for t in turns
        ]
        vectors = embed_reusing(
            self.embedder, ["\n".join(m) for m in messages], [message_spans(m) for m in messages]
        )
        if vectors.shape != (len(turns), self.embedder.dims):
            raise SemanticPassError(
                self.name, f"embedder returned shape {vectors.shape} for {len(turns)} turns"
            )
        return vectors

    # --- similarity ----------------------------------------------------------------------------

    def _similarity(
        self, turns: list[RuleTurn], emb: np.ndarray | None, i: int, window: Sequence[int]
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
        self, turns: list[RuleTurn], emb: np.ndarray | None, i: int, window: Sequence[int]
    ) -> float:
        sim = self._similarity(turns, emb, i, window)
        t = turns[i]
        if not t.shift_cue and (t.continuation_cue or t.correction_cue):
            sim += T.SEGMENT_CONTINUATION_BONUS
        return sim

    # --- segmentation --------------------------------------------------------------------------

    def _segment(self, turns: list[RuleTurn], emb: np.ndarray | None) -> list[list[int]]:
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
            if all(turns[j].turn.prompt.lstrip().startswith("/") for j in current):
                # A segment of slash commands only (a workflow launcher such as
                # "/bmad:...:create-tech-spec"): the first prompt after it says what it is for.
                boundary = False
            elif t.shift_cue:
                boundary = sim < T.SEGMENT_CUE_KEEP_THRESHOLD
            elif t.correction_cue or (
                len(t.prompt_terms) < T.SEGMENT_MIN_PROMPT_TERMS
                and not (t.problem_report and t.pasted)
            ):
                # A short prompt never opens a segment, unless it reports a problem and pastes
                # it ("I'm getting this error:" and a traceback).
                boundary = False
            else:
                t.opens_purpose = self._opens_purpose(turns, i, current)
                boundary = sim < T.SEGMENT_SHIFT_THRESHOLD or t.opens_purpose
            if boundary:
                groups.append([i])
            else:
                current.append(i)
        groups = self._merge_lone(turns, emb, groups, has_tail=first_new > 0)
        groups = self._split_long(turns, emb, groups)
        if first_new and groups[0] == list(range(first_new)):
            groups = groups[1:]  # the new turns all shifted away from the tail
        return groups

    def _opens_purpose(self, turns: list[RuleTurn], i: int, current: list[int]) -> bool:
        """The purpose rule (tuning: SEGMENT_REQUEST_OPENERS...): a new request, problem report
        or question that refers to nothing said and whose words are mostly new."""
        t = turns[i]
        previous = turns[i - 1].turn
        if (
            t.problem_report
            and not t.continuation_cue
            and (t.pasted or not t.refers_back)
            and _says_done(previous.outcome)
        ):
            # A new problem with what was just reported done: a bug hunt ("I'm getting this
            # error:" and the pasted error are not a follow-up of the work).
            return True
        if t.follow_up or t.continuation_cue:
            return False
        words = set(t.prompt_terms)
        known: set[str] = set(content_terms(turns[i - 1].turn.outcome))
        for j in current:
            known.update(turns[j].prompt_terms)
        novelty = len(words - known) / len(words)
        if (
            REQUEST_FORM.match(t.subject)
            and _says_done(previous.outcome)
            and novelty >= T.SEGMENT_AFTER_DONE_NOVELTY
        ):
            return True  # the next piece of work after one reported done
        if not (t.new_request or t.new_question):
            return False
        if t.new_request:
            return novelty >= T.SEGMENT_NEW_REQUEST_NOVELTY
        return (
            len(words) >= T.SEGMENT_NEW_QUESTION_MIN_TERMS
            and novelty >= T.SEGMENT_NEW_QUESTION_NOVELTY
        )

    def _split_long(
        self, turns: list[RuleTurn], emb: np.ndarray | None, groups: list[list[int]]
    ) -> list[list[int]]:
        """The documented maximum span (SEGMENT_MAX_TURNS): a longer segment is cut before one
        of its new turns (`_cut_rank`) so that the first part fits (and the second too when the
        segment is at most twice the span), until every segment fits. Deterministic, so the same
        turns are always cut at the same places. Tail turns stay with their segment."""
        out: list[list[int]] = []
        pending = list(groups)
        while pending:
            group = pending.pop(0)
            n, most = len(group), T.SEGMENT_MAX_TURNS
            # Cut so that the first part fits, and both parts fit when the group is short enough.
            lowest = max(1, n - most) if n <= 2 * most else 1
            cuts = [k for k in range(lowest, min(most, n - 1) + 1) if not turns[group[k]].is_tail]
            if n <= most or not cuts:
                out.append(group)
                continue

            k = min(cuts, key=lambda k, g=group: self._cut_rank(turns, emb, g, k))
            turns[group[k]].opens_purpose = True
            pending[:0] = [group[:k], group[k:]]
        return out

    def _cut_rank(
        self, turns: list[RuleTurn], emb: np.ndarray | None, group: list[int], k: int
    ) -> tuple[bool, float, int]:
        """Where to cut an over-long segment: a prompt that is neither a follow-up nor short,
        then the least similar turn, then the latest."""
        t = turns[group[k]]
        weak = t.follow_up or len(t.prompt_terms) < T.SEGMENT_MIN_PROMPT_TERMS
        window = group[max(0, k - T.SEGMENT_WINDOW_TURNS) : k]
        return (weak, self._turn_sim(turns, emb, group[k], window), -k)

    def _merge_lone(
        self,
        turns: list[RuleTurn],
        emb: np.ndarray | None,
        groups: list[list[int]],
        has_tail: bool,
    ) -> list[list[int]]:
        changed = True
        while changed:
            changed = False
            for gi, group in enumerate(groups):
                first = turns[group[0]]
                if len(group) != 1 or first.is_tail or first.shift_cue or first.opens_purpose:
                    continue
                if has_tail and gi == 0:
                    continue
                i = group[0]
                prev_sim = next_sim = -1.0
                if gi > 0:
                    prev = groups[gi - 1]
                    prev_sim = self._similarity(turns, emb, i, prev[-T.SEGMENT_WINDOW_TURNS :])
                nxt_first = turns[groups[gi + 1][0]] if gi + 1 < len(groups) else None
                if nxt_first is not None and not (nxt_first.shift_cue or nxt_first.opens_purpose):
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
        self, pass_input: PassInput, turns: list[RuleTurn], group: list[int], continues: bool
    ) -> Segment:
        members = [turns[i] for i in group]
        continues_tail = continues and members[0].is_tail
        title = segment_title(members, pass_input.task_title, pass_input.source)
        project, evidence = find_project(members)
        memories = distill(members, title, between_people=pass_input.between_people)
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

    def _corrections(self, turns: list[RuleTurn]) -> list[CorrectionEpisode]:
        out: list[CorrectionEpisode] = []
        for i, t in enumerate(turns):
            if t.is_tail or i == 0 or not t.correction_cue:
                continue
            corrected = turns[i - 1].turn
            agent_did = first_sentences(
                clean(corrected.outcome) or "(no visible outcome)",
                T.CORRECTION_MAX_AGENT_DID_CHARS,
            )
            expected = user_expected(t.turn.prompt)
            out.append(
                CorrectionEpisode(
                    correcting_ordinal=t.ordinal,
                    corrected_ordinal=corrected.ordinal,
                    title=trim_words(
                        f"Correction: {strip_end(expected)}", T.DISTILL_TITLE_MAX_CHARS
                    ),
                    agent_did=agent_did,
                    user_expected=expected,
                )
            )
        return out
