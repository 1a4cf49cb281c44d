"""Constants that tune the semantic pass: segments, titles, distillation."""

# --- semantic pass ------------------------------------------------------------------------
# Shared by memory_pipeline/semantic/{offline_rules,ollama_backend,classify}.py. Cue patterns are
# Python regexes matched case-insensitively (write `(?-i:...)` for a case-sensitive part).

# Ollama backend: one chat call per task revision.
SEMANTIC_OLLAMA_TEMPERATURE = 0.0  # deterministic answers for the same revision
# Fixed context window: Ollama's default (2-4k tokens) silently truncates a long task, and a
# per-call value would reload the model whenever it changes.
SEMANTIC_OLLAMA_NUM_CTX = 16384
SEMANTIC_OLLAMA_MAX_TURN_CHARS = 6000  # per prompt / outcome of a new turn in the rendered task
SEMANTIC_OLLAMA_MAX_TAIL_CHARS = 1500  # per prompt / outcome of a tail-context turn

# Offline segmentation. A turn's similarity to the current segment (its last few turns) is
#   sim = LEX_W * lex + VEC_W * vec          (lex only, weight 1, without an embedder)
#   lex = min(1, tfidf_cosine / SEGMENT_LEX_COSINE_CEIL)
#   vec = clip((embedding_cosine - SEGMENT_VEC_COSINE_FLOOR)
#              / (SEGMENT_VEC_COSINE_CEIL - SEGMENT_VEC_COSINE_FLOOR), 0, 1)
# plus SEGMENT_CONTINUATION_BONUS when the prompt refers back (leading pronoun, "also", a
# correction). A new segment starts when sim < SEGMENT_SHIFT_THRESHOLD, or when the prompt carries
# an explicit shift cue and sim < SEGMENT_CUE_KEEP_THRESHOLD.
SEGMENT_PROMPT_WEIGHT = 2.0  # the prompt states the topic; the outcome mostly elaborates it
SEGMENT_WINDOW_TURNS = 3  # how many trailing turns of the current segment a turn is compared to
SEGMENT_LEX_WEIGHT = 0.5
SEGMENT_VEC_WEIGHT = 0.5
SEGMENT_LEX_COSINE_CEIL = 0.35  # tf-idf cosine at which two turns count as fully on-topic
# Calibrated for the text segmentation embeds: the turn as its passage renders it, speaker labels
# included (embedding/reuse.py). The labels raise every cosine a little, so these were moved from
# 0.10 / 0.60 (for "prompt\noutcome") to keep the same share of turns below each (bench ingest
# corpus: 49 vs 51 segments per 500 turns; demo: every planted switch found, as before).
SEGMENT_VEC_COSINE_FLOOR = 0.15  # MiniLM cosine of unrelated coding turns
SEGMENT_VEC_COSINE_CEIL = 0.62  # MiniLM cosine of clearly same-topic turns
SEGMENT_SHIFT_THRESHOLD = 0.20
SEGMENT_CUE_KEEP_THRESHOLD = 0.75
SEGMENT_CONTINUATION_BONUS = 0.25
SEGMENT_MIN_PROMPT_TERMS = 3  # a prompt with fewer content words never opens a segment alone
# A lone-turn segment without a shift cue is merged into its more similar neighbour segment
# unless it is this dissimilar to both (then it is a genuine one-turn topic).
SEGMENT_LONE_MERGE_MIN_SIM = 0.08
SEGMENT_TITLE_MAX_CHARS = 80
SEGMENT_TITLE_SHORT_CHARS = 60  # a first prompt sentence this short is the title as is
# A prompt sentence made only of these words announces a subject without naming it ("ok, let's
# add a new feature."): the title comes from the next sentence.
SEGMENT_TITLE_ANNOUNCE_WORDS = (
    "new feature features thing things question questions task tasks change changes request"
    " idea one more quick small another couple add work start next"
)
SEGMENT_TITLE_ANNOUNCE_MAX_WORDS = 6

SEGMENT_SHIFT_CUES = (
    r"\bunrelated\b",
    r"\bswitching (?:gears|topics?)\b",
    r"\bchang(?:e|ing) (?:of |the )?(?:topic|subject)\b",
    r"\b(?:a |on a )?(?:different|separate|side) (?:topic|question|subject|note|issue|thing)\b",
    r"\banother (?:thing|question|topic|task|issue)\b",
    r"\bnew (?:question|topic|task)\b",
    r"\bmoving on\b",
    r"\bnext (?:topic|task)\b",
    r"\bsomething (?:else|different)\b",
    # Real sessions (evaluation/real_sessions): "let's add a new feature", "let's circle back to
    # the security ones", "i changed my mind, let's leave these for last".
    r"\bnew feature\b",
    r"\bcircle back\b",
    r"\bchanged my mind\b",
)
SEGMENT_SHIFT_CUE_SCAN_CHARS = 120  # shift cues count only near the start of a prompt
# A prompt opening like this refers back to the current segment.
SEGMENT_CONTINUATION_CUES = (
    r"^\W*(?:it|this|that|these|those|they|also|and|same|again|still|now|then|ok(?:ay)?|great"
    r"|thanks|perfect|nice|good|yes|yep|sure|do it|go ahead|continue|proceed)\b",
)

