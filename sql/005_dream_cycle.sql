-- Dream cycle bookkeeping (seed 000): one row per run, one per candidate with all four verdicts.
CREATE TABLE dream_cycle_runs (
    id                         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    run_type                   text NOT NULL CHECK (run_type IN (
                                   'scheduled', 'post_learn', 'session_start', 'user_triggered')),
    started_at                 timestamptz NOT NULL DEFAULT now(),
    completed_at               timestamptz,
    explorer_output            jsonb,
    explorer_feedback_injected text,
    candidates_generated       integer,
    candidates_accepted        integer,
    candidates_deferred        integer,
    candidates_rejected        integer,
    digest                     text
);

CREATE TABLE dream_cycle_candidates (
    id                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    run_id                  uuid REFERENCES dream_cycle_runs(id) ON DELETE CASCADE,
    candidate_json          jsonb,
    operation               text CHECK (operation IN ('CREATE', 'UPDATE', 'SUPERSEDE')),
    target_memory_id        uuid REFERENCES memories(id),
    schema_operation        text CHECK (schema_operation IN ('assimilation', 'accommodation')),
    evaluator_a_verdict     text,   -- Skeptic
    evaluator_a_reasoning   text,
    evaluator_b_verdict     text,   -- User Advocate
    evaluator_b_reasoning   text,
    evaluator_c_verdict     text,   -- Epistemologist
    evaluator_c_reasoning   text,
    evaluator_d_verdict     text,   -- Methodologist
    evaluator_d_reasoning   text,
    final_verdict           text CHECK (final_verdict IN ('ACCEPTED', 'REJECTED')),
    created_memory_id       uuid REFERENCES memories(id),
    user_rejected_at        timestamptz,
    user_rejection_reason   text,
    deferred_twice_rejected boolean NOT NULL DEFAULT false,
    created_at              timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX dream_cycle_candidates_run_idx ON dream_cycle_candidates (run_id);
