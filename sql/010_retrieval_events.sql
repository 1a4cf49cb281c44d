-- What search returned, written by the read-only serving role. A pipeline asset folds unfolded
-- events into memories.access_count / last_accessed_at; serving never writes memories itself.
CREATE TABLE retrieval_events (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    memory_id    uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    surface      text NOT NULL CHECK (surface IN ('cli', 'mcp', 'api')),
    query_sha256 text,              -- the query itself is not kept
    rank         integer NOT NULL CHECK (rank >= 1),
    created_at   timestamptz NOT NULL DEFAULT now(),
    folded_at    timestamptz        -- set by the pipeline when counted
);

CREATE INDEX retrieval_events_unfolded_idx ON retrieval_events (memory_id) WHERE folded_at IS NULL;
