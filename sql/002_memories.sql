-- The primary knowledge store (seed 000). Vectors do not live here: each embedding space has its
-- own rows in memory_embeddings (migration 007), so spaces can never be mixed in one index.
CREATE TABLE memories (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    type             text NOT NULL CHECK (type IN (
                         'idea', 'synthesis', 'research', 'insight', 'question', 'decision',
                         'correction_episode', 'priority', 'project', 'connection', 'source',
                         'segment')),   -- 'segment': a searchable topic segment of a captured task
    title            text NOT NULL,
    content          text NOT NULL,
    summary          text,
    tags             text[] NOT NULL DEFAULT '{}',
    source_url       text,
    source_type      text,              -- codex_task, claude_code_session, chat_import, dream_cycle, ...
    metadata         jsonb NOT NULL DEFAULT '{}',  -- metadata.questions: questions it answers
    status           text NOT NULL DEFAULT 'active' CHECK (status IN (
                         'active', 'explored', 'archived', 'superseded', 'user_rejected')),
    confidence       double precision NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    parent_id        uuid REFERENCES memories(id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    search_vector    tsvector,          -- maintained by the trigger below
    access_count     integer NOT NULL DEFAULT 0,
    mem_class        text CHECK (mem_class IN ('semantic', 'episodic', 'procedural')),
    project          text,              -- the semantic project; never copied from a native cwd
    last_accessed_at timestamptz,
    encoding_context text,              -- context at creation time, matched against queries
    depth_score      double precision CHECK (depth_score BETWEEN 0 AND 1),
    -- The daily partition whose run produced the memory (a captured task's start day), so each
    -- partitioned asset can find, redo and embed exactly its own rows.
    partition_day    date NOT NULL
);

-- Full-text vector: title and the questions a memory answers weigh A, content weighs B.
CREATE FUNCTION memories_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    questions text;
BEGIN
    SELECT string_agg(q, ' ') INTO questions
    FROM jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(NEW.metadata -> 'questions') = 'array'
             THEN NEW.metadata -> 'questions' ELSE '[]'::jsonb END) AS q;
    NEW.search_vector :=
        setweight(to_tsvector('english', coalesce(NEW.title, '')), 'A')
        || setweight(to_tsvector('english', coalesce(questions, '')), 'A')
        || setweight(to_tsvector('english', coalesce(NEW.content, '')), 'B');
    RETURN NEW;
END $$;

CREATE TRIGGER memories_search_vector
    BEFORE INSERT OR UPDATE OF title, content, metadata ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_search_vector();

-- updated_at tracks edits of what a memory says, not retrieval bookkeeping (access_count).
CREATE FUNCTION memories_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END $$;

CREATE TRIGGER memories_touch
    BEFORE UPDATE OF type, title, content, summary, tags, metadata, status, project ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_touch();

CREATE INDEX memories_search_vector_idx ON memories USING gin (search_vector);
CREATE INDEX memories_type_status_idx ON memories (type, status);
CREATE INDEX memories_tags_idx ON memories USING gin (tags);
CREATE INDEX memories_metadata_idx ON memories USING gin (metadata);
CREATE INDEX memories_created_at_idx ON memories (created_at DESC);
CREATE INDEX memories_source_type_idx ON memories (source_type);
CREATE INDEX memories_mem_class_idx ON memories (mem_class);
CREATE INDEX memories_project_idx ON memories (project);
CREATE INDEX memories_last_accessed_at_idx ON memories (last_accessed_at DESC);
CREATE INDEX memories_partition_day_idx ON memories (partition_day);
