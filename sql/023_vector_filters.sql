-- Filtered vector search at 100K memories (issue 12). A filtered query walked the HNSW graph
-- in an iterative scan and joined every passage it met to memory_passages and memories, only
-- to reject most of them: a type filter took 54 ms at p50 and 109 ms at p95. Two changes:
--
-- 1. Each passage vector carries its memory's id and the memory columns search filters on
--    (type, source, project, creation time), copied by triggers, so the filter is applied in
--    the index scan itself and the memories row is read only for the passages that pass.
-- 2. Partial HNSW indexes per type and per source for the values a filter names most
--    (pgvector's advice for filtering on few distinct values): a filter on one of them walks a
--    graph of only its passages. tuning.VECTOR_PARTIAL_INDEXES lists the same values; a test
--    checks that every space has exactly these indexes. A new space adds its own.
--
-- Btree indexes on the copied columns serve the exact path (a filter few memories pass).
-- The HNSW indexes are dropped while the columns are filled (each updated row would otherwise
-- be inserted into the graph again) and built afterwards: about two minutes at 100K memories.
SET LOCAL maintenance_work_mem = '512MB';

DROP INDEX passage_embeddings_minilm_384_hnsw;
DROP INDEX passage_embeddings_bge_m3_1024_hnsw;

ALTER TABLE passage_embeddings
    ADD COLUMN memory_id          uuid,
    ADD COLUMN memory_type        text,
    ADD COLUMN memory_source_type text,
    ADD COLUMN memory_project     text,
    ADD COLUMN memory_created_at  timestamptz;

UPDATE passage_embeddings e
SET memory_id = m.id, memory_type = m.type, memory_source_type = m.source_type,
    memory_project = m.project, memory_created_at = m.created_at
FROM memory_passages p JOIN memories m ON m.id = p.memory_id
WHERE p.id = e.passage_id;

ALTER TABLE passage_embeddings
    ALTER COLUMN memory_id SET NOT NULL,
    ALTER COLUMN memory_type SET NOT NULL,
    ALTER COLUMN memory_created_at SET NOT NULL;

-- A vector is written (the embedding asset, a restore, the benchmark's COPY): copy its
-- memory's columns, whatever the writer sent.
CREATE FUNCTION passage_embeddings_memory_columns() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT m.id, m.type, m.source_type, m.project, m.created_at
    INTO NEW.memory_id, NEW.memory_type, NEW.memory_source_type, NEW.memory_project,
         NEW.memory_created_at
    FROM memory_passages p JOIN memories m ON m.id = p.memory_id
    WHERE p.id = NEW.passage_id;
    RETURN NEW;
END $$;

CREATE TRIGGER passage_embeddings_memory_columns
    BEFORE INSERT OR UPDATE ON passage_embeddings
    FOR EACH ROW EXECUTE FUNCTION passage_embeddings_memory_columns();

-- A memory's filtered columns change (rare: a project named later, say): its vectors follow.
CREATE FUNCTION memories_vector_columns() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE passage_embeddings
    SET memory_type = NEW.type, memory_source_type = NEW.source_type,
        memory_project = NEW.project, memory_created_at = NEW.created_at
    WHERE memory_id = NEW.id;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_vector_columns
    AFTER UPDATE OF type, source_type, project, created_at ON memories
    FOR EACH ROW
    WHEN (OLD.type IS DISTINCT FROM NEW.type OR OLD.source_type IS DISTINCT FROM NEW.source_type
          OR OLD.project IS DISTINCT FROM NEW.project
          OR OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION memories_vector_columns();

CREATE INDEX passage_embeddings_memory_idx ON passage_embeddings (memory_id);
CREATE INDEX passage_embeddings_type_idx ON passage_embeddings (space, memory_type);
CREATE INDEX passage_embeddings_source_idx ON passage_embeddings (space, memory_source_type);
CREATE INDEX passage_embeddings_project_idx ON passage_embeddings (space, memory_project);
CREATE INDEX passage_embeddings_created_idx ON passage_embeddings (space, memory_created_at);

CREATE INDEX passage_embeddings_minilm_384_hnsw ON passage_embeddings
    USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WHERE space = 'local:all-minilm-l6-v2:384';
CREATE INDEX passage_embeddings_bge_m3_1024_hnsw ON passage_embeddings
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops)
    WHERE space = 'ollama:bge-m3:1024';

-- One partial index per space and filtered value.
DO $$
DECLARE
    s record;
    f record;
BEGIN
    FOR s IN SELECT * FROM (VALUES
        ('local:all-minilm-l6-v2:384', 'minilm_384', 384),
        ('ollama:bge-m3:1024', 'bge_m3_1024', 1024)) AS v(space, tag, dims)
    LOOP
        FOR f IN SELECT * FROM (VALUES
            ('memory_type', 'type', 'decision'),
            ('memory_type', 'type', 'insight'),
            ('memory_type', 'type', 'correction_episode'),
            ('memory_source_type', 'source', 'codex'),
            ('memory_source_type', 'source', 'claude_code'),
            ('memory_source_type', 'source', 'chat_import')) AS v(col, kind, value)
        LOOP
            EXECUTE format(
                'CREATE INDEX %I ON passage_embeddings USING hnsw ((embedding::vector(%s))'
                ' vector_cosine_ops) WHERE space = %L AND %I = %L',
                format('passage_embeddings_%s_%s_%s_hnsw', s.tag, f.kind, f.value),
                s.dims, s.space, f.col, f.value);
        END LOOP;
    END LOOP;
END $$;

ANALYZE passage_embeddings;
