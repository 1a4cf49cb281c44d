"""Every constant that tunes pipeline behaviour, in one place.

Everything the pipeline decides by a threshold and every retrieval weight the serving side
ranks by (the last section) lives here. Each section belongs to one stage. Change a value here
and nowhere else.
"""

from __future__ import annotations

# --- database: the embedded server (memory_pipeline/db/embedded.py) ----------------------------
# PostgreSQL's default shared_buffers (128 MB) is smaller than the search working set at 100K
# memories (postings, passages, two HNSW indexes), so BM25 and vector queries read pages through
# the kernel on every search. Only the embedded server gets this; your own server keeps its own.
EMBEDDED_SHARED_BUFFERS = "1GB"

# --- capture ------------------------------------------------------------------------------
# A task without a native name is titled by its first prompt's first line, cut to this length.
DERIVED_TITLE_MAX_CHARS = 80
# Redaction (capture/redact/). A literal assigned to a secret name (`DB_PASSWORD=`,
# `"client_secret":`, `--password`) is redacted from this length on; one assigned to any other
# key name (`PRIMARY_KEY=`, `STRIPE_KEY=`) only when it looks random: at least this long, letters
# and digits, with an unbroken alphanumeric run of at least REDACT_RANDOM_MIN_RUN.
REDACT_MIN_SECRET_CHARS = 6
REDACT_RANDOM_MIN_CHARS = 16
REDACT_RANDOM_MIN_RUN = 12
# Redaction layers (capture/redact/).
# A value on a command line whose flag or position says it is a password (`mysql -pPW`,
# `sshpass -p PW`, `docker login -p PW`, `.pgpass`, a Kubernetes Secret's data) is redacted from
# this length on: the context is sure, so shorter ones than REDACT_MIN_SECRET_CHARS count.
REDACT_CLI_MIN_CHARS = 4
# Layer (c), a random-looking token with no context: at least this many letters and digits, all
# three of upper case, lower case and digits, a Shannon entropy of at least
# REDACT_TOKEN_MIN_ENTROPY bits per character, and words no longer than
# REDACT_TOKEN_MAX_WORD_MEAN characters on average (split at case and digit changes: a random
# 32-character base62 token averages 1.9, `AbstractSingletonProxyFactoryBean` 6.6,
# `getUserProfileByIdV2Cache` 3.1). 99% of random 24-character base62 tokens are caught, nearly
# all from 32 characters on.
REDACT_TOKEN_MIN_CHARS = 24
REDACT_TOKEN_MIN_ENTROPY = 3.5
REDACT_TOKEN_MAX_WORD_MEAN = 3.0
# The capture store (capture/store.py) writes native context and evidence as JSONB: values nested
# deeper than this are stored as a placeholder string, so no input can exhaust the stack there.
CAPTURE_JSON_MAX_DEPTH = 32
# A native id or path longer than this is shortened (head + sha256) where it is only a key for a
# recorded skip: a btree index entry holds about 2,700 bytes, and a skip must always be storable.
CAPTURE_SKIP_KEY_MAX_CHARS = 500
# How much of a line the reader skipped a connector sees (JsonlRead.on_skip): enough for the
# fields a record starts with; the chat import finds a damaged line's `task_id` in it.
CAPTURE_SKIPPED_HEAD_BYTES = 4096
# The chat import (capture/chat_import.py) streams: a conversation is stored as soon as its last
# line is read, and a conversation longer than this many characters of turn text is stored in
# batches of about this size (store.py aligns a batch by its turns' ordinals), so capturing one
# 500 MB file holds a few batches in memory, not the file.
CHAT_IMPORT_BATCH_CHARS = 4_000_000
# Codex (capture/codex/): a fork's copy of its parent's rollout is written in one burst, lines
# milliseconds apart; a larger gap inside the copied region means the fork's own activity began.
CODEX_COPY_BURST_GAP_SECONDS = 2.0
# Kiro CLI and Kiro IDE (capture/kiro_cli/, capture/kiro_ide/). A document read whole (a SQLite
# row's conversation JSON, a v2 session's `.json` sidecar, an IDE session or `.chat` file) larger
# than this is skipped and recorded (`too_large`), never loaded: no real one comes near it.
KIRO_DOCUMENT_MAX_BYTES = 64 * 1024 * 1024
# How long a read of Kiro CLI's `data.sqlite3` waits for a writer's lock before it is recorded as
# `store_busy` and retried on the next look (the agent is never blocked: the read is read-only).
KIRO_SQLITE_TIMEOUT_S = 2.0
# The prompt-recall history (`~/.kiro/.cli_bash_history`) shows what a person typed into the
# chat REPL. A conversation counts as typed into when one of its prompts equals a history entry
# at least this long (a bare "yes" typed elsewhere proves nothing); only the file's last
# KIRO_HISTORY_MAX_BYTES are read.
KIRO_TYPED_PROMPT_MIN_CHARS = 8
KIRO_HISTORY_MAX_BYTES = 16 * 1024 * 1024
# Agent transcript times (Codex, Claude Code) outside these years (inclusive) are treated as
# missing and recorded as `bad_timestamp`: both agents wrote their first transcripts in 2025, and a
# year-1 or year-9999 value (or one past what datetime and PostgreSQL hold) would put a task in a
# partition that never runs.
AGENT_PLAUSIBLE_YEARS = (2000, 2199)
# Daily partitions (memory_pipeline/partitions.py) cover the most recent this many days when
# MEMORY_PARTITION_DAYS sets it; 0 (the default): from the home's first captured day. Older task
# days belong to the first partition either way.
PARTITION_DAYS = 0
# OpenCode (capture/opencode/): one message or part JSON file larger than this is skipped and
# recorded (`record_too_large`); OpenCode writes one small file per message and per part.
OPENCODE_JSON_MAX_BYTES = 16 * 1024 * 1024
# Aider (capture/aider/): how deep MEMORY_AIDER_ROOTS are searched for `.aider.chat.history.md`,
# and the directories never entered (dependencies, caches, VCS internals).
AIDER_ROOT_MAX_DEPTH = 4
AIDER_SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".cache", "target", "dist", "build"}
)
# A chat history is read up to this many bytes (the rest is recorded as `file_too_large`).
AIDER_HISTORY_MAX_BYTES = 256 * 1024 * 1024
# Cursor (capture/cursor/): how long a read of a `state.vscdb` waits for a lock. Cursor keeps it in
# WAL mode, where a reader never waits; a store in rollback-journal mode whose writer holds the
# lock longer is read on the next look (`changed_while_reading`), never waited on by the run.
CURSOR_SQLITE_TIMEOUT_S = 2.0
# A Cursor agent transcript (`agent-transcripts/*.jsonl`) larger than this is skipped, recorded.
CURSOR_TRANSCRIPT_MAX_BYTES = 256 * 1024 * 1024
# Gemini CLI (capture/gemini_cli/): a legacy session document (`session-*.json`, read whole) larger
# than this is skipped, recorded; so is a JSONL session (`session-*.jsonl`, streamed) larger than
# GEMINI_JSONL_MAX_BYTES. `logs.json` (the typed prompts, ownership evidence) is read up to
# GEMINI_LOGS_MAX_BYTES (a larger one counts as unreadable: ownership unknown).
GEMINI_DOCUMENT_MAX_BYTES = 64 * 1024 * 1024
GEMINI_JSONL_MAX_BYTES = 512 * 1024 * 1024
GEMINI_LOGS_MAX_BYTES = 32 * 1024 * 1024