# Offline distillation.
DISTILL_MAX_MEMORY_CHARS = 600
DISTILL_TITLE_MAX_CHARS = 80
DISTILL_MAX_MEMORIES_PER_SEGMENT = 8
DISTILL_DEDUP_JACCARD = 0.6  # two cue sentences this similar are one memory (prompt + echo)
DISTILL_MAX_QUESTION_CHARS = 200
DISTILL_PREFIX_RESERVE_CHARS = 80  # room for the topic prefix within the memory limit
# An answer's opening shorter than this ("They weren't done, they were acknowledged.") takes the
# next sentence along.
DISTILL_ANSWER_MIN_WORDS = 12
# Between people (a chat import with no AI side), a cue sentence is a decision or an insight only
# with at least this many content words besides the cue's own: "That's wild", "Good weird",
# "Final decision: Victoria Baths." are conversation.
DISTILL_PEOPLE_MIN_TERMS = 4
DECISION_CUES = (
    r"\b(?:we|i)(?:'ve| have)? (?:decided|agreed|chose|chosen|opted|settled on|went with)\b",
    r"\bdecided to\b",
    r"\bdecision\s*:",
    # ... with what is chosen after it ("then let's switch," or "drop it" lose their subject).
    r"\blet'?s (?:go with|use|stick with|keep|switch|move to|drop|not use|replace)\b"
    r"(?!\s*(?:[,.;:!?]|$|(?:it|this|that|them)\b))",
    r"\b(?:i'm|we're|i am|we are) going with\b",
    r"^going with\b",
    r"\bwe(?:'ll| will| should| are going to|'re going to) (?:use|go with|switch|keep|stick"
    r" with|drop|move to|replace)\b",
    # Not a measurement ("slow after the switch, 4 seconds instead of 200 ms").
    r"\b(?:use|using|switch\w*|go(?:ing)? with|mov\w+ to|replac\w+)\b[^.;]{1,80}"
    r"\b(?:instead of|rather than)\b(?!\s*[~≈]?\d)",
    r"\b(?:let'?s|we(?:'ll| will| can| should)?|decided to|i'?ll|i) drop(?:ped)?\b"
    r"(?!\s*(?:[,.;:!?]|$|(?:it|this|that|them)\b))",
    r"\bprefer(?:red)? [^.;]{1,60}\bover\b",
    r"\bwe (?:\w+ ){1,2}[^.;]{0,60}\binstead of\b",
    r"^\W*(?:stay|stick) with\b|\bkeep using\b",
)
# A sentence of a change report that sets a default (one of DECISION_CUES_NEED_REASON): never an
# insight, even without a reason ("by default" is otherwise an insight cue: a tool's behaviour).
DEFAULT_CHANGED = (
    r"\bby default\b[^.;:]{0,80}\bnow\b|\bnow\b[^.;:]{0,80}\bby default\b|\bnow defaults? to\b"
    r"|\bdefaults? (?:is |are )?now\b"
)
# Weaker decision cues: they make a decision only when a reason is in or next to the sentence
# (a plan without a why is not worth remembering as a decision).
DECISION_CUES_NEED_REASON = (
    r"(?:^|:\s)\W*(?:i think,? |i guess,? |i feel like )?(?:(?:for|in|on|with|after|until|once"
    r"|from now on|going forward|instead|so|then|for now)\b[^,;:.]{0,40}?,?\s+)?we(?:'ll| will"
    r"|'re going to| are going to| won't| will not| should(?:n't| not)?)\b"
    r"(?!\s+(?:need|have) to\b)",  # "we'll need to choose a map SDK" is a requirement
    r"^\W*(?:so |then )?i(?:'ll| will)? (?:set|chose|picked|used|kept|switched|replaced|moved"
    r"|pinned|disabled|enabled|went with|opted|did not use|didn't use|avoided|left)\b",
    r"\brather than\b",
    # A choice against a named alternative in a report: "Uses the session ID from the metadata
    # (not the filename)", "using X, not Y".
    r"\b(?:use[sd]?|using|now uses?|reads?|takes?)\b[^.;()]{1,80}\((?:not|instead of|rather than)"
    r"\s[^)]{1,60}\)",
    r"\b(?:use[sd]?|using)\b[^.;]{1,80},\s*not (?:the |a |an )?[\w`'.-]+",
    # A default the work set ("By default, exports are now copied to ..."): a decision with a
    # reason, else nothing (DEFAULT_CHANGED above: not a fact about a tool either).
    DEFAULT_CHANGED,
    # The means of an approach: "handles concurrent sessions by detecting the newest file".
    r"\b(?:handles?|handled|solves?|solved|avoids?|avoided|identif(?:y|ies|ied)|detects?|detected"
    r"|prevents?|prevented)\b[^.;]{1,60}\bby \w+ing\b",
    # A change reported as a short list item ("Added `x/` to `.gitignore`", "Pinned the
    # version"); a long sentence opening so is a report of the work, not one choice.
    r"^\W*(?:added|set|pinned|disabled|enabled|switched|replaced|moved|kept|excluded|capped"
    r"|limited)\b(?:\s+\S+){0,10}\s*$",
    # A direction the user gives with a hedge: "i think we would want to include all sources".
    r"\bwe(?: would|'d) (?:want|like|rather|prefer)\b",
    # A direction with its reason beside it (real sessions): "let's remove the code areas line
    # ... i think it's confusing because ...", "there is a need to track the latest synced
    # message id, so that the next sync cycle can find the delta".
    r"^\W*let'?s (?!(?:see|try|check|look|do|get|work|continue|go|validate|run|start|think"
    r"|talk|make sure)\b)\w+",
    r"\b(?:there is|there's) a need to\b",
)
# A fix that worked, reported as what resolved the problem ("Key fix: resolved the Dialyzer false
# positive by using X instead of Y"): a finding (an insight), checked before the decision cues.
FIX_FINDING = r"(?:^|:\s+)\W*(?:resolved|fixed|solved|worked around|got rid of)\b[^.;]{0,100}\bby\b"
# ...except a fix reported as what was done, with its reason ("Fixed by removing the fixed IDs
# - they're never queried by ID, so the IDs were unnecessary"): the fix chosen is a decision.
FIX_CHOSEN = r"^\W*(?:fixed|solved|resolved)(?: (?:it|this|that|the \w+))? by \w+ing\b"
FIX_PURPOSE = r"\bso (?:they|it|that|each|every|nothing)\b|\s[—–]\s*(?:they|it|this)\b|\(for [\w-]+"
# A sentence opening like this gives the reason for the approach described just before it
# ("The script now: detects X; creates Y. This ensures that ..."): the sentences since the last
# label line (at most DISTILL_APPROACH_MAX_SENTENCES) and this one are a decision.
APPROACH_REASON_LEAD = r"^\W*(?:this|that) (?:way|ensures|guarantees|avoids|prevents|keeps)\b"
DISTILL_APPROACH_MAX_SENTENCES = 4
# ...when what it describes is something done, not a list of contents ("The README now
# includes: a JSON example, ..."): most of its items open with a verb ("Detects the PID",
# "Creates a marker file") or it says what is used.
APPROACH_ACTION_ITEM = r"^\W*[A-Za-z]+(?:s|ed)\b|\b(?:use|uses|using|used)\b"
INSIGHT_CUES = (
    r"\bturn(?:s|ed)? out\b",
    r"\broot cause\b",
    r"\blessons? learned\b",
    r"\bthe (?:real |actual |underlying )?(?:problem|issue|bug|culprit|catch) (?:was|is)\b",
    r"\b(?:one|the|a) (?:catch|caveat|pitfall|footgun)\b",
    r"\bworks because\b",
    r"\b(?:is|was|are|were|went|ran|happened|happens|fails|failed|broke|breaks|crashed"
    r"|crashes|hangs|hung|times out|timed out|grew|grows|stalled|stalls|stayed|stays|worked"
    r"|works|returned|returns|showed|shows)\b[^.;]{0,60}\bbecause\b",
    r"\b(?:that's|this is|that is) (?:exactly )?what happened\b",
    r"(?-i:\bTIL\b)",
    r"\bgotcha\b",
    r"(?<!a )\bnote that\b",  # not "together with a note that ..." (a to-do)
    r"\bthe (?:reason|fix|trick) (?:was|is)\b",
    r"\bkey (?:insight|takeaway|finding|discovery)\b",
    r"\b(?:was|is) caused by\b",
    r"\bkeep in mind\b",
    r"\bthe rule(?: is)?\s*:|\brule of thumb\b",
    r"\b(?:was|is) a (?:real |genuine |known )?bug\b",
    r"\bby default\b(?![^(]*\))|\b(?:'s|s') default\b",  # not "(using --all by default)"
    r"\b(?:doesn't|does not|don't|do not|never|only) (?:guarantee|promise)s?\b"
    r"|\bis(?:n't| not) guaranteed\b",
    # What the session established by trying ("I have found that ...", "confirmed that ...").
    r"\b(?:i|we)(?:'ve| have)? (?:found|noticed|observed|discovered|confirmed|verified) that\b",
    # A requirement or constraint found ("SQLite database is NOT required", "Only session.jsonl
    # is required", "content must not be modified").
    r"\b(?:is|are)(?:n't| not) (?:required|needed|necessary)\b"
    r"|\bonly [^.;]{1,40}\b(?:is|are) (?:required|needed|necessary)\b",
    r"\bmust(?:n't| not| never) be\b",
    r"\b(?:a |the )?bug where\b",
    # What the agent could not do, and why ("I couldn't inspect the tab: the tool only sees ...").
    r"^\W*(?:i|we) (?:couldn['’]t|could not|can['’]t|cannot|wasn['’]t able to|was unable to"
    r"|weren['’]t able to)\b[^.;]{0,80}(?::\s+\S+(?:\s+\S+){3,}|\bbecause\b)",
)
# A reason clause inside the cue sentence...
REASON_IN_SENTENCE = (
    r"\b(?:because|since|so that|so (?:we|it|the|that|there)|to avoid|to prevent|in order to"
    r"|due to|as (?:it|this|that|they)|which (?:means|avoids|keeps|lets|makes)|otherwise"
    r"|given that|thanks to|for (?:backwards?|backward) compatibility)\b|,\s*so\b"
    r"|,\s*making (?:it|this|them|sure)\b"
    r"|\bso (?:a |an |the )?[\w`'-]+(?: [\w`'-]+)? (?:can|could|will|would|won't|doesn't|don't"
    r"|never|always|is|are|stays?|gets?|goes|has|have)\b"
)
# ...or an adjacent sentence that opens with one or explains a consequence.
REASON_SENTENCE_LEAD = (
    r"^\W*(?:because|since|this is because|that's because|that is because|the (?:main |deciding "
    r"|key |only )?reason|that way|this way|(?:this|that|it) (?:avoids|keeps|means|makes|lets"
    r"|ensures|guarantees|prevents)|otherwise|so that|as a result|that's why|this is why)\b"
    # A list item that states the benefit ("Ensures the folder name matches the summary",
    # "Makes exports easily accessible") or what no longer happens ("Export folders won't
    # clutter your git repository").
    r"|^\W*(?:ensures|guarantees|prevents|avoids|keeps)\b"
    r"|^\W*makes\b[^.;]{0,40}\b(?:easy|easier|easily|possible|sure|safe|safer|accessible)\b"
    r"|^\W*[\w`'*/.-]+(?: [\w`'*/.-]+){0,4} (?:won't|will not|no longer|can no longer|can't"
    r"|cannot|never) \w+"
)
REASON_EXPLANATION = r"\b(?:means|ensures|guarantees|avoids|prevents|keeps)\b"
# A measured result right after a choice is its justification ("1.07 s versus 3.41 s, a 3.2x
# speedup"): the sentence is kept with the decision.
MEASURED_EVIDENCE = (
    r"\b\d+(?:\.\d+)?\s?(?:x|×|%|ms|µs|ns|s|sec|seconds|minutes|min|h|kb|mb|gb|tb)\b"
    r"|\b(?:faster|slower|speedup|speed-up|throughput|latency)\b"
)
# A prompt asking why/what caused something, or asking to record a lesson: the outcome's opening
# explains it (an insight).
WHY_QUESTION = (
    # Not reported speech ("my partner asked why it has no dark mode").
    r"(?<!asked )(?<!asks )(?<!asking )(?<!asked me )\bwhy\b"
    r"|\bhow come\b|\bwhat(?:'s| is| was) (?:causing|going on|happening|wrong|the (?:problem"
    r"|issue|cause))\b|\bwhere (?:is|does) (?:that|this|it) com(?:e|ing) from\b"
    r"|\bdoes (?:that|this|it) matter\b|\bi thought\b|\bany idea\b|\bsays? [^?.]{0,60}\?"
    r"|\bwhat (?:we're|we are|i'm|i am) dealing with\b|\btell me (?:what|why|how)\b|\bexplain\b"
    r"|(?:^|\?\s*)how\s*\??\s*$|\blessons?\b|\bwrite (?:this|that|it) down\b"
    r"|\b(?:gotchas?|pitfalls?|caveats?|risks?)\b[^.?!]*\?|\banything to (?:watch|look) out for\b"
    r"|\b(?:add|put) (?:this|that|it) (?:to|in) (?:the |our )?(?:project )?(?:notes|docs|readme)\b"
    # A question about how things are ("is there supposed to be a json file or is that somewhere
    # else?"): its answer is a fact found.
    r"|\bsupposed to\b[^?]*\?|\bwhere (?:is|are|does|do)\b[^?]*\?"
)
# A prompt reporting a problem: the outcome's opening is an insight when it explains the cause.
PROBLEM_REPORT = (
    r"\b(?:fail(?:s|ed|ing)|errors?|exception|crash(?:ed|es)?|broken|breaks|doesn't work"
    r"|not working|off by|slow(?:er)?|flaky|hangs|stuck|oom(?:-killed)?|timed? ?out|duplicates?"
    r"|double[- ]\w+|wrong|missing|never (?:got|arrived|ran)|lost|loses|forgets|forgetting"
    r"|disappear(?:s|ed)?|keeps? (?:failing|crashing|forgetting|restarting|changing|wanting)"
    r"|doesn't|didn't|won't|can't|isn't)\b"
)
# A prompt asking how to do something: the outcome's opening is a learned how-to (an insight).
# "how to" counts in a question or at the start, not in a request to write about it ("add detail
# in the readme on how to create a hook").
HOWTO_QUESTION = r"\bhow (?:do|can|would) (?:i|we|you)\b|\bhow to\b[^.?!]*\?|^\W*how to\b|\bcan i\b"
# A prompt asking for a choice or a fix: the outcome's opening states the choice (a decision).
CHOICE_QUESTION = (
    r"\bshould (?:we|i|it|the|this|that|they)\b|\bwhich\b[^.?!]*\?|\bwhat about\b|\bhow should\b"
    r"|\bwhat \w+ (?:for|to use)\b"
    r"|\bwhat do you (?:suggest|recommend|think)\b|\bwhat(?:'s| is) the (?:fix|best|right)\b"
    r"|\b[\w`'-]+ or [\w`'-]+\s*\?|\bdo we (?:need|want)\b|\bis it better\b|\bfix or\b"
    r"|\bcan we\b"
    r"|\bwhat (?:do|does|should) [\w\s]{0,30}\bdo\b|\?\s*[\w`'-]+(?: [\w`'-]+)?\s*\?"
    r"|^\W*so\s+[\w`'.-]+\s*\?\s*$|^\W*`?\w+[_.-][\w.-]+`?\s*\?\s*$"
)
# The answer to a choice question is a decision only when it says what was chosen (distill.py,
# _states_choice): it opens with yes/no or with one of these imperatives, names one of the
# question's options first, or carries a CHOICE_MARKER. "Ask her" defers the choice.
CHOICE_IMPERATIVE = (
    r"^\W*(?:use|keep|go with|set|store|add|put|make|reconstruct|run|move|switch|stay|stick"
    r"|pin|track|drop|skip|leave|split|pass|start|write|let|do|don't|do not|avoid|prefer"
    r"|choose|pick|try|turn|enable|disable|cache|create|mark|return|default to|separate)\b"
)
CHOICE_MARKER = (
    r"\b(?:i'?d|we'?ll|we will|we should|you should|go with|lean(?:ing)?|recommend|prefer"
    r"|instead|rather than|(?:is|are) now|better|stick with|stay with|decided|chose|choose)\b"
)
# An answer opening that is a plan or a to-do ("I'll finish ...", "Check the pool: ..."): never
# an insight, whatever the question.
PLAN_OPENING = (
    r"^\W*(?:i'll|i will|we'll|we will|let me|i'm going to|we're going to|going to|finish"
    r"|(?:check|write|try|run) (?:the|your|it|this|that|if|whether)\b)"
)
# Between people only a real why-question ("Why did staging have it and prod not?") makes its
# answer a finding; "asked me why anyone needs logarithms" or "Why Gus." is conversation.
PEOPLE_WHY_QUESTION = r"\b(?:why|how come)\b[^.!?]*\?"
# A sentence that only judges what was said ("That's wild.", "That's acceptable if ...", "It's
# smart though"): never a decision or an insight, and no answer to keep.
REMARK = (
    r"^\W*(?:that|it|this)(?:'s| is| was| sounds| looks) (?:(?:so|really|very|kind of|pretty"
    r"|basically|actually|totally|quite) )?(?:acceptable|fine|great|good|fair|amazing|wild"
    r"|incredible|kind|smart|nice|cool|interesting|funny|true|ok|okay|progress|deep|weird"
    r"|lovely|brilliant|awesome|perfect|terrible|awful|sad|hilarious|crazy)\b"
)
# A prompt asking for a text ("also list what went wrong", "summarize the incidents"): its
# answer is that text, never the cause of a problem the prompt names.
WRITING_REQUEST = (
    r"^\W*(?:(?:also|and|now|then|ok(?:ay)?|please)[,]?\s+)*(?:list|summari[sz]e|write|draft"
    r"|outline|recap|describe)\b"
)
# A short prompt accepting a proposal from the previous outcome makes that proposal a decision.
ACCEPTANCE = (
    r"^\W*(?:ok(?:ay)?|yes|yep|yeah|sure|agreed|sounds good|go|do it|let'?s do (?:it|that)"
    r"|go ahead|makes sense)\b"
)
ACCEPTANCE_MAX_WORDS = 8
PROPOSAL = (
    r"\b(?:we|you) (?:should|could)\b|\bi(?:'d| would) (?:suggest|recommend|go with|use)\b"
    r"|\bi (?:suggest|recommend|propose)\b|\bmy recommendation\b"
    r"|\bthe (?:simplest|best|cleanest|safest) (?:option|fix|approach|way) (?:is|would be)\b"
)
# A direction of the user that the agent adopts (distill.py, `_adopted_direction`): the outcome
# opens by agreeing ("You're absolutely right!", "Good point.") and the prompt said what to do or
# what is wrong with the plan. The prompt and the agent's reasoning after the agreement (at most
# DISTILL_ADOPTED_MAX_SENTENCES of each) are one decision.
AGREEMENT = (
    r"^\W*(?:(?:brilliant|excellent|great|good|perfect)[!.,]\s*)?(?:you'?re (?:absolutely "
    r"|completely |totally |quite )?right|you are (?:absolutely )?right"
    r"|good (?:point|call|catch|idea)"
    r"|great (?:point|idea|call|catch)|fair point|agreed|exactly right|that makes sense"
    r"|(?:that's|that is) a (?:good|great|fair|better) (?:point|idea|call|approach))\b"
)
DISTILL_ADOPTED_MAX_SENTENCES = 2
# A sentence that rejects an alternative ("i don't want to open issues or PRs directly.") is the
# reason of the direction right after it ("let's design a write-up for each team"): chose X over Y.
REJECTED_ALTERNATIVE = (
    r"^\W*(?:(?:no|ok(?:ay)?|so)[,.!]?\s+)?(?:i|we) (?:don'?t|do not|won'?t|will not"
    r"|would rather not) (?:want|need|like) (?:to|you to|it to)\b"
    r"|^\W*(?:we|you) (?:shouldn'?t|should not)\b"
)
# ...when a sentence of the prompt proposes or directs (an agreement with a correction or with a
# report is not a choice: the correction is recorded as a correction episode).
DIRECTION_HINT = (
    r"\blet'?s\b|\b(?:we|you) (?:should|could|can|need to|must|don'?t need)\b|\bdoes it make sense"
    r"\b|\binstead\b|\bwhat about\b|\bwhy not\b|\bhow about\b|\bbetter to\b|\bno need\b"
    r"|^\W*(?:please\s+)?(?:just\s+)?(?:use|keep|store|set|track|remove|drop|put|move|leave|avoid"
    r"|reuse|extend|don'?t|do not)\b"
)
# An offer that closes an outcome ("Want me to swap them anyway?") declined by a bare "no": the
# user chose to keep things as they are, for the reason the outcome gave before the offer.
OFFER = (
    r"^\W*(?:(?:do you |would you )?want me to|should i|shall i|would you like me to"
    r"|do you want (?:me )?to)\b[^?]*\?\s*$"
)
DECLINE = (
    r"^\W*(?:no|nope|nah|no thanks?(?: you)?|not now|leave (?:it|them)(?: as (?:is|they are))?)"
    r"\W*$"
)
# A user's imperative direction that carries its reason in the same sentence ("track it in the
# same file, just extend the json so that new clients get it"): a decision (prompt sentences only;
# a work request such as "fix X because Y" is not a choice and opens with another verb).
USER_DIRECTION = (
    r"^\W*(?:(?:ok(?:ay)?|so|no|then|instead)[,.!]?\s+)?(?:please\s+)?(?:just\s+)?(?:keep|use"
    r"|store|track|put|leave|drop|extend|stick with|avoid|reuse|prefer|don'?t|do not|never"
    r"|always)\b"
)
# Correction cues are looked for near the start of a prompt that follows an agent outcome.
CORRECTION_SCAN_CHARS = 240
CORRECTION_CUES = (
    r"\bthat(?:'s| is| was)? (?:not (?:right|correct|it|what i)|wrong|incorrect)\b",
    r"\bthis (?:is|was) (?:wrong|incorrect|not what)\b",
    r"\bnot what i (?:asked|meant|wanted|said|need(?:ed)?)\b",
    r"\bi (?:said|told you|asked for|asked you to|meant)\b",
    r"\byou should(?:'ve| have)\b",
    r"\byou were supposed to\b",
    r"\bwhy did you\b",
    r"\bi (?:didn't|did not) (?:ask|want|say)\b",
    r"\bactually,? i (?:wanted|meant|asked|need(?:ed)?)\b",
    r"\bmisunderst(?:ood|and)\b",
    r"\bwrong (?:file|function|method|class|module|branch|directory|folder|table|column"
    r"|endpoint|repo|test|one|place|version|command|key|field)\b",
    r"\byou (?:broke|removed|deleted|reverted|ignored|forgot|missed|dropped)\b",
    r"\bnot (?:the )?[\w`./-]+(?: [\w`./-]+){0,3},? but (?:the )?[\w`./-]+",
    r"\bthe opposite\b",
)
# "No, ..." at the very start is a correction only when the prompt does not also acknowledge.
CORRECTION_LEADING_NO = r"^\W*(?:no|nope|nah)\b(?!\s+(?:worries|problem|rush|need))\s*[,.!:;—–-]"
CORRECTION_ACK = (
    r"\b(?:thanks|thank you|great|perfect|awesome|nice|looks good|that works|works now"
    r"|that's fine|all good|lgtm)\b"
)
CORRECTION_MAX_AGENT_DID_CHARS = 320
CORRECTION_MAX_USER_EXPECTED_CHARS = 400
# Project naming: only explicit mentions in the turn text, matched case-SENSITIVELY (a name is
# capitalized, backticked or hyphenated/underscored). Group "name" is the project.
_PROJECT_NAME = r"(?P<name>`[^`\s]{2,40}`|[A-Z][\w.-]{1,40}|[a-z][\w.]*[-_][\w.-]+)"
PROJECT_PATTERNS = (
    r"\b(?i:the) " + _PROJECT_NAME + r" (?i:project|codebase)\b",
    r"\b(?i:project) " + _PROJECT_NAME,
    r"\b(?i:in the) (?P<name>`[^`\s]{2,40}`|[\w.-]{2,40}) (?i:repo|repository)\b",
    r"^\s*(?i:for) " + _PROJECT_NAME + r"\s*:",
    r"\b(?i:(?:new |the )?project)\s*:\s*(?P<name>`[^`\s]{2,40}`|[A-Za-z][\w.-]{1,40})",
)
# Words the patterns above can capture that never name a project.
PROJECT_NAME_STOPWORDS = tuple(
    """
    this that the a an my our your same whole new old other main current entire git local remote
    upstream existing previous next first second test demo example sample it its root parent
    monorepo python node docs backend frontend api web mobile open-source side big small real
    original following
    """.split()  # noqa: SIM905 - a word list reads better as text
)

