-- Express (issue 16): the daily briefing, its items, the memories each item rests on, and the
-- log of e-mail pushes. The pipeline writes these tables; serving (memory_brief) only reads them.

-- One briefing per day (the `briefing` asset's partition); composing a day again replaces it.
CREATE TABLE briefings (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    day         date NOT NULL UNIQUE,
    window_from timestamptz NOT NULL,   -- items are what happened in (window_from, window_to]
    window_to   timestamptz NOT NULL,
    editor      text NOT NULL,          -- 'offline' or 'ollama:<model>'
    filtered    jsonb NOT NULL DEFAULT '[]',  -- items muted by feedback: [{kind, topic, rule}]
    composed_at timestamptz NOT NULL DEFAULT now(),
    CHECK (window_from < window_to)
);

-- Items get short integer ids: `memory-pipeline brief --useful 12` is typed by hand.
CREATE TABLE briefing_items (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    briefing_id   uuid NOT NULL REFERENCES briefings(id) ON DELETE CASCADE,
    position      integer NOT NULL CHECK (position >= 1),
    kind          text NOT NULL CHECK (kind IN (
                      'synthesis', 'contradiction', 'superseded', 'resurfaced', 'digest',
                      'question')),
    topic         text NOT NULL,
    headline      text NOT NULL,
    detail        text NOT NULL DEFAULT '',
    score         double precision NOT NULL,
    cross_project boolean NOT NULL DEFAULT false,
    -- The same finding in two briefings has the same key (kind + its memories), so a push never
    -- sends it twice.
    item_key      text NOT NULL,
    UNIQUE (briefing_id, position),
    UNIQUE (briefing_id, item_key)
);

-- Every item links back to its memories. Forgetting a memory deletes the link (cascade) and,
-- through the trigger below, the whole item: its headline may quote the forgotten memory.
CREATE TABLE briefing_item_memories (
    item_id   bigint NOT NULL REFERENCES briefing_items(id) ON DELETE CASCADE,
    memory_id uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    role      text NOT NULL,            -- 'subject', 'older', 'newer', 'successor', 'evidence'
    ordinal   integer NOT NULL,
    PRIMARY KEY (item_id, memory_id)
);

CREATE INDEX briefing_item_memories_memory_idx ON briefing_item_memories (memory_id);

CREATE FUNCTION briefing_item_memory_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM briefing_items WHERE id = OLD.item_id;
    RETURN NULL;
END $$;

CREATE TRIGGER briefing_item_memory_gone
    AFTER DELETE ON briefing_item_memories
    FOR EACH ROW EXECUTE FUNCTION briefing_item_memory_gone();

-- One row per push attempt: sent or failed (with the one-line error), never silently lost.
CREATE TABLE express_pushes (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    briefing_id uuid REFERENCES briefings(id) ON DELETE SET NULL,
    status      text NOT NULL CHECK (status IN ('sent', 'failed')),
    reason      text NOT NULL,          -- why it was sent (should_push), or the error
    recipients  text NOT NULL,
    subject     text NOT NULL,
    item_count  integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The items a successful push carried: a key is here at most once, so nothing is sent twice.
CREATE TABLE express_pushed_items (
    item_key  text PRIMARY KEY,
    push_id   uuid NOT NULL REFERENCES express_pushes(id) ON DELETE CASCADE,
    kind      text NOT NULL
);

GRANT SELECT ON briefings, briefing_items, briefing_item_memories, express_pushes
TO memory_reader;
