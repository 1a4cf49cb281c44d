-- Change tracking for the keyword index: a tantivy index of passages that lives on disk under
-- MEMORY_HOME, derived from memory_passages and rebuilt by the pipeline
-- (memory_pipeline/embedding/keyword_index.py; issue 12). PostgreSQL stays the store of record:
-- what is here only tells the refresher what changed and tells serving whether the index on
-- disk is current, so search never returns stale results (it uses sql/021's postings instead).
--
-- seq: a passage's number in the index. A new passage gets one, and so does a passage whose
-- full-text entry changes (its old number is then removed from the index, the new one added).
CREATE SEQUENCE memory_passages_seq;

-- A volatile default fills existing rows without firing sql/021's update trigger.
ALTER TABLE memory_passages
    ADD COLUMN seq bigint NOT NULL DEFAULT nextval('memory_passages_seq');
ALTER SEQUENCE memory_passages_seq OWNED BY memory_passages.seq;
CREATE UNIQUE INDEX memory_passages_seq_idx ON memory_passages (seq);

-- Numbers to add to the index (new or renumbered passages), and numbers to delete from it
-- (deleted or renumbered passages). The refresher empties them of what it applied. A pending
-- row is visible exactly when its passage is committed, so with neither pending rows nor
-- removals the index holds exactly the committed passages, whatever order transactions
-- committed in (sequence order is not commit order, which is why serving does not compare
-- max(seq)).
CREATE TABLE passage_index_pending (seq bigint PRIMARY KEY);
CREATE TABLE passage_index_removals (seq bigint PRIMARY KEY);

-- This database's identity: an index directory is named by it (and by the database name, as a
-- CREATE DATABASE ... TEMPLATE copy shares the token), so it is never used for another database.
-- build: the directory of the current full build; generation: bumped by every refresh that
-- changed the index, also written into that directory, so serving uses only an index whose
-- generation PostgreSQL confirms (an older directory after a restore is not used).
CREATE TABLE search_index_identity (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    token      uuid NOT NULL DEFAULT gen_random_uuid(),
    build      text,
    generation bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO search_index_identity DEFAULT VALUES;

CREATE FUNCTION passage_seq_renumber() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.search_vector IS DISTINCT FROM OLD.search_vector THEN
        NEW.seq := nextval('memory_passages_seq');
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION passage_index_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO passage_index_pending (seq) SELECT seq FROM new_passages ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION passage_index_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO passage_index_removals (seq)
    SELECT o.seq FROM old_passages o JOIN new_passages n ON n.id = o.id WHERE n.seq <> o.seq
    ON CONFLICT DO NOTHING;
    INSERT INTO passage_index_pending (seq)
    SELECT n.seq FROM old_passages o JOIN new_passages n ON n.id = o.id WHERE n.seq <> o.seq
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION passage_index_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO passage_index_removals (seq) SELECT seq FROM old_passages ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER passage_seq_renumber BEFORE UPDATE ON memory_passages
    FOR EACH ROW EXECUTE FUNCTION passage_seq_renumber();
CREATE TRIGGER passage_index_insert AFTER INSERT ON memory_passages
    REFERENCING NEW TABLE AS new_passages
    FOR EACH STATEMENT EXECUTE FUNCTION passage_index_inserted();
CREATE TRIGGER passage_index_update AFTER UPDATE ON memory_passages
    REFERENCING OLD TABLE AS old_passages NEW TABLE AS new_passages
    FOR EACH STATEMENT EXECUTE FUNCTION passage_index_updated();
CREATE TRIGGER passage_index_delete AFTER DELETE ON memory_passages
    REFERENCING OLD TABLE AS old_passages
    FOR EACH STATEMENT EXECUTE FUNCTION passage_index_deleted();
-- After a TRUNCATE the index's document count no longer matches and the refresher rebuilds it.

-- The index also holds each passage's memory's type, class, project, source, tags and creation
-- time, so a search filter narrows inside it (PostgreSQL still applies every filter). When one
-- of them changes, the memory's passages are renumbered: out of the index until the refresh.
CREATE FUNCTION passage_index_memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_passages SET seq = nextval('memory_passages_seq') WHERE memory_id = NEW.id;
    RETURN NULL;
END $$;

CREATE TRIGGER passage_index_memory_update
    AFTER UPDATE OF type, mem_class, project, source_type, tags, created_at ON memories
    FOR EACH ROW WHEN ((OLD.type, OLD.mem_class, OLD.project, OLD.source_type, OLD.tags,
                        OLD.created_at)
                       IS DISTINCT FROM (NEW.type, NEW.mem_class, NEW.project, NEW.source_type,
                                         NEW.tags, NEW.created_at))
    EXECUTE FUNCTION passage_index_memory_changed();

GRANT SELECT ON passage_index_pending, passage_index_removals, search_index_identity
    TO memory_reader;
