-- The dream cycle (memory_pipeline/dream/): what migration 005 could not express.
-- * A verdict can be DEFERRED, and a candidate links to its earlier deferral (`deferred_from`)
--   and counts its deferrals, so a candidate deferred twice is rejected for good.
-- * A candidate has a fingerprint (operation + target + the memories it rests on) that names
--   the same proposal across runs: deferrals, user rejections and "rejected for good" follow it.
-- * Accepted candidates may wait for the user's approval (`approval`: held / approved).
-- * A run records its backend, calls, tokens, precheck and feedback, status and digest path.
-- * Every reference to memories cascades, so forgetting a memory never fails on dream rows.

ALTER TABLE dream_cycle_candidates DROP CONSTRAINT dream_cycle_candidates_final_verdict_check;
ALTER TABLE dream_cycle_candidates ADD CONSTRAINT dream_cycle_candidates_final_verdict_check
    CHECK (final_verdict IN ('ACCEPTED', 'REJECTED', 'DEFERRED'));

ALTER TABLE dream_cycle_candidates
    DROP CONSTRAINT dream_cycle_candidates_target_memory_id_fkey,
    DROP CONSTRAINT dream_cycle_candidates_created_memory_id_fkey,
    ADD CONSTRAINT dream_cycle_candidates_target_memory_id_fkey
        FOREIGN KEY (target_memory_id) REFERENCES memories(id) ON DELETE CASCADE,
    ADD CONSTRAINT dream_cycle_candidates_created_memory_id_fkey
        FOREIGN KEY (created_memory_id) REFERENCES memories(id) ON DELETE CASCADE,
    ADD COLUMN fingerprint    text,
    ADD COLUMN strategy       text,
    ADD COLUMN deferred_from  uuid REFERENCES dream_cycle_candidates(id) ON DELETE SET NULL,
    ADD COLUMN defer_count    integer NOT NULL DEFAULT 0 CHECK (defer_count >= 0),
    -- NULL: stored at once (or not accepted); 'held': waits for `dream approve`; 'approved'.
    ADD COLUMN approval       text CHECK (approval IN ('held', 'approved')),
    ADD COLUMN successor_id   uuid REFERENCES memories(id) ON DELETE CASCADE,  -- SUPERSEDE only
    ADD COLUMN stored_at      timestamptz,
    ADD COLUMN restored_at    timestamptz;  -- a supersede undone by `dream reject`

CREATE INDEX dream_cycle_candidates_fingerprint_idx
    ON dream_cycle_candidates (fingerprint, created_at DESC);
CREATE INDEX dream_cycle_candidates_created_memory_idx
    ON dream_cycle_candidates (created_memory_id) WHERE created_memory_id IS NOT NULL;
CREATE INDEX dream_cycle_candidates_target_idx
    ON dream_cycle_candidates (target_memory_id) WHERE target_memory_id IS NOT NULL;

-- What a candidate rests on, relationally (candidate_json keeps the whole proposal).
CREATE TABLE dream_candidate_memories (
    candidate_id uuid NOT NULL REFERENCES dream_cycle_candidates(id) ON DELETE CASCADE,
    memory_id    uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (candidate_id, memory_id)
);
CREATE INDEX dream_candidate_memories_memory_idx ON dream_candidate_memories (memory_id);

ALTER TABLE dream_cycle_runs
    ADD COLUMN status          text NOT NULL DEFAULT 'completed'
                                   CHECK (status IN ('running', 'completed', 'failed')),
    ADD COLUMN partition_day   date,
    -- Memories not made by the dream cycle when the run started: the post_learn sensor starts
    -- a run once this many more exist (memories keep their source time, so created_at cannot).
    ADD COLUMN memories_seen   integer,
    ADD COLUMN backend         text,
    ADD COLUMN llm_calls       integer NOT NULL DEFAULT 0,
    ADD COLUMN llm_tokens      integer NOT NULL DEFAULT 0,
    ADD COLUMN precheck        jsonb,
    ADD COLUMN feedback        jsonb,
    ADD COLUMN memories_created    integer NOT NULL DEFAULT 0,
    ADD COLUMN memories_superseded integer NOT NULL DEFAULT 0,
    ADD COLUMN candidates_held     integer NOT NULL DEFAULT 0,
    ADD COLUMN digest_path     text,
    ADD COLUMN error           text;

CREATE INDEX dream_cycle_runs_started_idx ON dream_cycle_runs (started_at DESC);

-- The read-only serving role shows dream provenance (memory_read, memory_graph).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memory_reader') THEN
        GRANT SELECT ON dream_candidate_memories TO memory_reader;
        GRANT SELECT ON dream_cycle_runs, dream_cycle_candidates TO memory_reader;
    END IF;
END $$;
