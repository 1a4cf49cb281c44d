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

   emb(turn) is the turn as its passage renders it ("<speaker>: prompt\n<speaker>: outcome",
   the model's first 256 tokens), so the passage step reuses the vector (embedding/reuse.py).
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
   Purpose (tuning: SEGMENT_REQUEST_OPENERS...): a prompt that opens a new request (a work verb:
   add, build, fix, implement, migrate...) or reports a problem ("any idea why", "X is broken"),
   that does not refer back (SEGMENT_FOLLOW_UP: "this change", "still no", "it worked", a pasted
   terminal session, "implement it") and whose content words are at least
   SEGMENT_NEW_REQUEST_NOVELTY new (in no prompt of the current segment nor in the previous
   outcome) opens a segment whatever its similarity; so does a question of at least
   SEGMENT_NEW_QUESTION_MIN_TERMS content words, SEGMENT_NEW_QUESTION_NOVELTY of them new. A
   problem report ("any idea why ...", "one change please, ... omits the xml") right after an
   outcome whose first SEGMENT_DONE_SCAN_LINES lines say the work is done (SEGMENT_DONE_OUTCOME:
   "Perfect!", "Done", "✅ ...", "... successfully ...") opens a segment whatever its words: a bug
   hunt about what was just built; a problem report there names a new error or symptom too
   ("I'm getting this error:" with the error pasted, "nothing happens when ..."), its paste
   does not make it a follow-up, and it opens a segment even when its own words are few. A
   request in any words (SEGMENT_REQUEST_FORMS: "can we ...", "i'd like ...", "let's ...")
   right after such a done outcome, with at least SEGMENT_AFTER_DONE_NOVELTY of its content
   words new, opens a segment: the next piece of work after one finished. The work verbs
   include a review, a release ("bump the version"), a refactoring and an exploration.
   Such a segment is never merged away as a lone turn. (No
   time-gap rule: see tuning/semantic.py.) Maximum span: a segment longer than
   SEGMENT_MAX_TURNS is cut so its first part fits (both parts when it is at most twice that),
   before a turn that is neither a follow-up nor a short prompt if any, then the least similar,
   then the latest; repeated until every segment fits. Every rule is deterministic: the same
   turns are always cut at the same places.
   Prompts are read without their scaffolding (scaffolding.py: templates, headings, checklists,
   placeholders, slash commands, @-mentions, directives, injected tags, pasted terminal lines).

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
   d. Directions of the user (only when a-c found no decision in the turn): a prompt that
      directs or proposes (DIRECTION_HINT: "let's", "does it make sense", "instead", an
      imperative) answered by an outcome that opens by agreeing (AGREEMENT: "You're absolutely
      right", "Good point") is a decision: the prompt's directing sentences and the agent's
      reasoning after the agreement (DISTILL_ADOPTED_MAX_SENTENCES each); never for a correction.
      A bare "no" (DECLINE) to the offer closing the previous outcome (OFFER: "Want me to swap
      them anyway?") is a decision to keep things as they are, with the reason given before the
      offer, citing both turns.
   Stricter readings (tuning/semantic.py): the answer to a choice question is a decision only
   when it says what was chosen (yes/no, an imperative of choice, one of the question's options, or
   a CHOICE_MARKER such as "I'd", "rather than", "is now"), so a fact that answers "What about the
   webhooks during downtime?" is none; an answer that opens with a plan ("I'll finish ...",
   PLAN_OPENING) is no insight, and neither is the answer to a request for a text ("list what
   went wrong", WRITING_REQUEST); a remark ("That's wild", "That's acceptable if ...", REMARK)
   carries no cue and is no answer; "instead of 200 ms" (a measurement), "let's switch," and
   "drop it" (no object) and "keep X in mind" are no decisions; a "why" in reported speech ("he
   asked why") asks nothing; a title is cut at a colon only outside code and quotes.
   Between people (a chat import with no AI side, `PassInput.between_people`): statements are
   attributed to the speaker by name, not to "the user" or "the agent"; only cue sentences with
   at least DISTILL_PEOPLE_MIN_TERMS content words besides the cue's own, and answers to a real
   why-question, are distilled: no how/choice/problem answers, acceptances, adopted directions,
   declined offers or approaches (a question between people is conversation).
   A prompt sentence that opens with an imperative of choice (USER_DIRECTION: keep, use, store,
   track, extend, avoid, don't ...) and carries its reason in the sentence ("... so that new
   clients get it") is a decision; a sentence rejecting an alternative ("I don't want to open
   issues directly.", REJECTED_ALTERNATIVE) is the reason of the direction right after it.
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

3. Corrections (never between people: process.py drops them for any backend, since no agent
   did work that a reply could correct). A new turn whose prompt opens (first
   CORRECTION_SCAN_CHARS) with a correction cue
   ("that's not what I asked", "I said", "you should have", "wrong file", "not X but Y", ...), or
   with a bare "No, ..." that does not also acknowledge ("thanks", "looks good"), corrects the
   previous turn's outcome. agent_did = the first sentences of that outcome; user_expected = the
   prompt without its pure-negation sentences ("No, that's wrong.").

4. Project. Only explicit naming in the segment's text (PROJECT_PATTERNS: "the <Name> project",
   "project <Name>", "in the <name> repo", "For <Name>:" opening a prompt, "New project: <name>"),
   one distinct name or a repeated one that clearly dominates; the evidence is the sentence that
   names it. A path (cwd, repository) never matches.

Scaffolding (scaffolding.py) is never a title, a decision or an insight: titles come from the
prompt's subject (a sentence or a head before a colon made only of announcement words,
SEGMENT_TITLE_ANNOUNCE_WORDS: "ok, let's add a new feature.", "One more change:", is skipped for
what follows it), else the first answer's heading without its status word, else the task title;
distillation reads answers without headings, checklists and injected blocks, and a placeholder,
checklist line, slash command, review finding (`[P1] ...`), template instruction or status line
never carries a cue; an answer rule looks past progress reports ("I've created ...") and data
lines ("Filename: `x`").

Modules, one per step: `features` (per-turn features), `segment` (the backend: segmentation
and assembly), `distill`, `corrections`, `titles`, `project`, `scaffolding`; `patterns` holds
the compiled cues.
"""

from memory_pipeline.semantic.offline_rules.segment import OfflineRulesBackend

__all__ = ["OfflineRulesBackend"]
