-- Entities (issue 34): nodes of a closed type set, identity strongest first, and mentions that
-- wire memories and turns to them (seed 003: nodes, identifiers, aliases, mentions).
--
-- The dormant table of seed 000 becomes the node table. Its (category, name) key goes: two
-- people called Victor are two nodes; what makes a node one thing is its identifiers.
ALTER TABLE entities DROP CONSTRAINT entities_category_name_key;
ALTER TABLE entities ADD CONSTRAINT entities_category_check CHECK (category IN (
    'person', 'project', 'repository', 'package', 'file', 'host', 'tool', 'place',
    'organisation'));
ALTER TABLE entities ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();

-- Deterministic keys (repo:github.com/o/r, package:x, path:src/a.py, host:h, email:a@b,
-- handle:x, person:<name>): two memories asserting the same identifier ARE the same node.
CREATE TABLE entity_identifiers (
    identifier text PRIMARY KEY,
    entity_id  uuid NOT NULL REFERENCES entities(id) ON DELETE CASCADE
);
CREATE INDEX entity_identifiers_entity_idx ON entity_identifiers (entity_id);

-- Names and nicknames, normalised (lower case, single spaces). An alias of two nodes is
-- ambiguous: it never links a mention by itself, and serving says so.
CREATE TABLE entity_aliases (
    alias     text NOT NULL,
    entity_id uuid NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (alias, entity_id)
);
CREATE INDEX entity_aliases_entity_idx ON entity_aliases (entity_id);

-- A mention: which extractor linked it (identifier, speaker, alias, pattern, project, ollama),
-- with what confidence, and the text it matched.
ALTER TABLE memory_entities ADD COLUMN extractor text NOT NULL DEFAULT 'manual';
ALTER TABLE memory_entities ADD COLUMN confidence double precision NOT NULL DEFAULT 1.0
    CHECK (confidence BETWEEN 0 AND 1);
ALTER TABLE memory_entities ADD COLUMN surface text;

CREATE TABLE turn_entities (
    turn_id    uuid NOT NULL REFERENCES agent_turns(id) ON DELETE CASCADE,
    entity_id  uuid NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    extractor  text NOT NULL,
    confidence double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    surface    text,
    PRIMARY KEY (turn_id, entity_id)
);
CREATE INDEX turn_entities_entity_idx ON turn_entities (entity_id);

-- An alias found in a memory that names more than one node: kept, never linked.
CREATE TABLE entity_ambiguities (
    memory_id  uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    alias      text NOT NULL,
    candidates uuid[] NOT NULL,
    PRIMARY KEY (memory_id, alias)
);

GRANT SELECT ON entity_identifiers, entity_aliases, turn_entities, entity_ambiguities
TO memory_reader;

-- Which memories a model backend already read (by the text it read), so a re-run asks the
-- model nothing and keeps its accepted mentions: the stage stays idempotent with Ollama too.
CREATE TABLE entity_scans (
    memory_id      uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    backend        text NOT NULL,
    content_sha256 text NOT NULL,
    scanned_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, backend)
);
