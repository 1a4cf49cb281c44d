-- The transcript sensor's memory of what it already asked for: one row per file whose current
-- version it requested an ingest run for (or could not peek at) and that capture has not stored
-- as is yet. A file that stays uncaptured (a failed or dead run, a task day outside the
-- partitions, a chat import's unanswered last prompt waiting for its quiet period) is so requested
-- once per version instead of on every tick, and the sensor's Dagster cursor, which Dagster keeps
-- with every tick, stays a few bytes whatever the number of files. The sensor deletes a row once
-- its file is captured as is, has changed again, or is gone.
CREATE TABLE sensor_file_requests (
    path       text PRIMARY KEY,                 -- the file's key, as in source_files.path
    size       bigint NOT NULL,                  -- the version requested
    mtime_ns   bigint NOT NULL,
    outcome    text NOT NULL CHECK (outcome IN ('requested', 'peek_failed')),
    recheck_at timestamptz,                      -- requested once more if still not captured then
    updated_at timestamptz NOT NULL DEFAULT now()
);
