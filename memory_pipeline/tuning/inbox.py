"""Constants that tune the inbox: articles, documents, video transcripts."""

# --- inbox: web articles, documents, video transcripts (memory_pipeline/inbox/) ---------------
# A file above this size is refused from its size alone (never opened): an absurd file costs a
# stat. Below it, plain text, Markdown and subtitles are read INBOX_READ_CHUNK_BYTES at a time and
# PDFs page by page, their passages written INBOX_WRITE_BATCH at a time, so memory stays bounded
# whatever the size (see `python -m memory_pipeline.bench.inbox_memory`).
INBOX_MAX_FILE_BYTES = 1024 * 1024 * 1024
# Plain text, Markdown and subtitles above this size are refused from their size too: such a file
# is a log or a dump, not something read, and would be tens of thousands of `source` memories to
# store, embed and link (a 20 MB text is 15,643 passages, 51 s to store on 2 busy cores before
# its embedding). `too_large`, recorded; split the file or keep the part you read.
INBOX_MAX_TEXT_BYTES = 32 * 1024 * 1024
# A document that cuts into more passages than this (a heading on every line, a PDF of dense
# pages) is stopped as soon as it passes the limit: its writes roll back, `too_many_passages`.
INBOX_MAX_DOCUMENT_PASSAGES = 40_000
# A long document's capture says how far it got every this many passages (run log, terminal).
INBOX_PROGRESS_PASSAGES = 2_000
# A step that reports every batch (embedding) shows the terminal of `memory-pipeline run` at most
# one progress line this often (memory_pipeline/progress.py); the run's log gets every line.
PROGRESS_TERMINAL_EVERY_S = 10.0
# HTML, MHTML and reStructuredText are parsed whole by their libraries (trafilatura/lxml, email,
# docutils take several times the file's size): above this size they are refused and recorded
# (`too_large_to_read_whole`). So is a yt-dlp info.json above it (read without it).
INBOX_MAX_WHOLE_FILE_BYTES = 50 * 1024 * 1024
INBOX_READ_CHUNK_BYTES = 1024 * 1024
# A PDF is read page by page, but pypdf keeps every page's entry and parsed objects (about 13 KB
# a page, measured: 65 MB peak for 2,000 pages, 42 MB for 200): a PDF with more pages is refused.
INBOX_MAX_PDF_PAGES = 20_000
# A section (the text under one heading, a PDF page) longer than this is handed to the chunker
# in pieces cut at paragraph breaks, so no derived structure holds more than about this much.
INBOX_SECTION_MAX_CHARS = 256 * 1024
# Passages are written to the database this many at a time (one round trip each way).
INBOX_WRITE_BATCH = 500
# A passage (one `source` memory) holds at most this many characters: a longer section is cut at
# paragraph boundaries (then sentences). The embedding stage cuts it again to its model's window.
INBOX_PASSAGE_MAX_CHARS = 1500
# A video transcript's cues are grouped into passages of about this many characters (and a new
# group starts at every chapter of yt-dlp's info.json), each quoted with its first cue's time.
INBOX_CUE_GROUP_CHARS = 900
# Fetching a URL (`memory-pipeline add`, `*.url` files): connect/read timeout, the whole
# request's deadline, the body's size cap, and how many redirects are followed.
INBOX_FETCH_TIMEOUT_S = 10.0
INBOX_FETCH_DEADLINE_S = 30.0
INBOX_FETCH_MAX_BYTES = 10 * 1024 * 1024
INBOX_FETCH_MAX_REDIRECTS = 5
# The inbox sensor looks at MEMORY_INBOX_DIR at most this often (one stat per file).
INBOX_SENSOR_INTERVAL_S = 30
