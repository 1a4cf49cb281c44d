-- The inbox (issue 33): web articles, documents and video transcripts as searchable sources.
--
-- A document is NOT a captured task. A task grows monotonically and its turns are immutable
-- (sql/007), while an edited document (same URL or path, new content hash) replaces its text in
-- place and re-derives its passages, memories and edges (seed 003's rule for documents). So each
-- document is one row here, keyed by its locator, and each of its passages (a section, a page, a
-- group of cues) is one `source` memory (memories.type 'source', source_type = the kind). The
-- later stages need nothing new: embedding cuts and embeds those memories, relationship discovery
-- links them to agent memories, search and packs rank and quote them.
CREATE TABLE inbox_sources (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind           text NOT NULL CHECK (kind IN ('article', 'document', 'video')),
    -- Identity: the canonical URL when the document has one (a page's canonical link / og:url,
    -- a sidecar, a fetched URL, a video's webpage_url), else the file's path.
    locator        text NOT NULL UNIQUE,
    url            text,
    path           text,            -- the inbox file read (NULL for a URL fetched by `add`)
    title          text NOT NULL,   -- redacted
    author         text,            -- redacted
    site           text,
    published      text,            -- the date the source gives (ISO when parsable)
    details        jsonb NOT NULL DEFAULT '{}',  -- format, pages, channel, chapters, duration
    -- sha256 of the extracted text and title before redaction: the same content is not stored
    -- again; a different one is a revision.
    content_sha256 text NOT NULL,
    size           bigint,          -- the file's size and mtime when read (change detection)
    mtime_ns       bigint,
    passages       integer NOT NULL DEFAULT 0,
    redactions     integer NOT NULL DEFAULT 0,
    private        boolean NOT NULL DEFAULT false,   -- a MEMORY_PRIVATE rule matched it
    revisions      integer NOT NULL DEFAULT 1,
    missing_since  timestamptz,     -- its file was deleted: kept (searchable) until forgotten
    partition_day  date NOT NULL,   -- the day of its current revision (its memories' partition)
    first_seen_at  timestamptz NOT NULL DEFAULT now(),
    revised_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX inbox_sources_path_idx ON inbox_sources (path);

-- Each passage of a document and the memory that holds it; rewritten in place by ordinal when the
-- document is revised (the memory keeps its id: its vectors and edges are re-derived).
CREATE TABLE inbox_passages (
    source_id uuid NOT NULL REFERENCES inbox_sources(id) ON DELETE CASCADE,
    ordinal   integer NOT NULL CHECK (ordinal >= 0),
    position  text NOT NULL,        -- where in the document: '§ Heading', 'p. 3', '12:31'
    memory_id uuid NOT NULL UNIQUE REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (source_id, ordinal)
);

-- A forgotten document's memories go with it (the memory cascades its passage row; the last
-- passage gone leaves the source row, which `inbox forget` deletes with its tombstone).
GRANT SELECT ON inbox_sources, inbox_passages TO memory_reader;
