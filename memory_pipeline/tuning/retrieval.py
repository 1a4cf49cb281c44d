"""Constants that tune retrieval: channels, fusion, rerank, packs, the router."""

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
# A question about a plan ("when are they planning to move in?", "how many plants is she
# planning for next season?", "where is the wedding going to be?"): a plan is revised by a
# later one, so like PACK_FINAL_VALUE_CUES the newest statement answers it.
PACK_PLAN_CUES = (
    "planning",
    "plan to",
    "plans to",
    "plans for",
    "going to be",
    "next season",
    "next year",
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