# The transcript sensor (capture/definitions.py) looks at the source roots at most this often.
# A look over unchanged files costs one stat each and one query. With
# MEMORY_SEMANTIC_QUIET_MINUTES=0 a new turn must be searchable within 60 s: up to this long
# waiting for the tick, then the run queue, the run's start and its steps (see README: freshness).
TRANSCRIPT_SENSOR_INTERVAL_S = 15

# --- inbox: web articles, documents, video transcripts (memory_pipeline/inbox/) ---------------
# A file above this size is refused from its size alone (never opened): an absurd file costs a
# stat. Below it, plain text, Markdown and subtitles are read INBOX_READ_CHUNK_BYTES at a time and
# PDFs page by page, their passages written INBOX_WRITE_BATCH at a time, so memory stays bounded
# whatever the size (see `python -m memory_pipeline.bench.inbox_memory`).
INBOX_MAX_FILE_BYTES = 1024 * 1024 * 1024
# Plain text, Markdown and subtitles above this size are refused from their size too: such a file
# is a log or a dump, not something read, and would be tens of thousands of `source` memories to
# store, embed and link (a 20 MB text is 15,643 passages, 51 s to store on 2 busy cores before
# its embedding). `too_large`, recorded; split the file or keep the part you read.
INBOX_MAX_TEXT_BYTES = 32 * 1024 * 1024
# A document that cuts into more passages than this (a heading on every line, a PDF of dense
# pages) is stopped as soon as it passes the limit: its writes roll back, `too_many_passages`.
INBOX_MAX_DOCUMENT_PASSAGES = 40_000
# A long document's capture says how far it got every this many passages (run log, terminal).
INBOX_PROGRESS_PASSAGES = 2_000
# A step that reports every batch (embedding) shows the terminal of `memory-pipeline run` at most
# one progress line this often (memory_pipeline/progress.py); the run's log gets every line.
PROGRESS_TERMINAL_EVERY_S = 10.0
# HTML, MHTML and reStructuredText are parsed whole by their libraries (trafilatura/lxml, email,
# docutils take several times the file's size): above this size they are refused and recorded
# (`too_large_to_read_whole`). So is a yt-dlp info.json above it (read without it).
INBOX_MAX_WHOLE_FILE_BYTES = 50 * 1024 * 1024
INBOX_READ_CHUNK_BYTES = 1024 * 1024
# A PDF is read page by page, but pypdf keeps every page's entry and parsed objects (about 13 KB
# a page, measured: 65 MB peak for 2,000 pages, 42 MB for 200): a PDF with more pages is refused.
INBOX_MAX_PDF_PAGES = 20_000
# A section (the text under one heading, a PDF page) longer than this is handed to the chunker
# in pieces cut at paragraph breaks, so no derived structure holds more than about this much.
INBOX_SECTION_MAX_CHARS = 256 * 1024
# Passages are written to the database this many at a time (one round trip each way).
INBOX_WRITE_BATCH = 500
# A passage (one `source` memory) holds at most this many characters: a longer section is cut at
# paragraph boundaries (then sentences). The embedding stage cuts it again to its model's window.
INBOX_PASSAGE_MAX_CHARS = 1500
# A video transcript's cues are grouped into passages of about this many characters (and a new
# group starts at every chapter of yt-dlp's info.json), each quoted with its first cue's time.
INBOX_CUE_GROUP_CHARS = 900
# Fetching a URL (`memory-pipeline add`, `*.url` files): connect/read timeout, the whole
# request's deadline, the body's size cap, and how many redirects are followed.
INBOX_FETCH_TIMEOUT_S = 10.0
INBOX_FETCH_DEADLINE_S = 30.0
INBOX_FETCH_MAX_BYTES = 10 * 1024 * 1024
INBOX_FETCH_MAX_REDIRECTS = 5
# The inbox sensor looks at MEMORY_INBOX_DIR at most this often (one stat per file).
INBOX_SENSOR_INTERVAL_S = 30

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

