-- Healing stored secrets (issue 31, memory_pipeline/heal): when the redaction rules change,
-- `memory-pipeline heal` runs the current rules over everything already stored and rewrites what
-- they match; `memory-pipeline run` does it once by itself after an upgrade that changed them.
--
-- The rules last applied to the whole store (memory_pipeline/capture/redact.py RULES_VERSION),
-- one row. rules_version NULL: never recorded. A home with nothing captured yet records the
-- current version without scanning ('fresh'); a home holding rows stored under other rules is
-- healed first ('heal').
CREATE TABLE redaction_state (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    rules_version   text,
    applied_at      timestamptz,
    how             text CHECK (how IN ('heal', 'fresh')),
    -- When a heal last rewrote something: backups made before it may hold the old text.
    last_rewrite_at timestamptz,
    -- Set before a heal's first rewrite commits, cleared once what is derived from the text
    -- (vectors, passages, BM25 statistics, the keyword index) was recomputed: a heal that
    -- died in between recomputes it on the next try, even though no row is left to rewrite.
    derived_pending boolean NOT NULL DEFAULT false
);
INSERT INTO redaction_state DEFAULT VALUES;

-- Stored turns stay immutable for everything but the heal: a transaction that set
-- `memory_pipeline.heal` to 'on' (SET LOCAL) may rewrite a turn's text and what is computed
-- from it (its hash and its redaction count), nothing else.
CREATE OR REPLACE FUNCTION agent_turns_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('memory_pipeline.heal', true) = 'on'
       AND to_jsonb(NEW) - ARRAY['prompt', 'outcome', 'content_sha256', 'redactions']
           = to_jsonb(OLD) - ARRAY['prompt', 'outcome', 'content_sha256', 'redactions'] THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'agent turns are immutable (task %, ordinal %)', OLD.task_id, OLD.ordinal;
END $$;
