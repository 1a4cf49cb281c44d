-- Embedding spaces are never mixed: every vector row names its space, a CHECK ties its length to
-- the space's dimensions, and each space has its own partial HNSW index over a fixed-width cast.
-- Search reads only the one space marked `serving`; a new space is built beside it and takes
-- over once every memory has a vector in it.
CREATE TABLE embedding_spaces (
    name         text PRIMARY KEY CHECK (name ~ '^[a-z0-9_-]+:[^:]+:[0-9]+$'),
    provider     text NOT NULL,
    model        text NOT NULL,
    dims         integer NOT NULL CHECK (dims > 0),
    serving      boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz            -- first time every memory had a vector in this space
);

CREATE UNIQUE INDEX embedding_spaces_one_serving ON embedding_spaces (serving) WHERE serving;

INSERT INTO embedding_spaces (name, provider, model, dims) VALUES
    ('local:all-minilm-l6-v2:384', 'local', 'all-minilm-l6-v2', 384),
    ('ollama:bge-m3:1024', 'ollama', 'bge-m3', 1024);

CREATE TABLE memory_embeddings (
    memory_id      uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    space          text NOT NULL REFERENCES embedding_spaces(name),
    embedding      vector NOT NULL,
    content_sha256 text NOT NULL,   -- of the text embedded; a changed memory is re-embedded
    embedded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, space),
    CHECK (vector_dims(embedding) = (substring(space FROM ':([0-9]+)$'))::integer)
);

CREATE INDEX memory_embeddings_minilm_384_hnsw ON memory_embeddings
    USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WHERE space = 'local:all-minilm-l6-v2:384';

CREATE INDEX memory_embeddings_bge_m3_1024_hnsw ON memory_embeddings
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops)
    WHERE space = 'ollama:bge-m3:1024';