# --- embedding ----------------------------------------------------------------------------
# The offline default space: all-MiniLM-L6-v2 run in numpy. sql/009 indexes it.
LOCAL_EMBEDDING_SPACE = "local:all-minilm-l6-v2:384"
EMBED_BATCH_SIZE = 64  # memories per embedding call and per write transaction
# Vectors an embedder keeps for reuse by the next ingest step (embedding/reuse.py): the
# semantic pass embeds each turn as its passage text, with its messages' vectors (three vectors
# a turn), and the passage step finds them there. 1.5 KB per 384-d vector: 60,000 is about
# 100 MB (20,000 turns); a turn evicted before its passage is embedded is just embedded again.
EMBED_REUSE_MAX_VECTORS = 60_000
# The numpy MiniLM (embedding/minilm.py): texts sorted by length are batched up to this many
# WordPiece tokens (padding included) per forward pass, so short texts go in large batches and
# long ones in small, and at most MINILM_MAX_BATCH texts per pass.
MINILM_BATCH_TOKENS = 2048
MINILM_MAX_BATCH = 128
# BLAS threads: all cores only while the 1-minute load average per core is below this; above it
# one thread. OpenBLAS threads spin-wait for each other, and on a busy machine each waits for a
# core: 300 texts took 62 s of CPU with 2 threads against 9.4 s with 1 at a load of 20 on 2 cores.
MINILM_ALL_CORES_MAX_LOAD_PER_CORE = 0.75
# Passages (embedding/passages.py): what search ranks and context packs quote. A segment is cut
# at turn boundaries, at most PASSAGE_MAX_TURNS turns per passage; every passage (heading
# included) fits min(PASSAGE_MAX_TOKENS, the active embedder's window), counted by that
# embedder's tokenizer, and a longer turn is cut at sentence boundaries. Small passages make
# precise excerpts: a pack quotes the turn that matched, not the segment around it.
PASSAGE_MAX_TOKENS = 256
PASSAGE_MAX_TURNS = 1
# Bump when the cutting rules change: every memory's passages are then cut again.
PASSAGE_SPLITTER_VERSION = 1
# Ollama has no local tokenizer: its tokens are estimated at this many characters each (low,
# so a passage never overruns the window), and a model whose /api/show reports no context
# length is assumed to read this many tokens.
OLLAMA_CHARS_PER_TOKEN_ESTIMATE = 3
OLLAMA_UNKNOWN_WINDOW_TOKENS = 512
# BM25 postings (sql/021, embedding/bm25_stats.py): their impacts embed the mean passage
# length; bm25_statistics rebuilds them all when it moved by more than this share since.
BM25_POSTINGS_AVGDL_DRIFT = 0.05
# Search under a narrowing filter (project, type, time range, ...; serving/search/): when at
# most this many memories pass it, both channels rank those memories' passages exactly (every
# BM25 score, every cosine) instead of walking postings or the HNSW graph until enough survive
# the filter, which at 100K memories read tens of thousands of rows for a one-project filter.
SEARCH_EXACT_FILTERED_MEMORIES = 6000
# The filter values with their own partial HNSW index in every space (sql/023): a vector search
# filtered on exactly one of them walks a graph of only its passages instead of skipping most
# of the whole graph. Column of passage_embeddings -> values. Each passage is in the main
# index, its type's and its source's: more to build and store, and about 4x faster type and
# source filters at 100K memories.
VECTOR_PARTIAL_INDEXES = {
    "memory_type": ("decision", "insight", "correction_episode"),
    "memory_source_type": ("codex", "claude_code", "chat_import"),
}
# The keyword index (tantivy, memory_pipeline/embedding/keyword_index.py): rows fetched per
# round trip while building it, and the tantivy writer's heap (one thread; at least 3 MB).
KEYWORD_INDEX_FETCH_ROWS = 5000
KEYWORD_INDEX_WRITER_HEAP_BYTES = 128 * 1024 * 1024
# The BM25 channel on the keyword index (serving/search/bm25.py bm25_channel) rescores this many of
# tantivy's best passages exactly in PostgreSQL (tantivy rounds lengths above 40 tokens, which
# reorders close scores at the top); the rest keep tantivy's score.
BM25_INDEX_EXACT_PASSAGES = 100

# --- entities: nodes and mentions (memory_pipeline/entities/) --------------------------------
# The closed type set (sql/036): an extractor returns nothing rather than invent a type.
ENTITY_TYPES = (
    "person",
    "project",
    "repository",
    "package",
    "file",
    "host",
    "tool",
    "place",
    "organisation",
)
# Confidence of each offline extractor's mentions: deterministic identifiers and speakers are
# certain; an alias (a name known from earlier mentions) and a backticked command less so; a
# name found by its phrasing ("my friend X", "moved to X", "works at X") least.
ENTITY_CONFIDENCE = {
    "identifier": 1.0,
    "speaker": 1.0,
    "project": 1.0,
    "alias": 0.9,
    "command": 0.9,
    "vocabulary": 0.9,
    "pattern": 0.7,
}
# Speakers that name a role, not a person: never a person node.
ENTITY_ROLE_SPEAKERS = ("user", "agent", "assistant", "system", "codex", "claude", "ai", "bot")
# Tools recognised as the first word of a backticked command (`git rebase`, `make test`).
ENTITY_KNOWN_TOOLS = (
    "git",
    "make",
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "pytest",
    "ruff",
    "mypy",
    "npm",
    "pnpm",
    "yarn",
    "cargo",
    "go",
    "pip",
    "uv",
    "poetry",
    "psql",
    "pg_dump",
    "pg_restore",
    "redis-cli",
    "curl",
    "ssh",
    "rsync",
    "gh",
    "brew",
    "apt-get",
    "systemctl",
    "journalctl",
    "ollama",
    "dagster",
    "memory-pipeline",
    "node",
    "python",
    "python3",
    "k3s",
    "nginx",
    "jq",
)
# Software named in prose ("we drop Redis", "a systemd timer instead of cron"): a reversal needs
# the dropped choice to be a node both memories mention (issue 34), and offline nothing else
# finds these. Name -> (type, other names of the same node). Only names that are neither an
# ordinary English word nor a person's name (so not "make", "go", "node", "celery", "flask",
# "kafka"); matched as whole words, any case.
ENTITY_KNOWN_SOFTWARE: dict[str, tuple[str, tuple[str, ...]]] = {
    "redis": ("tool", ()),
    "postgres": ("tool", ("postgresql",)),
    "mysql": ("tool", ("mariadb",)),
    "sqlite": ("tool", ("sqlite3",)),
    "mongodb": ("tool", ()),
    "duckdb": ("tool", ()),
    "clickhouse": ("tool", ()),
    "elasticsearch": ("tool", ("opensearch",)),
    "memcached": ("tool", ()),
    "rabbitmq": ("tool", ()),
    "nginx": ("tool", ()),
    "traefik": ("tool", ()),
    "haproxy": ("tool", ()),
    "docker": ("tool", ()),
    "podman": ("tool", ()),
    "kubernetes": ("tool", ("k8s",)),
    "k3s": ("tool", ()),
    "terraform": ("tool", ()),
    "ansible": ("tool", ()),
    "prometheus": ("tool", ()),
    "alertmanager": ("tool", ()),
    "grafana": ("tool", ()),
    "node_exporter": ("tool", ()),
    "zfs_exporter": ("tool", ()),
    "cron": ("tool", ("crontab",)),
    "systemd": ("tool", ()),
    "wireguard": ("tool", ()),
    "tailscale": ("tool", ()),
    "pgbackrest": ("tool", ()),
    "pgbouncer": ("tool", ()),
    "wal-g": ("tool", ()),
    "restic": ("tool", ()),
    "borgbackup": ("tool", ()),
    "minio": ("tool", ()),
    "gitea": ("tool", ()),
    "django": ("package", ()),
    "fastapi": ("package", ()),
    "sqlalchemy": ("package", ()),
    "pandas": ("package", ()),
    "pydantic": ("package", ()),
    "mmap": ("package", ("memmap2",)),
    "memchr": ("package", ()),
    "tokio": ("package", ()),
}
# Longest alias scanned, in words ("New York City", "Bayview Institute of Art").
ENTITY_ALIAS_MAX_WORDS = 4
# Aliases shorter than this are never scanned (initials and two-letter words match anything).
ENTITY_ALIAS_MIN_CHARS = 3
# Ollama backend: memory text shown per memory, memories per chat call, and the confidence
# below which a proposal is dropped by the precheck.
ENTITY_OLLAMA_MEMORY_CHARS = 1500
ENTITY_OLLAMA_BATCH = 8
ENTITY_OLLAMA_MIN_CONFIDENCE = 0.6
ENTITY_OLLAMA_TEMPERATURE = 0.0
ENTITY_OLLAMA_NUM_CTX = 8192

