"""Constants that tune embedding and the keyword index (memory_pipeline/embedding/)."""

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
