-- A vector per message of a passage (issue 11). A segment's passage quotes whole turns, and a
-- turn is two messages (a question and its answer, or two people's lines): the passage's
-- vector blends both, and a context pack that quotes the whole turn spends half its room on a
-- message that may say nothing about the task. Each message of a passage that quotes its turns
-- whole (a "piece": `Speaker: text` of one side of a turn, exactly as the passage renders it)
-- gets its own vector in the active space, so a pack can rank the message that matched and
-- quote it without the other side (serving/context_pack.py; embedding/passages.py PIECES_FROM).
--
-- The cutter marks the passages made of whole turns (not a cut of a long one); passages cut
-- before this migration are marked here, by comparing their text with their turns rendered as
-- the cutter renders them (passages.turn_text, turns apart by a blank line).
ALTER TABLE memory_passages ADD COLUMN whole_turns boolean NOT NULL DEFAULT false;

UPDATE memory_passages p SET whole_turns = true
FROM memories m
WHERE m.id = p.memory_id AND m.type = 'segment' AND cardinality(p.turn_ids) > 0
  AND p.text = (
    SELECT string_agg(coalesce(t.prompt_speaker, 'User') || ': ' || t.prompt
                      || CASE WHEN t.outcome <> ''
                         THEN E'\n' || coalesce(t.outcome_speaker, 'Agent') || ': ' || t.outcome
                         ELSE '' END, E'\n\n' ORDER BY w.n)
    FROM unnest(p.turn_ids) WITH ORDINALITY AS w(turn_id, n)
    JOIN agent_turns t ON t.id = w.turn_id);

-- The embedding asset writes these rows after the passages' own (embedding/store.py); a
-- passage's pieces go with it (ON DELETE CASCADE) and a changed piece is re-embedded
-- (content_sha256). Not indexed for search: a pack reads the pieces of the passages it holds.
CREATE TABLE passage_piece_embeddings (
    passage_id     uuid NOT NULL REFERENCES memory_passages(id) ON DELETE CASCADE,
    piece          integer NOT NULL CHECK (piece >= 0),  -- 2 * (turn's place in the passage) + side
    space          text NOT NULL REFERENCES embedding_spaces(name),
    embedding      vector NOT NULL,
    content_sha256 text NOT NULL,
    embedded_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (passage_id, piece, space),
    CHECK (vector_dims(embedding) = (substring(space FROM ':([0-9]+)$'))::integer)
);

GRANT SELECT ON passage_piece_embeddings TO memory_reader;