# --- reinforcement ------------------------------------------------------------------------
# Retrieval events (what search returned) are folded into memories' access counts hourly; a
# folded event older than this many days is deleted (its count stays in the memory). Unfolded
# events are never deleted.
RETRIEVAL_EVENTS_RETENTION_DAYS = 30

# --- dream cycle (memory_pipeline/dream/) ---------------------------------------------------
# Explorer bounds: every strategy returns at most DREAM_SLICES_PER_STRATEGY slices of at most
# DREAM_SLICE_MAX_MEMORIES memories each, a run at most DREAM_SLICES_PER_RUN slices (strategies
# take turns), and similarity strategies compare the DREAM_SIMILARITY_POOL newest memories only.
DREAM_SLICES_PER_STRATEGY = 5
DREAM_SLICE_MAX_MEMORIES = 8
DREAM_SLICES_PER_RUN = 40
DREAM_SIMILARITY_POOL = 600
# Cosine in the serving space above which two memories of different projects "collide".
DREAM_COLLISION_MIN_COSINE = 0.55
# A recurring question: two memories of different tasks this similar that both answer questions.
DREAM_RECURRING_MIN_COSINE = 0.6
# Correction episodes this similar share a theme; a pattern needs DREAM_CORRECTION_MIN_EPISODES.
DREAM_CORRECTION_THEME_MIN_COSINE = 0.45
DREAM_CORRECTION_MIN_EPISODES = 3
# A decision is "old" when this many days older than the newest memory (decision revisit).
DREAM_REVISIT_MIN_AGE_DAYS = 14
DREAM_REVISIT_MIN_COSINE = 0.5
# Stale priority: a priority or decision not retrieved for this many days.
DREAM_STALE_DAYS = 30
# A project is active when it has a memory this recent (days before the newest memory).
DREAM_ACTIVE_PROJECT_DAYS = 30
# Temporal juxtaposition: memories of different projects created within this many hours.
DREAM_JUXTAPOSITION_HOURS = 24
# Offline Thinker: a connection between memories of different projects needs this cosine; the
# Skeptic defers one between DREAM_CONNECTION_DEFER_COSINE and it, and rejects below.
DREAM_CONNECTION_MIN_COSINE = 0.6
DREAM_CONNECTION_DEFER_COSINE = 0.5
# Precheck: a candidate whose vector is this close to an existing memory restates it.
DREAM_RESTATE_MIN_COSINE = 0.97
# Consensus: accepted with at least this many accepts of four.
DREAM_ACCEPT_VOTES = 3
# A candidate deferred this many times is rejected for good.
DREAM_MAX_DEFERRALS = 2
# Feedback: rejection reasons of the last N runs and user rejections of the last N days.
DREAM_FEEDBACK_RUNS = 5
DREAM_FEEDBACK_DAYS = 30
DREAM_FEEDBACK_MAX_ITEMS = 20
# Ollama backend: calls per run (MEMORY_DREAM_CALL_BUDGET), temperature, context window,
# characters of each memory shown to the model.
DREAM_CALL_BUDGET = 200
DREAM_OLLAMA_TEMPERATURE = 0.0
DREAM_OLLAMA_NUM_CTX = 16384
DREAM_OLLAMA_MEMORY_CHARS = 1200
# A post_learn run is requested once this many new memories arrived since the last run
# (MEMORY_DREAM_POST_LEARN); the sensor looks at most this often.
DREAM_POST_LEARN_MEMORIES = 50
DREAM_SENSOR_INTERVAL_S = 300
# Quotes in dream memories are cut to this many characters each.
DREAM_QUOTE_CHARS = 400

# --- express: the daily briefing (memory_pipeline/express/) --------------------------------
# The first briefing looks back this many days; later ones cover what happened since the last.
EXPRESS_FIRST_WINDOW_DAYS = 7
# A briefing shows at most this many items (after mutes and the feedback re-rank).
EXPRESS_MAX_ITEMS = 10
# Resurfacing: an active memory at least this deep (depth_score, 0-1) that nobody has read
# (last_accessed_at, else created_at) for this many days; at most EXPRESS_RESURFACE_MAX a day, and
# a memory resurfaced once waits EXPRESS_RESURFACE_COOLDOWN_DAYS before it can come back.
EXPRESS_RESURFACE_MIN_DEPTH = 0.7
EXPRESS_RESURFACE_MIN_AGE_DAYS = 60
EXPRESS_RESURFACE_MAX = 3
EXPRESS_RESURFACE_COOLDOWN_DAYS = 90
# The weekly digest (on MEMORY_BRIEF_DIGEST_WEEKDAY) covers this many days and names the deepest
# EXPRESS_DIGEST_TOP memories of them.
EXPRESS_DIGEST_DAYS = 7
EXPRESS_DIGEST_TOP = 5
# The offline editor's order: each kind's base score (a higher one comes first), plus
# EXPRESS_CROSS_PROJECT_BONUS for a synthesis across projects and EXPRESS_DEPTH_WEIGHT * depth.
EXPRESS_KIND_SCORES = {
    "contradiction": 1.0,
    "synthesis": 0.8,
    "superseded": 0.7,
    "question": 0.6,
    "digest": 0.5,
    "resurfaced": 0.4,
    "source": 0.45,  # a new inbox document that bears on an agent memory (issue 33)
}
EXPRESS_CROSS_PROJECT_BONUS = 0.3
EXPRESS_DEPTH_WEIGHT = 0.1
# Feedback re-rank: each `useful` on an item adds these to later items of its topic and of its
# kind (`less` subtracts them); the total shift of one item is capped at EXPRESS_FEEDBACK_MAX_SHIFT.
EXPRESS_FEEDBACK_TOPIC_WEIGHT = 0.3
EXPRESS_FEEDBACK_KIND_WEIGHT = 0.1
EXPRESS_FEEDBACK_MAX_SHIFT = 0.6
# Headlines longer than this are cut to their first sentence (or at a word, marked with "…").
EXPRESS_HEADLINE_MAX_CHARS = 120
# Ollama editor: one chat call per briefing; memory text shown to it is cut at this length.
EXPRESS_OLLAMA_MAX_MEMORY_CHARS = 400
EXPRESS_OLLAMA_TEMPERATURE = 0.0
# SMTP: a push gives up on a server that does not answer within this many seconds.
EXPRESS_SMTP_TIMEOUT_S = 30.0

# --- backup -------------------------------------------------------------------------------

# Retention (see backup/retention.py): the newest good backup of each of the last N calendar days
# that have one, plus the newest good backup of each of the last M ISO weeks that have one (the
# current week counts, and a backup may be both, like restic). With daily runs, 7 and 4 keep the
# last 7 days plus the last backup of each of the 3 ISO weeks before the current one: 9 backups,
# the oldest 15 to 21 days old depending on the weekday.
BACKUP_KEEP_DAILY = 7
BACKUP_KEEP_WEEKLY = 4

