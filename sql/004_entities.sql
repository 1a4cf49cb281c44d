-- Entity knowledge graph (seed 000; dormant there, kept for the roadmap). Entity vectors, when
-- they come, follow the memory_embeddings design (one row per space) instead of a fixed column.
CREATE TABLE entities (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    category    text NOT NULL,     -- Person, Product, CreativeWork, DefinedTerm, Organization, ...
    name        text NOT NULL,
    summary     text,
    properties  jsonb NOT NULL DEFAULT '{}',
    source_type text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (category, name)
);

CREATE TABLE entity_edges (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    from_entity uuid NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    to_entity   uuid NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    relation    text NOT NULL,     -- mentions, about, relatedTo, isPartOf, worksFor, ...
    weight      real NOT NULL DEFAULT 1.0,
    properties  jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (from_entity, to_entity, relation)
);

CREATE TABLE memory_entities (
    memory_id uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    entity_id uuid NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    relation  text NOT NULL DEFAULT 'mentions',
    PRIMARY KEY (memory_id, entity_id, relation)
);

CREATE INDEX memory_entities_entity_idx ON memory_entities (entity_id);
