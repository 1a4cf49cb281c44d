-- Retrieval events from the agent hooks (serving/hooks): what a session-start or per-prompt
-- injection put in front of the model counts for reinforcement like any other retrieval.
ALTER TABLE retrieval_events DROP CONSTRAINT IF EXISTS retrieval_events_surface_check;
ALTER TABLE retrieval_events ADD CONSTRAINT retrieval_events_surface_check
    CHECK (surface IN ('cli', 'mcp', 'api', 'hook'));
