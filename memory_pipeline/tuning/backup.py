"""Constants that tune backup and restore (memory_pipeline/backup/)."""

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