# Plaintext bytes per encrypted chunk (backup/crypto.py). 1 MiB keeps memory flat (about two
# chunks in flight) while the 16-byte tag per chunk costs only 0.0015% in size.
BACKUP_CHUNK_SIZE = 1024 * 1024
# pg_dump's gzip level (`--compress`). Vectors as text dominate the dump: level 1 compresses them
# 2.12x at ~100 MB/s of CPU, pg_dump's default (6) 2.28x at ~15 MB/s, which made pg_dump 380 of
# the 455 s of a backup at 100K memories (issue 12). The bundled pg_dump has neither lz4 nor zstd.
BACKUP_DUMP_COMPRESS_LEVEL = 1

# Rows per batch when exporting a table to JSON Lines (backup/exports.py): one batch is one polars
# DataFrame in memory. Turns can hold tens of KB of text each, so 1000 rows stay well under 100 MB.
BACKUP_EXPORT_BATCH_ROWS = 1000

# Connections that compute table checksums at once (backup/checksums.py), each taking the largest
# table left. A backup computes them while pg_dump runs and a verify while it re-exports; with
# that overlap, backup + verify at 100K memories on 2 busy cores (load 5-8) went from 218 to 155 s.
BACKUP_CHECKSUM_WORKERS = 2

# The optional copy to further destinations (MEMORY_BACKUP_COPY_COMMAND) is stopped after this
# long: a hung upload must not hold the nightly run forever. The local backup stays either way.
BACKUP_COPY_TIMEOUT_S = 3600

# A restore's new database (backup/restore.py) copies a template, and CREATE DATABASE fails while
# any session is connected to it (`memory-pipeline db check` looks into template1): retried this
# often, this many seconds apart.
BACKUP_TEMPLATE_BUSY_RETRIES = 10
BACKUP_TEMPLATE_BUSY_WAIT_S = 0.3

# --- serving: the MCP server's connection pool (serving/mcp/pool.py) ---------------------------
# At most MCP_POOL_SIZE tool calls query the database at once (each holds one connection while
# it embeds the query and searches). Further calls wait in line for a connection: at most
# MCP_POOL_MAX_WAITING of them, each at most MCP_POOL_WAIT_S seconds; only then does a call answer
# "busy, try again". 200 concurrent memory_search calls over HTTP all answer with these values
# (scripts/bench_mcp_load.py). Tool calls run in the SDK's worker threads (40), so calls beyond
# 40 wait for a thread before they join this line.
MCP_POOL_SIZE = 8
MCP_POOL_MAX_WAITING = 256
MCP_POOL_WAIT_S = 60.0

# Where memory_search and memory_context run over HTTP: MCP_WORKERS = 0 in threads of the server
# process (at most MCP_POOL_SIZE at once, sharing its connection pool and embedder), N > 0 in N
# worker processes (each with one reader connection and its own embedder; -1: one per core).
# MEMORY_MCP_WORKERS overrides it (`threads`, `cores` or N). Threads measured better on 2 cores:
# the database does about half of each call's CPU, so the GIL is not what limits them, and 8
# calls in flight keep both the server and PostgreSQL busy where 2 workers leave gaps (16
# clients 10.4-11.1 calls/s against 8.5-9.5 with 2 or 4 processes, back to back at load ~20).
# A call that would wait in line longer than MCP_QUEUE_MAX_WAIT_S (calls ahead / the calls that
# can really run at once, min(slots, cores), x the recent seconds a slot was busy per call) is
# answered at once with "busy, retry after N s".
MCP_WORKERS = 0
# Streamable HTTP answers each request with one JSON body (True) or an SSE stream (False). The
# tools send no progress or log notifications, so JSON costs the server less per call.
MCP_JSON_RESPONSE = True
MCP_QUEUE_MAX_WAIT_S = 10.0
# An idle keep-alive connection is closed by the server after this many seconds: longer than
# clients keep theirs (httpx 5 s, Node 4-5 s), so a client never sends a call on a connection the
# server is closing at that moment (uvicorn's own 5 s did that: "ReadError" under load).
MCP_HTTP_KEEP_ALIVE_S = 65

# MCP over HTTP input (serving/mcp/http_guard.py).
# A request body nested deeper than this (arrays and objects) is answered with a JSON-RPC parse
# error (400) before anything parses it: Python's json module raises RecursionError near 1,000
# levels (a 500) and the SDK's parser stops at about 200. A JSON-RPC call needs 5 or 6.
MCP_JSON_MAX_DEPTH = 64

# --- serving: agent hooks (serving/hooks/) -------------------------------------------------
# Token budgets of what a hook injects (MEMORY_HOOK_SESSION_TOKENS / MEMORY_HOOK_PROMPT_TOKENS
# override them): a session start may carry the repository's recent work, a prompt only the few
# memories that match it, since it is paid again on every prompt.
HOOK_SESSION_TOKENS = 1500
HOOK_PROMPT_TOKENS = 400
# Wall-clock deadlines of the hook command as the agent sees it (whole process); past them it
# prints nothing and exits 0. `memory-pipeline hook prompt --deadline S` overrides them.
HOOK_SESSION_DEADLINE_S = 1.5
HOOK_PROMPT_DEADLINE_S = 0.5
# A session start that finds no hook server running (the first session after a reboot or after
# HOOK_SERVER_IDLE_EXIT_S) starts it and waits this long for its answer instead: the server
# imports its libraries and loads the model first (1.8-2.1 s at load 2-3, longer on a busy
# machine), once per cold start. It stays under the agents' kill timeout (10 s, install.py).
HOOK_SESSION_COLD_DEADLINE_S = 8.0
# Relevance: a packed memory is injected only when the cosine (all-MiniLM-L6-v2, serving space)
# between the prompt and its best quoted passage reaches this; with none reaching it the hook
# prints nothing. Tuned with scripts/bench_hooks.py on the demo and long-conversation gold
# queries against serving/hooks/unrelated_prompts.txt: 0.45 is the lowest value at which none
# of the 77 unrelated prompts injects anything on either corpus (0.40: 1 of 77), while 90% of
# the demo and 87% of the long-conversation gold queries still inject something. A session
# start is not a question, so its query (repository and recent task titles) is judged lower.
HOOK_PROMPT_MIN_COSINE = 0.45
HOOK_SESSION_MIN_COSINE = 0.30
# Prompts longer than this are cut before they become a query (a pasted log is not a question).
HOOK_QUERY_MAX_CHARS = 2000
# The resident hook server (serving/hooks/server.py) exits after this long without a request.
HOOK_SERVER_IDLE_EXIT_S = 4 * 3600
# The hook server answers this many requests at once per process, in HOOK_SERVER_PROCESSES
# forked processes (0: one per core) accepting on the one socket; a server whose socket file is
# gone notices within HOOK_SERVER_SOCKET_CHECK_S and exits; a new server waits this long for the
# home's lock (held by such an orphan) before it leaves the home to the one holding it.
HOOK_SERVER_THREADS = 8
HOOK_SERVER_PROCESSES = 0
HOOK_SERVER_SOCKET_CHECK_S = 0.5
HOOK_SERVER_LOCK_WAIT_S = 3.0
# The hook's one-line failure log (MEMORY_HOME/logs/hooks.log) is rotated past this size.
HOOK_LOG_MAX_BYTES = 1_000_000

