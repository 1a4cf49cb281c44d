-- Typed edges between memories (seed 000). An edge that stops holding gets expired_at, never a
-- delete, so the history of what was believed stays queryable.
CREATE TABLE memory_relationships (
    source_id     uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    target_id     uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    relation_type text NOT NULL CHECK (relation_type IN (
                      'supports', 'contradicts', 'extends', 'inspires', 'blocks', 'requires',
                      'derived_from', 'related_to', 'superseded_by')),
    note          text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expired_at    timestamptz,
    PRIMARY KEY (source_id, target_id, relation_type),
    CHECK (source_id <> target_id)
);

CREATE INDEX memory_relationships_target_idx ON memory_relationships (target_id, relation_type);
