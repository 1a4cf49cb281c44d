"""Constants that tune forget and heal (memory_pipeline/forget/, memory_pipeline/heal/)."""

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
