-- Forgetting and privacy (issue 18).
--
-- Tombstones: what `memory-pipeline forget` removed must never come back, yet capture re-reads
-- transcripts in place. A forgotten task is remembered by its identity (source, native id), a
-- forgotten turn by the sha256 of its stored (redacted) text; capture checks both before storing.
-- Neither holds forgotten text.
CREATE TABLE forget_audit (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    forgotten_at timestamptz NOT NULL DEFAULT now(),
    -- How the user selected (memory ids, task identities, project, time range, the sha256 of a
    -- query: never the query itself, which may be the very thing forgotten).
    selector     jsonb NOT NULL,
    counts       jsonb NOT NULL DEFAULT '{}',   -- table -> rows deleted (or unlinked)
    memories     integer NOT NULL DEFAULT 0,
    turns        integer NOT NULL DEFAULT 0,
    tasks        integer NOT NULL DEFAULT 0
);

CREATE INDEX forget_audit_forgotten_at_idx ON forget_audit (forgotten_at DESC);

CREATE TABLE forgotten_tasks (
    source       text NOT NULL,
    native_id    text NOT NULL,
    forgotten_at timestamptz NOT NULL DEFAULT now(),
    audit_id     uuid REFERENCES forget_audit(id) ON DELETE SET NULL,
    PRIMARY KEY (source, native_id)
);

CREATE TABLE forgotten_turns (
    content_sha256 text PRIMARY KEY,   -- agent_turns.content_sha256 of the forgotten turn
    forgotten_at   timestamptz NOT NULL DEFAULT now(),
    audit_id       uuid REFERENCES forget_audit(id) ON DELETE SET NULL
);

-- The private tier. A task is private when a MEMORY_PRIVATE rule matched it at capture; every
-- memory resting on a private task's turns is private, and so is a memory derived from a private
-- memory. Serving leaves private memories out unless the caller opts in.
ALTER TABLE captured_tasks ADD COLUMN private boolean NOT NULL DEFAULT false;
ALTER TABLE memories ADD COLUMN private boolean NOT NULL DEFAULT false;

CREATE INDEX memories_private_idx ON memories (id) WHERE private;

-- A memory linked to a turn of a private task becomes private (the semantic pass stores the
-- memory first, then its provenance, in one transaction).
CREATE FUNCTION memory_provenance_private() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memories SET private = true
    WHERE id = NEW.memory_id AND NOT private
      AND EXISTS (SELECT 1 FROM captured_tasks t WHERE t.id = NEW.task_id AND t.private);
    RETURN NULL;
END $$;

CREATE TRIGGER memory_provenance_private
    AFTER INSERT ON memory_provenance
    FOR EACH ROW EXECUTE FUNCTION memory_provenance_private();

-- A task's tier changed (its rule was added or removed): its memories follow. A memory that
-- also rests on another private task stays private.
CREATE FUNCTION captured_tasks_private() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memories m SET private = EXISTS (
        SELECT 1 FROM memory_provenance p JOIN captured_tasks t ON t.id = p.task_id
        WHERE p.memory_id = m.id AND t.private)
    WHERE m.id IN (SELECT memory_id FROM memory_provenance WHERE task_id = NEW.id);
    RETURN NULL;
END $$;

CREATE TRIGGER captured_tasks_private
    AFTER UPDATE OF private ON captured_tasks
    FOR EACH ROW WHEN (OLD.private IS DISTINCT FROM NEW.private)
    EXECUTE FUNCTION captured_tasks_private();

-- A memory derived from a private memory (a dream-cycle memory, a synthesis) is private too.
CREATE FUNCTION memory_relationships_private() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.relation_type = 'derived_from' THEN
        UPDATE memories SET private = true
        WHERE id = NEW.source_id AND NOT private
          AND EXISTS (SELECT 1 FROM memories s WHERE s.id = NEW.target_id AND s.private);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_relationships_private
    AFTER INSERT ON memory_relationships
    FOR EACH ROW EXECUTE FUNCTION memory_relationships_private();
