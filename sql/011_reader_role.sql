-- The read-only role serving connects as: SELECT on what search and MCP read, INSERT on
-- retrieval events only. Roles are cluster-wide, grants are per database.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memory_reader') THEN
        CREATE ROLE memory_reader LOGIN;
    END IF;
END $$;

-- Bound every serving query: an agent's search must never hold the database.
ALTER ROLE memory_reader SET statement_timeout = '15s';

GRANT USAGE ON SCHEMA public TO memory_reader;
GRANT SELECT ON
    memories, memory_relationships, entities, entity_edges, memory_entities,
    dream_cycle_runs, dream_cycle_candidates, express_feedback,
    captured_tasks, agent_turns, topic_segments, memory_provenance,
    embedding_spaces, memory_embeddings, schema_migrations
TO memory_reader;
GRANT INSERT (memory_id, surface, query_sha256, rank) ON retrieval_events TO memory_reader;
