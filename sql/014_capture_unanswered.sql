-- Unanswered turns (chat imports): a last prompt nobody answered is stored once its conversation
-- has been quiet for MEMORY_SEMANTIC_QUIET_MINUTES, with an empty outcome and marked. Stored turns
-- stay immutable: when the answer (or more of the question) appears later, the complete turn is
-- appended as a new turn that repeats the question and names the stored turn it continues, so the
-- answer is searchable next to its question and nothing is rewritten.
ALTER TABLE agent_turns
    ADD COLUMN unanswered boolean NOT NULL DEFAULT false,
    ADD COLUMN continues_ordinal integer,
    ADD CONSTRAINT agent_turns_unanswered_outcome_empty CHECK (NOT unanswered OR outcome = ''),
    ADD CONSTRAINT agent_turns_continues_an_earlier_turn
        CHECK (continues_ordinal >= 0 AND continues_ordinal < ordinal);