# --- relationships: relationship discovery (memory_pipeline/relationships/) ----------------
# Which memories are linked. Segments get derived_from edges pointing at them and related_to
# edges; distilled memories also take part in near-duplicate and judged edges.
# `source`: a passage of an inbox document (issue 33), linked to the agent memories it bears on.
RELATIONSHIP_TYPES = (
    "decision",
    "insight",
    "correction_episode",
    "segment",
    "synthesis",
    "source",
)
DISTILLED_TYPES = ("decision", "insight", "correction_episode")
# Vector neighbours (cosine in the serving space, through its HNSW index) read per new memory;
# everything below is decided among them, so a day's memories never scan the corpus.
RELATIONSHIP_NEIGHBOURS = 20
# related_to: cosine at or above this (MiniLM: unrelated coding memories sit at 0.1-0.4, the
# same subject at 0.55+), at most RELATED_MAX_PER_MEMORY per memory's own scan (best first).
RELATED_MIN_SIMILARITY = 0.6
RELATED_MAX_PER_MEMORY = 5
# Near-duplicates: the same statement from a different task. Both a cosine at or above
# DUPLICATE_MIN_SIMILARITY and a Jaccard of stemmed content words at or above
# DUPLICATE_MIN_JACCARD (the lexical test keeps "use X" / "stop using X", which embed close
# together, apart). The earliest observation is kept; the later ones point at it.
# On the demo corpus the one restatement across tasks (the Redis-to-Postgres decision of the
# design review, restated when implemented) sits at cosine 0.90 and Jaccard 0.42; the closest
# different statements of the same type at 0.77 / 0.11.
DUPLICATE_MIN_SIMILARITY = 0.85
DUPLICATE_MIN_JACCARD = 0.4
# ...and both must carry the same polarity words: "keep Postgres out of k3s" and "move Postgres
# into k3s" share most words and embed at 0.87, but only one says "out".
DUPLICATE_POLARITY_WORDS = (
    "no",
    "not",
    "never",
    "don't",
    "won't",
    "stop",
    "drop",
    "instead",
    "without",
    "out",
    "outside",
    "remove",
    "avoid",
    "revert",
    "replace",
    "dropped",
    "removed",
    "reverted",
)
# Judged edges: pairs of distilled memories at or above this cosine are candidates, at most
# JUDGE_MAX_PAIRS_PER_MEMORY per memory (decisions first, then insights, nearest first).
JUDGE_MIN_SIMILARITY = 0.35
JUDGE_MAX_PAIRS_PER_MEMORY = 6
# A decision with a reversal cue is also paired with up to this many older decisions and
# segments (of other tasks, newest first) that name the dropped word, found by full text: the
# reversed choice may sit in a long segment whose vector is far from the short decision.
JUDGE_CUE_CANDIDATES = 5
# Offline judge (judge_offline.py): a newer decision reverses an older one when it carries a
# reversal cue naming a term ("instead of X", "drop X", "switch from X to Y", "no longer X",
# "move ... from X to Y", "replace X with Y", "revert X") and the older decision (or segment of
# another task) names that term without reversing it. The subject must be shared: at least
# JUDGE_SHARED_SUBJECT_TERMS content words (besides the reversed term) in common AND a cosine of
# at least JUDGE_SHARED_SUBJECT_SIMILARITY. On the demo corpus the planted reversals sit at cosine
# 0.31-0.70 and the generic-word false matches ("edit", "separate", "CLI") at 0.01-0.17.
JUDGE_SHARED_SUBJECT_TERMS = 2
JUDGE_SHARED_SUBJECT_SIMILARITY = 0.25
# Ollama judge: pairs per chat call (a batch that fails is retried by the next run), memory text
# shown per side, and the confidence below which a verdict is dropped.
JUDGE_OLLAMA_BATCH_PAIRS = 8
JUDGE_OLLAMA_MEMORY_CHARS = 700
JUDGE_OLLAMA_MIN_CONFIDENCE = 0.6
JUDGE_OLLAMA_TEMPERATURE = 0.0
JUDGE_OLLAMA_NUM_CTX = 8192
# Evidence quoted on an edge is cut to this length.
RELATIONSHIP_EVIDENCE_CHARS = 300
# Context packs: at most this many flags per packed memory (seed 003: flags <= 2).
PACK_MAX_FLAGS = 2

# --- forget (memory_pipeline/forget, cli/forget.py) --------------------------------------------
# `forget` lists this many memories one per line, then "... and N more".
FORGET_LISTED_MEMORIES = 50
# The wipe after a forget waits at most this long for each table's exclusive lock (VACUUM FULL);
# a table a long pipeline transaction holds is reported with the statement to run later.
FORGET_WIPE_LOCK_TIMEOUT_S = 30

# --- heal: stored text under the current redaction rules (memory_pipeline/heal) ----------------
# Rows read, rewritten and committed per transaction by `memory-pipeline heal` (each table and
# each Dagster record table in batches of this many; a progress line per batch once a table
# has more).
HEAL_BATCH_ROWS = 500

# --- retrieval: channels, fusion, rerank, context packs (serving/search, serving/context_pack) ---
# Channel sizes, fusion, the utility rerank, result shaping, context packs and limits. Both the
# production search (serving/search/) and the retrieval evaluation (serving/evaluation.py) read
# these values, and so do the pipeline's BM25 statistics and keyword index (memory_pipeline/
# embedding/), which must score as the search does.
#
# rerank_score = 0.30 * rrf_score            (normalised: 1.0 = rank 1 in both channels)
#              + 0.18 * token_overlap
#              + 0.18 * title_overlap
#              + 0.10 * context_overlap        (query context vs encoding context)
#              + 0.12 * recency                (power-law decay with stability)
#              + 0.08 * length_score
#              + 0.05 * depth_score
#              + type_boost                    (0.06 idea/synthesis/insight/decision)
#              + mem_class_boost               (0.04 semantic, 0.02 procedural, 0 episodic)
#              + reinforcement                 (0.03 * log1p(access_count) * spacing_bonus)
#              + project_penalty               (-0.15 when the memory is of another project)
#              + superseded_penalty            (-0.20 when status = superseded)
#              + staleness_penalty             (-0.05 when not retrieved for 90 days)