# Memory classification (classify.py): depth = base(type) + reason + specificity + length band.
DEPTH_BASE = {"decision": 0.45, "insight": 0.45, "correction": 0.40, "segment": 0.25}
DEPTH_REASON_BONUS = 0.20
DEPTH_SPECIFICITY_STEP = 0.07  # per kind of specific detail (identifier, number, code, error)
DEPTH_SPECIFICITY_CAP = 0.21
DEPTH_SHORT_WORDS = 8  # fewer words than this: too thin to act on
DEPTH_SHORT_PENALTY = 0.10
DEPTH_GOOD_WORDS = (15, 120)  # a sentence-to-paragraph statement carries the most
DEPTH_GOOD_BONUS = 0.10
ENCODING_CONTEXT_PART_CHARS = 60

# Pass storage and eligibility.
SEMANTIC_QUIET_MINUTES = 30  # a task is processed once no turn was appended for this long
# The semantic pass sensor (schedules.py) looks for tasks whose quiet period has just elapsed at
# most this often: a pass starts within quiet period + this + queue and start-up (target: quiet
# period + 2 minutes). Each look is one query over captured tasks.
SEMANTIC_SENSOR_INTERVAL_S = 60
SEGMENT_CONTENT_MAX_CHARS = 20000  # a segment memory keeps its turns' text up to this length

