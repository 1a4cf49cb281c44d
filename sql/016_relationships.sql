-- Relationship discovery (memory_pipeline/relationships/). Edges keep the reading
-- "source <type> target"; an edge that stops holding gets expired_at, never a delete.
--
-- What discovery records on each edge it writes (NULL on edges written by hand or by other
-- stages, e.g. the dream cycle's derived_from):
--   similarity  cosine of the two memories' vectors in the serving space when the edge was found
--   evidence    the words that justify the edge (a reversal cue, the judge's quote)
--   backend     who decided: 'structural', 'vector', 'offline-rules', 'ollama:<model>'
--   confidence  the judge's confidence in [0, 1] (1 for structural and rule edges)
-- A new type, duplicate_of (the later near-duplicate -> the memory kept for it), joins the CHECK.
ALTER TABLE memory_relationships
    ADD COLUMN similarity double precision,
    ADD COLUMN evidence   text,
    ADD COLUMN backend    text,
    ADD COLUMN confidence double precision CHECK (confidence BETWEEN 0 AND 1);

ALTER TABLE memory_relationships DROP CONSTRAINT memory_relationships_relation_type_check;
ALTER TABLE memory_relationships ADD CONSTRAINT memory_relationships_relation_type_check
    CHECK (relation_type IN (
        'supports', 'contradicts', 'extends', 'inspires', 'blocks', 'requires',
        'derived_from', 'related_to', 'superseded_by', 'duplicate_of'));

-- Near-duplicates are corroboration, not clutter: the later copy of a statement points at the
-- memory kept for it (duplicate_of, also a live duplicate_of edge), search leaves the copies out,
-- and the kept memory counts how many times the statement was observed (itself plus its copies).
-- Every copy keeps its own provenance, reachable from the kept memory through the edge. If the
-- kept memory is deleted, its copies come back (SET NULL) until the next discovery run re-links.
ALTER TABLE memories
    ADD COLUMN duplicate_of      uuid REFERENCES memories(id) ON DELETE SET NULL,
    ADD COLUMN observation_count integer NOT NULL DEFAULT 1 CHECK (observation_count >= 1),
    ADD CONSTRAINT memories_not_own_duplicate CHECK (duplicate_of <> id);

CREATE INDEX memories_duplicate_of_idx ON memories (duplicate_of) WHERE duplicate_of IS NOT NULL;
CREATE INDEX memory_relationships_live_type_idx ON memory_relationships (relation_type, target_id)
    WHERE expired_at IS NULL;

-- Which memories discovery has looked at, and for which text and judge: a re-run over the same
-- day skips a memory whose text, judge and serving space are unchanged, so it adds nothing and
-- calls no model again.
CREATE TABLE relationship_scans (
    memory_id      uuid PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    content_sha256 text NOT NULL,
    space          text,            -- the serving space compared in (NULL: none served yet)
    backend        text NOT NULL,   -- the judge: offline-rules or ollama:<model>
    scanned_at     timestamptz NOT NULL DEFAULT now()
);

GRANT SELECT ON relationship_scans TO memory_reader;