# --- candidate channels -------------------------------------------------------------------
# Every search draws the same candidates per channel whatever the output limit, so a larger
# limit only appends results (prefix stability).
CANDIDATES_PER_CHANNEL = 100
# Channels rank passages and a memory takes its best passage's rank. Each channel reads this
# many passages (so a memory's second- or third-best passages can be reported as matches), plus
# the best passage of each of its CANDIDATES_PER_CHANNEL memories.
PASSAGE_CANDIDATES_PER_CHANNEL = 300
# A hit reports (and a context pack may quote) at most this many of its matched passages.
MATCHED_PASSAGES_PER_HIT = 3
# HNSW search breadth; iterative scans (relaxed order) keep going past it until the
# PASSAGE_CANDIDATES_PER_CHANNEL rows are found.
HNSW_EF_SEARCH = 200
# Okapi BM25 over search_vector with the pipeline's corpus statistics (search_term_stats):
#   score = sum over query lexemes t of idf(t) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl/avgdl))
#   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)); dl = distinct lexemes of the memory.
# tf counts a lexeme's positions, an occurrence in the title or the questions a memory answers
# (weight A) as BM25_TITLE_TF.
BM25_K1 = 1.2
BM25_B = 0.75
BM25_TITLE_TF = 2.0
# The BM25 channel reads each query lexeme's best postings in impact order (sql/021) instead
# of scoring every passage that holds it: this many per lexeme (a rare lexeme's whole list),
# times BM25_FILTERED_POSTINGS_FACTOR under a narrowing filter (project, type, time, ...) so
# enough survive it; the best BM25_RESCORE_PASSAGES passages by that partial sum are then
# scored exactly over every query lexeme.
BM25_POSTINGS_PER_LEXEME = 600
BM25_FILTERED_POSTINGS_FACTOR = 4
BM25_RESCORE_PASSAGES = 400

# --- fusion ---------------------------------------------------------------------------------
RRF_K = 60

# --- utility rerank -------------------------------------------------------------------------
W_RRF = 0.30
W_TOKEN_OVERLAP = 0.18
W_TITLE_OVERLAP = 0.18
W_CONTEXT_OVERLAP = 0.10
W_RECENCY = 0.12
W_LENGTH = 0.08
W_DEPTH = 0.05

TYPE_BOOST = {"idea": 0.06, "synthesis": 0.06, "insight": 0.06, "decision": 0.06}
MEM_CLASS_BOOST = {"semantic": 0.04, "procedural": 0.02, "episodic": 0.0}

REINFORCEMENT_WEIGHT = 0.03
# Spacing effect: retrievals spread over a longer span consolidate more. The bonus grows from
# 1.0 (all retrievals on the day the memory was made) to 1.0 + SPACING_MAX_EXTRA once the last
# retrieval is SPACING_FULL_DAYS after creation.
SPACING_MAX_EXTRA = 0.5
SPACING_FULL_DAYS = 30.0

PROJECT_PENALTY = -0.15
SUPERSEDED_PENALTY = -0.20
STALENESS_PENALTY = -0.05
STALE_AFTER_DAYS = 90

# Recency: (1 + age_days / stability_days) ** -RECENCY_DECAY, where stability grows with use:
# stability_days = RECENCY_BASE_STABILITY_DAYS * (1 + log1p(access_count)).
RECENCY_DECAY = 0.5
RECENCY_BASE_STABILITY_DAYS = 14.0

# Length: a memory of LENGTH_IDEAL_WORDS words scores 1; shorter ones fall off linearly to 0 at
# zero words, longer ones decay slowly (a long segment still carries its content).
LENGTH_IDEAL_WORDS = (20, 400)
LENGTH_LONG_HALF_WORDS = 2000  # length at which a long text's score has halved

# --- result shaping -------------------------------------------------------------------------
# Soft lineage diversity: the first MAX_RESULTS_PER_TASK results of one source task are free;
# each further one from that task loses DIVERSITY_PENALTY per result already taken beyond them
# (demoted, never dropped).
MAX_RESULTS_PER_TASK = 2
# The rerank scores candidates in batches of this many (best upper bound first) until no
# candidate left could enter the results (`rerank.top_results`); smaller batches score fewer
# candidates but run dedup and diversity more often.
RERANK_BATCH = 20
DIVERSITY_PENALTY = 0.05
# Temporal context: the top result's neighbours within this window are appended, marked.
TEMPORAL_WINDOW_HOURS = 24
TEMPORAL_NEIGHBOURS = 3