# Real sessions (offline_rules/scaffolding.py, segment.py).
# Scaffolding (offline_rules/scaffolding.py): never a title, a decision or an insight.
# Headings whose fenced block below holds a template's user input (spec-kit `## User Input`).
SCAFFOLD_INPUT_HEADINGS = r"user input|input|arguments|request|feature description|task"
# Effort directives and the words that point them at the prompt ("really ULTRATHINK this").
SCAFFOLD_DIRECTIVES = (
    r"\b(?:really\s+)?(?:ultrathink|megathink|think (?:really )?(?:hard|harder|deeply))\b"
    r"(?:\s+(?:on |about )?(?:this(?: one)?|it))?[.!]*"
)
# Lines of a template or of the harness, not of the person.
SCAFFOLD_TEMPLATE_SENTENCES = (
    r"\$ARGUMENTS|\bYou \**MUST\** consider the user input|\buser input before proceeding"
    r"|^\s*(?:description|argument-hint|allowed-tools)\s*:"
    r"|This session is being continued from a previous conversation"
    r"|Caveat: The messages below were generated by the user while running local commands"
)
# Status lines of an answer: progress, not a finding ("✅ Done!", "Bug fix complete!").
SCAFFOLD_STATUS_LINES = (
    r"^\W*(?:(?:perfect|great|done|excellent|awesome|success|all set|got it"
    r"|(?:good|great) (?:question|catch|point))\b\W*$"
    r"|[\w\s/-]{0,40}\b(?:complete|completed|done|implemented|fixed|finished|ready|confirmed"
    r"(?: feasible)?|working|resolved)\W*$"
    r"|status\s*:|(?:all )?\d* ?tests? pass(?:ed|ing)?\W*$"
    r"|(?:so )?the (?:issue|problem|cause|fix|answer) is (?:clear|simple)\W*$"
    r"|here(?:'s| is) (?:what(?:'s| is| was)? (?:included|changed|done|implemented|new)"
    r"|what i (?:did|changed))\W*$)"
)
# A line opening with a check mark is a checklist or status line ("✅ Complete installation
# script (`setup.sh`)", "✅ Works").
SCAFFOLD_CHECK_MARKS = "✅✔☑❌"
# An answer that opens by reporting what was done ("I've successfully created ...", "The script
# has been updated ...") does not answer a why or how: the answer rule looks past it.
SCAFFOLD_PROGRESS_REPORT = (
    r"^\W*(?:(?:i|we)(?:'ve| have)\s+(?:now\s+)?(?:successfully\s+)?(?:created|added|updated"
    r"|implemented|fixed|built|set up|moved|cleaned up|copied|made|finished|completed)\b"
    r"|[\w`'. -]{1,60} (?:has|have) been (?:successfully )?(?:created|added|updated|implemented"
    r"|fixed|built|moved|copied)\b)"
)
# Segmentation by purpose (segment.py). A prompt opens a new segment, whatever its similarity,
# when it is a new request - it opens with a work verb (SEGMENT_REQUEST_OPENERS) or reports a
# problem (SEGMENT_PROBLEM_OPENERS) - and does not refer back (SEGMENT_FOLLOW_UP), and at least
# SEGMENT_NEW_REQUEST_NOVELTY of its content words are new: in no prompt of the current segment
# and not in the previous outcome. A question that refers to nothing said and whose words are
# at least SEGMENT_NEW_QUESTION_NOVELTY new opens one too.
SEGMENT_REQUEST_OPENERS = (
    r"^\W*(?:(?:ok(?:ay)?|now|so|also|next|please|pls|hey|then)[,:!.]?\s+)*"
    r"(?:(?:can|could|would|will) (?:you|we)(?: please)?(?: also)?\s+"
    r"|i(?:'d| would) like (?:you )?to\s+|(?:i|we) (?:want|need)(?: you)? to\s+"
    r"|let'?s\s+|please\s+)?"
    # New work, not the follow-through of the current work: writing docs or tests, removing,
    # committing or publishing what was just built stays in its segment (demo corpus).
    r"(?:add|build|create|implement|fix|support|introduce|integrate|migrate|port|convert|design"
    r"|investigate|debug|optimi[sz]e|speed up|replace|upgrade|set ?up|scaffold"
    # ... and a review, a release, a refactoring: a purpose of its own (issue 36).
    r"|make (?:it|this) so|refactor|rename|bump|release|review|analy[sz]e|explore|research"
    r"|look (?:at|into)|take a look)\b"
)
SEGMENT_PROBLEM_OPENERS = (
    r"^\W*(?:(?:ok(?:ay)?|now|so|hey)[,:!.]?\s+)*(?:any idea why|why (?:is|does|did|do|are|was"
    r"|isn't|doesn't|didn't)\b|one (?:more )?change\b|(?:there's|there is) a bug\b|bug\s*:"
    r"|(?:the |our |my )?[\w-]+(?: [\w-]+){0,3} (?:is|are) (?:broken|failing|wrong|slow)\b"
    # A new error or symptom: "I'm getting this error", "nothing happens when I press new game".
    r"|(?:i'?m|i am|we'?re|we are) (?:getting|seeing) (?:this|an?|the following)\b"
    r"|i (?:get|got) (?:this|an?|the following) (?:error|exception|warning|message)\b"
    r"|nothing happens\b)"
)
# A prompt that refers back: to what was just said or done ("this change", "still no",
# "it worked", "try again", "make sure"), or that pastes output.
SEGMENT_FOLLOW_UP = (
    r"^\W*(?:still|it (?:worked|works|didn't|doesn't|does not)|that (?:worked|works|didn't)"
    r"|try again|again|same|wait|hmm|sorry|yes|no\b|nope|ok(?:ay)?\W*$|thanks|perfect|great"
    r"|looks good|lgtm)\b"
    r"|\b(?:this|that|these|those|the same) (?:change|fix|one|bug|error|issue|problem|approach"
    r"|idea|plan|suggestion|version)s?\b|\bmake sure\b|\bas (?:you|we) (?:said|suggested)\b"
    # "implement it", "add this to ...", "so this doesn't come back": about what was just done.
    r"|^\W*(?:\w+\s+){0,3}?(?:add|build|create|implement|fix|do|apply)\s+(?:it|this|that|them"
    r"|those|these)\b|\bso (?:this|that|it) (?:doesn't|does not|won't|can't)\b"
    # Resuming after the agent hit its usage limit: "you hit a token limit which has now reset,
    # please continue", "you ran out of tokens... pick up where you left off".
    r"|\bhit (?:a|the|your) (?:token |usage |rate )?limit\b|\bran out of (?:tokens|context)\b"
    r"|\bpick up where\b"
    # "Users still say the UI feels sluggish", "i'm still seeing this happen".
    r"|^\W*(?:[\w'’]+\s+){0,3}?still\b"
)
SEGMENT_NEW_REQUEST_NOVELTY = 0.6
# A request for more work in any words ("can we ...", "i'd like to ...", "let's ..."), right after
# an outcome that says the work is done (SEGMENT_DONE_OUTCOME), opens a segment when at least
# SEGMENT_AFTER_DONE_NOVELTY of its content words are new: the next feature after one finished.
SEGMENT_REQUEST_FORMS = (
    r"^\W*(?:(?:ok(?:ay)?|now|so|also|next|hey|then|great|nice|perfect)[,:!.]?\s+)*"
    r"(?:(?:can|could|would|will) (?:you|we)\b|i(?:'d| would) like\b|(?:i|we) (?:want|need)\b"
    r"|let'?s\b)"
)
SEGMENT_AFTER_DONE_NOVELTY = 0.6
# A problem report (SEGMENT_PROBLEM_OPENERS) right after an outcome that says the work is done
# ("Perfect! ...", "Done.", "✅ ... complete", "... successfully ...") starts a bug hunt: it opens
# a segment whatever its words (the new bug is about what was just built, so its words are not
# new). A report after an outcome that does not say done is a follow-up of the current work.
SEGMENT_DONE_OUTCOME = (
    r"^\W*(?:perfect|done|all (?:done|set)|excellent|great|success|complete[ds]?|finished"
    r"|(?:the |all )?[\w`'./ -]{1,60} (?:is|are|has been|have been) (?:now )?(?:ready|complete"
    r"|done|fixed|updated|created|copied|exported|implemented)\b)"
    r"|\bsuccessfully\b|^\W*[✅🎉]"
)
SEGMENT_DONE_SCAN_LINES = 6  # the outcome lines looked at for SEGMENT_DONE_OUTCOME
# No time-gap rule: a pause of 30 minutes or more before a prompt of its own was tried (issue 36)
# and found 2 of the real sessions' boundaries, but the demo corpus has a bug that comes back the
# next morning, a task resumed days later ("back on this. cloning ... fails") inside one topic: 5
# spurious starts there. Pauses say when, not what.
SEGMENT_NEW_QUESTION_NOVELTY = 0.7
SEGMENT_NEW_QUESTION_MIN_TERMS = 10  # a question that states a new subject on its own
# Documented maximum span: a segment of more than this many turns with no evident boundary is
# cut so its first part fits (both parts when it is at most twice this long), before the turn
# that is not a follow-up or a short prompt if any, then the least similar, then the latest;
# again until every segment fits.
SEGMENT_MAX_TURNS = 12
