"""Constants that tune capture: agent transcripts, redaction, the sensor."""

# --- capture ------------------------------------------------------------------------------
# A task without a native name is titled by its first prompt's first line, cut to this length.
DERIVED_TITLE_MAX_CHARS = 80
# Redaction (capture/redact/). A literal assigned to a secret name (`DB_PASSWORD=`,
# `"client_secret":`, `--password`) is redacted from this length on; one assigned to any other
# key name (`PRIMARY_KEY=`, `STRIPE_KEY=`) only when it looks random: at least this long, letters
# and digits, with an unbroken alphanumeric run of at least REDACT_RANDOM_MIN_RUN.
REDACT_MIN_SECRET_CHARS = 6
REDACT_RANDOM_MIN_CHARS = 16
REDACT_RANDOM_MIN_RUN = 12
# Redaction layers (capture/redact/).
# A value on a command line whose flag or position says it is a password (`mysql -pPW`,
# `sshpass -p PW`, `docker login -p PW`, `.pgpass`, a Kubernetes Secret's data) is redacted from
# this length on: the context is sure, so shorter ones than REDACT_MIN_SECRET_CHARS count.
REDACT_CLI_MIN_CHARS = 4
# Layer (c), a random-looking token with no context: at least this many letters and digits, all
# three of upper case, lower case and digits, a Shannon entropy of at least
# REDACT_TOKEN_MIN_ENTROPY bits per character, and words no longer than
# REDACT_TOKEN_MAX_WORD_MEAN characters on average (split at case and digit changes: a random
# 32-character base62 token averages 1.9, `AbstractSingletonProxyFactoryBean` 6.6,
# `getUserProfileByIdV2Cache` 3.1). 99% of random 24-character base62 tokens are caught, nearly
# all from 32 characters on.
REDACT_TOKEN_MIN_CHARS = 24
REDACT_TOKEN_MIN_ENTROPY = 3.5
REDACT_TOKEN_MAX_WORD_MEAN = 3.0
# The capture store (capture/store.py) writes native context and evidence as JSONB: values nested
# deeper than this are stored as a placeholder string, so no input can exhaust the stack there.
CAPTURE_JSON_MAX_DEPTH = 32
# A native id or path longer than this is shortened (head + sha256) where it is only a key for a
# recorded skip: a btree index entry holds about 2,700 bytes, and a skip must always be storable.
CAPTURE_SKIP_KEY_MAX_CHARS = 500
# How much of a line the reader skipped a connector sees (JsonlRead.on_skip): enough for the
# fields a record starts with; the chat import finds a damaged line's `task_id` in it.
CAPTURE_SKIPPED_HEAD_BYTES = 4096
# The chat import (capture/chat_import.py) streams: a conversation is stored as soon as its last
# line is read, and a conversation longer than this many characters of turn text is stored in
# batches of about this size (store.py aligns a batch by its turns' ordinals), so capturing one
# 500 MB file holds a few batches in memory, not the file.
CHAT_IMPORT_BATCH_CHARS = 4_000_000
# Codex (capture/codex/): a fork's copy of its parent's rollout is written in one burst, lines
# milliseconds apart; a larger gap inside the copied region means the fork's own activity began.
CODEX_COPY_BURST_GAP_SECONDS = 2.0
# Kiro CLI and Kiro IDE (capture/kiro_cli/, capture/kiro_ide/). A document read whole (a SQLite
# row's conversation JSON, a v2 session's `.json` sidecar, an IDE session or `.chat` file) larger
# than this is skipped and recorded (`too_large`), never loaded: no real one comes near it.
KIRO_DOCUMENT_MAX_BYTES = 64 * 1024 * 1024
# How long a read of Kiro CLI's `data.sqlite3` waits for a writer's lock before it is recorded as
# `store_busy` and retried on the next look (the agent is never blocked: the read is read-only).
KIRO_SQLITE_TIMEOUT_S = 2.0
# The prompt-recall history (`~/.kiro/.cli_bash_history`) shows what a person typed into the
# chat REPL. A conversation counts as typed into when one of its prompts equals a history entry
# at least this long (a bare "yes" typed elsewhere proves nothing); only the file's last
# KIRO_HISTORY_MAX_BYTES are read.
KIRO_TYPED_PROMPT_MIN_CHARS = 8
KIRO_HISTORY_MAX_BYTES = 16 * 1024 * 1024
# Agent transcript times (Codex, Claude Code) outside these years (inclusive) are treated as
# missing and recorded as `bad_timestamp`: both agents wrote their first transcripts in 2025, and a
# year-1 or year-9999 value (or one past what datetime and PostgreSQL hold) would put a task in a
# partition that never runs.
AGENT_PLAUSIBLE_YEARS = (2000, 2199)
# Daily partitions (memory_pipeline/partitions.py) cover the most recent this many days when
# MEMORY_PARTITION_DAYS sets it; 0 (the default): from the home's first captured day. Older task
# days belong to the first partition either way.
PARTITION_DAYS = 0
# OpenCode (capture/opencode/): one message or part JSON file larger than this is skipped and
# recorded (`record_too_large`); OpenCode writes one small file per message and per part.
OPENCODE_JSON_MAX_BYTES = 16 * 1024 * 1024
# Aider (capture/aider/): how deep MEMORY_AIDER_ROOTS are searched for `.aider.chat.history.md`,
# and the directories never entered (dependencies, caches, VCS internals).
AIDER_ROOT_MAX_DEPTH = 4
AIDER_SKIP_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".cache", "target", "dist", "build"}
)
# A chat history is read up to this many bytes (the rest is recorded as `file_too_large`).
AIDER_HISTORY_MAX_BYTES = 256 * 1024 * 1024
# Cursor (capture/cursor/): how long a read of a `state.vscdb` waits for a lock. Cursor keeps it in
# WAL mode, where a reader never waits; a store in rollback-journal mode whose writer holds the
# lock longer is read on the next look (`changed_while_reading`), never waited on by the run.
CURSOR_SQLITE_TIMEOUT_S = 2.0
# A Cursor agent transcript (`agent-transcripts/*.jsonl`) larger than this is skipped, recorded.
CURSOR_TRANSCRIPT_MAX_BYTES = 256 * 1024 * 1024
# Gemini CLI (capture/gemini_cli/): a legacy session document (`session-*.json`, read whole) larger
# than this is skipped, recorded; so is a JSONL session (`session-*.jsonl`, streamed) larger than
# GEMINI_JSONL_MAX_BYTES. `logs.json` (the typed prompts, ownership evidence) is read up to
# GEMINI_LOGS_MAX_BYTES (a larger one counts as unreadable: ownership unknown).
GEMINI_DOCUMENT_MAX_BYTES = 64 * 1024 * 1024
GEMINI_JSONL_MAX_BYTES = 512 * 1024 * 1024
GEMINI_LOGS_MAX_BYTES = 32 * 1024 * 1024

# The transcript sensor (capture/definitions.py) looks at the source roots at most this often.
# A look over unchanged files costs one stat each and one query. With
# MEMORY_SEMANTIC_QUIET_MINUTES=0 a new turn must be searchable within 60 s: up to this long
# waiting for the tick, then the run queue, the run's start and its steps (see README: freshness).
TRANSCRIPT_SENSOR_INTERVAL_S = 15
