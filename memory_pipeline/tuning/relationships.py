"""Constants that tune relationship discovery (memory_pipeline/relationships/)."""

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
