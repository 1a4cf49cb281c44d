-- Task Semantic Pass output and its one cursor per task. Provenance (which turns, segment, task
-- a memory rests on) is relational and queryable; diagnostics live apart from it.
CREATE TABLE topic_segments (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    task_id       uuid NOT NULL REFERENCES captured_tasks(id) ON DELETE CASCADE,
    first_ordinal integer NOT NULL,
    last_ordinal  integer NOT NULL,
    title         text NOT NULL,
    memory_id     uuid NOT NULL UNIQUE REFERENCES memories(id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (task_id, first_ordinal),
    CHECK (first_ordinal <= last_ordinal)
);

CREATE TABLE memory_provenance (
    memory_id  uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    turn_id    uuid NOT NULL REFERENCES agent_turns(id) ON DELETE CASCADE,
    segment_id uuid NOT NULL REFERENCES topic_segments(id) ON DELETE CASCADE,
    task_id    uuid NOT NULL REFERENCES captured_tasks(id) ON DELETE CASCADE,
    -- 'segment' (a turn of the segment memory), 'supports' (a distilled memory's evidence),
    -- 'corrected' / 'correcting' (the two turns of a correction episode)
    role       text NOT NULL CHECK (role IN ('segment', 'supports', 'corrected', 'correcting')),
    PRIMARY KEY (memory_id, turn_id)
);

CREATE INDEX memory_provenance_turn_idx ON memory_provenance (turn_id);
CREATE INDEX memory_provenance_task_idx ON memory_provenance (task_id);
CREATE INDEX memory_provenance_segment_idx ON memory_provenance (segment_id);

-- The Semantic Processing Cursor: the last turn whose pass was stored. Moves only inside the
-- transaction that stores the pass, so a failure leaves it where it was.
CREATE TABLE semantic_cursors (
    task_id      uuid PRIMARY KEY REFERENCES captured_tasks(id) ON DELETE CASCADE,
    last_ordinal integer NOT NULL CHECK (last_ordinal >= -1),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Diagnostics of stored passes (backend, model, hashes, timing): never part of provenance.
CREATE TABLE semantic_pass_runs (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    task_id       uuid NOT NULL REFERENCES captured_tasks(id) ON DELETE CASCADE,
    backend       text NOT NULL,
    first_ordinal integer NOT NULL,
    last_ordinal  integer NOT NULL,
    input_sha256  text NOT NULL,
    output_sha256 text NOT NULL,
    duration_ms   integer NOT NULL,
    memory_counts jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX semantic_pass_runs_task_idx ON semantic_pass_runs (task_id, created_at DESC);
