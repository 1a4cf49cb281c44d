"""Constants that tune reinforcement (memory_pipeline/reinforcement/)."""

# --- reinforcement ------------------------------------------------------------------------
# Retrieval events (what search returned) are folded into memories' access counts hourly; a
# folded event older than this many days is deleted (its count stays in the memory). Unfolded
# events are never deleted.
RETRIEVAL_EVENTS_RETENTION_DAYS = 30
