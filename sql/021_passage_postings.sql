-- An impact-ordered inverted index over passages, so the BM25 channel reads only the best
-- postings of each query lexeme instead of scoring every passage that holds a common word
-- (issue 12: 1.5 s at 100K memories through the GIN index). Derived data, all in PostgreSQL:
-- memory_passages stays the record; triggers keep the postings current as passages are
-- written, changed or deleted (a forgotten memory's lexemes go with its passages), and the
-- bm25_statistics asset rebuilds them when the corpus' mean passage length drifts.
--
-- impact = a lexeme's Okapi term-frequency factor in one passage,
--   tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl)),
-- with tf counting a title/question position (weight A) as title_tf. A passage's BM25 score
-- is the sum over query lexemes of idf(lexeme) * impact, so within one lexeme the postings in
-- impact order are exactly its passages in score order.
CREATE TABLE passage_postings (
    lexeme     text NOT NULL,
    impact     real NOT NULL,
    passage_id uuid NOT NULL,   -- kept in step with memory_passages by the triggers below
    PRIMARY KEY (passage_id, lexeme)
);

CREATE INDEX passage_postings_impact_idx ON passage_postings (lexeme, impact DESC)
    INCLUDE (passage_id);

-- The parameters the stored impacts were computed with. The pipeline copies k1, b and title_tf
-- from serving/rerank_weights.py and avgdl from passage_corpus_stats, and rebuilds the
-- postings when they change (embedding/bm25_stats.py). Until the first refresh, avgdl is 1,
-- as search used before any statistics existed.
CREATE TABLE passage_postings_params (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    k1         double precision NOT NULL,
    b          double precision NOT NULL,
    title_tf   double precision NOT NULL,
    avgdl      double precision NOT NULL CHECK (avgdl > 0),
    rebuilt_at timestamptz
);

INSERT INTO passage_postings_params (k1, b, title_tf, avgdl) VALUES (1.2, 0.75, 2.0, 1.0);

CREATE FUNCTION passage_postings_of(ids uuid[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO passage_postings (lexeme, impact, passage_id)
    SELECT u.lexeme,
           (t.tf * (pr.k1 + 1)
            / (t.tf + pr.k1 * (1 - pr.b + pr.b * length(p.search_vector) / pr.avgdl)))::real,
           p.id
    FROM memory_passages p
    CROSS JOIN passage_postings_params pr
    CROSS JOIN LATERAL unnest(p.search_vector) AS u
    CROSS JOIN LATERAL (
        SELECT coalesce(sum(CASE w WHEN 'A' THEN pr.title_tf ELSE 1 END), 1) AS tf
        FROM unnest(u.weights) AS w
    ) t
    WHERE p.id = ANY(ids)
$$;

CREATE FUNCTION passage_postings_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM passage_postings_of(ARRAY(SELECT id FROM new_passages));
    RETURN NULL;
END $$;

CREATE FUNCTION passage_postings_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed uuid[];
BEGIN
    changed := ARRAY(
        SELECT n.id FROM new_passages n JOIN old_passages o ON o.id = n.id
        WHERE n.search_vector IS DISTINCT FROM o.search_vector);
    IF cardinality(changed) > 0 THEN
        DELETE FROM passage_postings WHERE passage_id = ANY(changed);
        PERFORM passage_postings_of(changed);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION passage_postings_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM passage_postings WHERE passage_id IN (SELECT id FROM old_passages);
    RETURN NULL;
END $$;

CREATE FUNCTION passage_postings_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE passage_postings;
    RETURN NULL;
END $$;

CREATE TRIGGER passage_postings_insert AFTER INSERT ON memory_passages
    REFERENCING NEW TABLE AS new_passages
    FOR EACH STATEMENT EXECUTE FUNCTION passage_postings_inserted();
CREATE TRIGGER passage_postings_update AFTER UPDATE ON memory_passages
    REFERENCING OLD TABLE AS old_passages NEW TABLE AS new_passages
    FOR EACH STATEMENT EXECUTE FUNCTION passage_postings_updated();
CREATE TRIGGER passage_postings_delete AFTER DELETE ON memory_passages
    REFERENCING OLD TABLE AS old_passages
    FOR EACH STATEMENT EXECUTE FUNCTION passage_postings_deleted();
CREATE TRIGGER passage_postings_truncate AFTER TRUNCATE ON memory_passages
    FOR EACH STATEMENT EXECUTE FUNCTION passage_postings_truncated();

-- Whatever passages exist when this migration runs get their postings now.
SELECT passage_postings_of(ARRAY(SELECT id FROM memory_passages));

GRANT SELECT ON passage_postings, passage_postings_params TO memory_reader;
