-- Passages: what search ranks and what context packs quote. A segment memory is cut at its turn
-- boundaries into passages that fit the embedding window (a turn too long for it at sentence
-- boundaries); a short memory (decision, insight, correction) is one passage. Each passage has
-- its own full-text entry and its own vector per space, so no part of a long segment is
-- invisible to either channel. The pipeline (memory_embeddings asset) owns these rows and
-- rewrites a memory's passages only when the text they were cut from changed.
CREATE TABLE memory_passages (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    memory_id     uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    ordinal       integer NOT NULL CHECK (ordinal >= 0),   -- position within the memory
    -- Embedded and indexed before the text: a short memory's title; '' for a segment's
    -- passages (its title is its first prompt, which the first passage already quotes).
    heading       text NOT NULL DEFAULT '',
    text          text NOT NULL,
    -- The captured turns the passage quotes or rests on, in order (agent_turns.id); empty for a
    -- memory not derived from captured turns.
    turn_ids      uuid[] NOT NULL DEFAULT '{}',
    -- The heading and the questions a memory answers weigh A, the passage text B.
    search_vector tsvector NOT NULL,
    -- Of the memory text and turn range the passages were cut from: unchanged means current.
    source_sha256 text NOT NULL,
    -- The embedding space whose window and tokenizer the passages were last checked against;
    -- after a space switch they are re-checked (and cut again only if one does not fit).
    cut_for       text NOT NULL REFERENCES embedding_spaces(name),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (memory_id, ordinal)
);

CREATE INDEX memory_passages_search_vector_idx ON memory_passages USING gin (search_vector);

-- A passage's vector per embedding space, never mixed: the same CHECK and per-space partial HNSW
-- indexes as memory_embeddings (sql/009).
CREATE TABLE passage_embeddings (
    passage_id     uuid NOT NULL REFERENCES memory_passages(id) ON DELETE CASCADE,
    space          text NOT NULL REFERENCES embedding_spaces(name),
    embedding      vector NOT NULL,
    content_sha256 text NOT NULL,   -- of the text embedded; a changed passage is re-embedded
    embedded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (passage_id, space),
    CHECK (vector_dims(embedding) = (substring(space FROM ':([0-9]+)$'))::integer)
);

CREATE INDEX passage_embeddings_minilm_384_hnsw ON passage_embeddings
    USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WHERE space = 'local:all-minilm-l6-v2:384';

CREATE INDEX passage_embeddings_bge_m3_1024_hnsw ON passage_embeddings
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops)
    WHERE space = 'ollama:bge-m3:1024';

-- BM25 corpus statistics over passages (search ranks passages; sql/012 holds the memory-level
-- ones). Recomputed whole by the bm25_statistics asset; serving only reads them.
CREATE TABLE passage_term_stats (
    lexeme text PRIMARY KEY,
    ndoc   integer NOT NULL CHECK (ndoc > 0)
);

CREATE TABLE passage_corpus_stats (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    documents    integer NOT NULL,
    avg_lexemes  double precision NOT NULL,  -- mean distinct lexemes per passage
    refreshed_at timestamptz NOT NULL DEFAULT now()
);

GRANT SELECT ON memory_passages, passage_embeddings, passage_term_stats, passage_corpus_stats
    TO memory_reader;
