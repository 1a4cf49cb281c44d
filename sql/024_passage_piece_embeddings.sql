-- A vector per message of a passage (issue 11). A segment's passage quotes whole turns, and a
-- turn is two messages (a question and its answer, or two people's lines): the passage's
-- vector blends both, and a context pack that quotes the whole turn spends half its room on a
-- message that may say nothing about the task. Each message of a passage of two or more (a
-- "piece": `Speaker: text` of one side of a turn, exactly as the passage renders it) gets its
-- own vector in the active space, so a pack can rank and quote the message that matched
-- (serving/context_pack.py), and quote it without the other side. Only passages that quote
-- their turns whole have pieces (embedding/passages.py PIECES_WHERE).
--
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
