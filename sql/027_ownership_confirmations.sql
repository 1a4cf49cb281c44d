-- A user's word that a task skipped for unknown ownership is theirs (`memory-pipeline capture
-- confirm SOURCE:NATIVE_ID`). Capture reads it as user evidence: it turns an `unknown` verdict
-- into `user_owned` on the next run, and never overrides delegation evidence.
CREATE TABLE ownership_confirmations (
    source       text NOT NULL,
    native_id    text NOT NULL,
    confirmed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, native_id)
);
