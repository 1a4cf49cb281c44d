-- Capture: native agent tasks and their complete turns, exactly as the user's sources hold them.
-- Identity is namespaced by integration: (source, native_id) never collides across sources.
CREATE TABLE captured_tasks (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source                text NOT NULL CHECK (source IN ('codex', 'claude_code', 'chat_import')),
    native_id             text NOT NULL,
    title                 text,
    title_source          text,          -- which native field the title came from
    title_observed_at     timestamptz,   -- when that source observed it
    title_updated_at      timestamptz,   -- when capture last changed it (a rename)
    started_at            timestamptz NOT NULL,
    partition_day         date NOT NULL, -- UTC day of started_at: the task's Dagster partition
    native_context        jsonb NOT NULL DEFAULT '{}',  -- cwd, branch, repository: provenance only
    source_path           text NOT NULL,
    ownership_reason      text NOT NULL, -- only user-owned tasks are captured; see capture_skips
    ownership_evidence    jsonb NOT NULL DEFAULT '{}',
    turn_count            integer NOT NULL DEFAULT 0,
    last_turn_appended_at timestamptz,   -- the inactivity clock; a rename never moves it
    captured_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source, native_id)
);

CREATE INDEX captured_tasks_partition_day_idx ON captured_tasks (partition_day);

CREATE TABLE agent_turns (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    task_id            uuid NOT NULL REFERENCES captured_tasks(id) ON DELETE CASCADE,
    ordinal            integer NOT NULL CHECK (ordinal >= 0),
    native_turn_id     text,
    prompt             text NOT NULL,   -- redacted before storage
    outcome            text NOT NULL,   -- the visible final answer, redacted before storage
    prompt_speaker     text,
    outcome_speaker    text,
    started_at         timestamptz,
    completed_at       timestamptz,
    native_message_ids text[] NOT NULL DEFAULT '{}',
    content_sha256     text NOT NULL,   -- of the stored (redacted) prompt and outcome
    redactions         integer NOT NULL DEFAULT 0,
    captured_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (task_id, ordinal)
);

-- Stored turns are immutable: a refresh only appends. Changed sources are drift, not updates.
CREATE FUNCTION agent_turns_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'agent turns are immutable (task %, ordinal %)', OLD.task_id, OLD.ordinal;
END $$;

CREATE TRIGGER agent_turns_immutable
    BEFORE UPDATE ON agent_turns FOR EACH ROW EXECUTE FUNCTION agent_turns_immutable();

-- Tasks that were seen but not captured (delegated, unknown ownership) and parts of files that
-- were skipped (bad lines, unreadable files), each with its reason and the native evidence.
CREATE TABLE capture_skips (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind          text NOT NULL CHECK (kind IN ('task', 'file')),
    source        text NOT NULL,
    native_id     text NOT NULL DEFAULT '',   -- '' for file-level skips
    path          text NOT NULL,
    line          integer NOT NULL DEFAULT 0, -- 0 when the skip is not one line
    reason        text NOT NULL,
    detail        text NOT NULL DEFAULT '',
    ownership     text,
    evidence      jsonb NOT NULL DEFAULT '{}',
    partition_day date,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (kind, source, native_id, path, line, reason)
);

CREATE INDEX capture_skips_partition_day_idx ON capture_skips (partition_day);

-- Which source file holds which task days (a cache refreshed when size or mtime change), and
-- the size and mtime it had when a capture last stored all of its tasks: the hourly catch-up
-- compares those with the file on disk.
CREATE TABLE source_files (
    path              text PRIMARY KEY,
    source            text NOT NULL,
    size              bigint NOT NULL,
    mtime_ns          bigint NOT NULL,
    task_days         date[] NOT NULL DEFAULT '{}',
    captured_size     bigint,
    captured_mtime_ns bigint,
    scanned_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX source_files_task_days_idx ON source_files USING gin (task_days);
