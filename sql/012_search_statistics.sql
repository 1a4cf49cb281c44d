-- Corpus statistics for BM25 ranking over memories.search_vector: how many memories contain each
-- lexeme, and the corpus size and mean length. PostgreSQL's ts_rank has no inverse document
-- frequency, so without these a query's common words ("use", "run") outweigh its rare ones.
-- The pipeline recomputes both tables; serving only reads them.
CREATE TABLE search_term_stats (
    lexeme text PRIMARY KEY,
    ndoc   integer NOT NULL CHECK (ndoc > 0)
);

CREATE TABLE search_corpus_stats (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    documents    integer NOT NULL,
    avg_lexemes  double precision NOT NULL,  -- mean distinct lexemes per memory
    refreshed_at timestamptz NOT NULL DEFAULT now()
);

GRANT SELECT ON search_term_stats, search_corpus_stats TO memory_reader;