# --- context packs --------------------------------------------------------------------------
# Excerpt priority (serving/context_pack.py), higher packed first:
#   priority = 1 / (PACK_RRF_K + bm25 rank) + 1 / (PACK_RRF_K + vector rank)   (among passages)
#            + PACK_HIT_WEIGHT / (PACK_RRF_K + its memory's rank in the search)  (the rerank)
#   times PACK_DISTILLED_SHARE for a distilled memory's passage (a sentence drawn from a turn
#   that a segment passage quotes whole), PACK_NEIGHBOUR_SHARE of the passage it neighbours for
#   the passage right after it (an answer follows its question) and PACK_PREVIOUS_SHARE for the
#   one right before it, and PACK_OPEN_ITEM_BONUS once its memory is in the pack (another
#   excerpt costs no title or provenance lines); a segment's passage (a turn, matched or
#   neighbour) also times ((its distinct content words + PACK_SUBSTANCE_OFFSET) /
#   (PACK_SUBSTANCE_TYPICAL_WORDS + PACK_SUBSTANCE_OFFSET)) ** PACK_SUBSTANCE_EXPONENT: a turn
#   that says more is likelier to hold the fact asked about than a short reply ("Doris?",
#   "ok lol") ranked as high (a turn of typical length keeps its priority). A turn with a vector
#   per message is packed message by message: each at the turn's priority, with the factor of
#   the message's own words, plus PACK_MESSAGE_WEIGHT / (PACK_RRF_K + its rank by vector among
#   the candidate messages). A pack chooses among PACK_PASSAGES_PER_HIT passages of each of the
#   search's MAX_LIMIT hits. Tuned on the long-conversation and oblique-question gold sets
#   (evaluation/) and checked on the demo gold set: scripts/bench_retrieval.py.
PACK_RRF_K = 30
PACK_HIT_WEIGHT = 1.0
PACK_DISTILLED_SHARE = 0.8
PACK_NEIGHBOUR_SHARE = 0.7
PACK_PREVIOUS_SHARE = 0.6
PACK_OPEN_ITEM_BONUS = 1.25
PACK_PASSAGES_PER_HIT = 8
# Messages: a passage that quotes several messages (a turn's question and answer) is packed
# message by message, each ranked by its own vector (passage_piece_embeddings): a turn's vector
# blends both sides, and quoting the side that says nothing of the task costs as much room as
# the side that does. Issue 11, scripts/bench_retrieval.py homes, evidence at 1,000/2,000
# tokens: the oblique set, one home per conversation, 0.766/0.896 -> 0.795/0.928 (weight 1.0:
# 0.799/0.925, 1.5: 0.774/0.911, 3.0: 0.699/0.883: a message's own rank then outweighs its
# memory's and the pack scatters over many items, each paying its header); all five in one
# home 0.747/0.871 -> 0.781/0.901; long conversations 0.920/0.976 -> 0.915/0.983. A message's
# substance with exponent 0.5 found more on the oblique set (one home per conversation
# 0.819/0.933) but lost 0.03 at 1,000 on the long set, whose users ask in short messages.
# A last message nobody answered (a passage of one message, no piece vector) had no rank and
# so no bonus: it lost to every message of an answered turn. Ranked by its passage's vector it
# competes (same homes: unanswered_last_message questions, one home per conversation,
# 0.707/0.927 -> 0.829/0.951; all oblique questions 0.806/0.927 -> 0.817/0.931, all five in
# one home 0.780/0.892 -> 0.809/0.898; the long set in one home 0.923/0.978 -> 0.923/0.983).
PACK_MESSAGE_WEIGHT = 0.5
# (Issue 11, the homes of scripts/bench_retrieval.py --per-conversation: one home per oblique
# conversation 0.735/0.876 -> 0.753/0.894 at 1,000/2,000 tokens on the same imports, the other
# sets within a question or two; exponent 0.5 gained more there but lost 0.02 at 1,000 pooled.)
PACK_SUBSTANCE_EXPONENT = 0.25
PACK_SUBSTANCE_OFFSET = 3
PACK_SUBSTANCE_TYPICAL_WORDS = 13
# Updates: when the query asks for the current state (one of PACK_CURRENT_STATE_CUES as a
# word), a matched passage that states a change (PACK_CHANGE_CUES) is packed at least
# PACK_NEWER_STEP times above each older one that states the same fact (they share
# PACK_SAME_FACT_SHARE of the query's content words), among the
# PACK_UPDATE_CANDIDATES best passages (serving/context_pack.py newer_first).
PACK_CURRENT_STATE_CUES = (
    "now",
    "currently",
    "current",
    "these days",
    "nowadays",
    "today",
    "latest",
    "at the moment",
    "anymore",
    "any more",
)
# ("still" is not a cue: "still returning 429" asks whether a problem persists, not for a value
# that changed; on the demo gold it lifted a newer, unrelated 429 discussion.)
# Words by which a newer passage says that something changed (stemmed like queries).
PACK_CHANGE_CUES = (
    "changed",
    "moved",
    "switched",
    "replaced",
    "instead",
    "new",
    "now",
    "no longer",
    "anymore",
    "updated",
    "upgraded",
    "revised",
    "raised",
    "dropped",
    "cancelled",
    "postponed",
)
PACK_NEWER_STEP = 1.02
PACK_SAME_FACT_SHARE = 0.5
# ... or their passage vectors (serving space) are at least this close: an update rarely repeats
# the question's words ("we replaced Celery with procrastinate"). 0.6: the cosine at which the
# relationships stage links memories (tuning.RELATED_MIN_SIMILARITY) and MiniLM scores clearly
# same-topic turns (tuning.SEGMENT_VEC_COSINE_CEIL, 0.62).
PACK_SAME_FACT_COSINE = 0.6
PACK_UPDATE_CANDIDATES = 60
# A pack item names its memory by the first PACK_ID_CHARS hex digits of its id (memory_read and
# memory_graph accept them): a full UUID costs 9 tokens per item, which in a pack of many small
# excerpts is room for another excerpt every few items (issue 11: evidence found within 1,000
# tokens of the oblique-question set went from 0.703 to 0.733). 48 bits: two of 100,000
# memories share a prefix with a chance of about 1 in 56,000; an ambiguous prefix is refused.
PACK_ID_CHARS = 12
# A packed memory's title line is cut to this many characters (the excerpts carry the text).
PACK_TITLE_CHARS = 60
# How many of the memories that did not fit a pack lists by name (all are counted).
PACK_MAX_LEFT_OUT_LISTED = 10

# --- current value first (serving/current_first.py) -------------------------------------------
# A reversed or superseded memory whose successor matched too is cut to one flagged line of this
# many characters, unless the pack's budget is at least PACK_GENEROUS_TOKENS.
PACK_REVERSED_LINE_CHARS = 160
PACK_GENEROUS_TOKENS = 4000
# After packing, items that state the same fact at different times are put newest first
# (serving/current_first.py order_items), and the successor of a packed reversed memory is
# lifted to be packed before it, unless the query asks about the past, by one of these
# (as words; "before" and "first" alone are not cues: "how low will savings fall before the
# paychecks begin?", "which event did he end up entering for his first triathlon?").
PACK_PAST_CUES = (
    "originally",
    "original",
    "first version",
    "old version",
    "at first",
    "initially",
    "previously",
    "used to",
    "earlier",
    "formerly",
    "in the past",
    "back then",
    "back when",
    "first time",
    "before that",
    "before we",
    "before switching",
    "at the start",
    "to begin with",
)
# A question for the value something ended at ("what did the bank end up lending?", "the
# final dates"): like PACK_CURRENT_STATE_CUES, the newest statement answers it; an AGGREGATE
# mention pack for such a question (or a current-state one) lists its lines newest first.
PACK_FINAL_VALUE_CUES = (
    "end up",
    "ended up",
    "ultimately",
    "finally",
    "final",
    "in the end",
    "so far",
    "at present",
    "these days",
    "at the moment",
)

# --- intent router: entity packs (serving/router.py, serving/entity_pack.py) -----------------
# LOOKUP packs at most this many mentions (the latest that match the question best).
ROUTER_LOOKUP_LINES = 8
# One mention line is cut to this many characters (a line per mention: many fit a budget).
ROUTER_LINE_CHARS = 480
# Distilled memories whose own mention is a line of an entity pack (segments come by turns).
ROUTER_MEMORY_MENTION_TYPES = ("decision", "insight", "synthesis")

# --- limits ---------------------------------------------------------------------------------
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_QUERY_CHARS = 2000
# Context packs count tokens as characters / 4 (the usual estimate for English and code).
CHARS_PER_TOKEN = 4

# Memory types that must never steer an agent automatically: correction episodes are evidence of
# what the user wanted, searchable on request but never packed into context or briefings.
STEERING_EXCLUDED_TYPES = ("correction_episode",)
