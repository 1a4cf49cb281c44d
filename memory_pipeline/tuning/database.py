"""Constants that tune the embedded PostgreSQL server (memory_pipeline/db/)."""

# --- database: the embedded server (memory_pipeline/db/embedded.py) ----------------------------
# PostgreSQL's default shared_buffers (128 MB) is smaller than the search working set at 100K
# memories (postings, passages, two HNSW indexes), so BM25 and vector queries read pages through
# the kernel on every search. Only the embedded server gets this; your own server keeps its own.
EMBEDDED_SHARED_BUFFERS = "1GB"
